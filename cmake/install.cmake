# cmake/install.cmake — installing loom like any C library: the public headers,
# the static library and a shared one (versioned SONAME, only loom_* symbols
# exported), the `loom` tool, a pkg-config file and a CMake package
# (find_package(loom CONFIG) -> loom::loom, loom::loom_static; components per
# backend); `cpack -G DEB` makes a Debian package of the same files.
include(GNUInstallDirs)

# The shared library is the static archive linked whole: the same objects,
# compiled once (hence position-independent code for the archive too).
set_target_properties(loom PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(loom_shared SHARED ${PROJECT_SOURCE_DIR}/cmake/empty.c)
target_link_libraries(loom_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,loom>")
set_target_properties(loom_shared PROPERTIES OUTPUT_NAME loom
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/loom.map)
target_link_options(loom_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/loom.map -Wl,--no-undefined)
target_include_directories(loom_shared INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)

# What a static link needs besides libloom.a, as linker flags (pkg-config's
# Libs.private) and as a CMake list (loom::loom_static): the libraries the
# loom target links, with imported targets resolved to their files.
function(loom_flatten_libs item out_flags out_list)
  set(flags "")
  set(paths "")
  if(TARGET ${item})
    get_target_property(type ${item} TYPE)
    if(type STREQUAL "OBJECT_LIBRARY")
      # objects inside libloom.a; their own libraries are the loom target's too
    elseif(type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(sub ${item} INTERFACE_LINK_LIBRARIES)
      foreach(s ${sub})
        loom_flatten_libs(${s} f p)
        list(APPEND flags ${f})
        list(APPEND paths ${p})
      endforeach()
    else()
      get_target_property(loc ${item} IMPORTED_LOCATION)
      if(NOT loc)
        get_target_property(loc ${item} IMPORTED_LOCATION_RELEASE)
      endif()
      if(loc)
        loom_flatten_libs(${loc} f p)
        list(APPEND flags ${f})
        list(APPEND paths ${p})
      endif()
      get_target_property(sub ${item} INTERFACE_LINK_LIBRARIES)
      if(sub)
        foreach(s ${sub})
          loom_flatten_libs(${s} f p)
          list(APPEND flags ${f})
          list(APPEND paths ${p})
        endforeach()
      endif()
    endif()
  elseif(item MATCHES "^/")
    get_filename_component(dir ${item} DIRECTORY)
    get_filename_component(name ${item} NAME)
    string(REGEX REPLACE "^lib(.*)\\.(so[.0-9]*|a)$" "\\1" name "${name}")
    if(NOT dir MATCHES "^/(usr/)?lib(64)?(/x86_64-linux-gnu|/aarch64-linux-gnu)?$")
      list(APPEND flags "-L${dir}")
    endif()
    list(APPEND flags "-l${name}")
    list(APPEND paths ${item})
  elseif(item MATCHES "^-")
    list(APPEND flags ${item})
    list(APPEND paths ${item})
  elseif(item AND NOT item MATCHES "^\\$<")
    list(APPEND flags "-l${item}")
    list(APPEND paths ${item})
  endif()
  set(${out_flags} ${flags} PARENT_SCOPE)
  set(${out_list} ${paths} PARENT_SCOPE)
endfunction()

get_target_property(_loom_links loom LINK_LIBRARIES)
set(_loom_flags "")
set(_loom_list "")
foreach(l ${_loom_links})
  loom_flatten_libs(${l} f p)
  list(APPEND _loom_flags ${f})
  list(APPEND _loom_list ${p})
endforeach()
list(REMOVE_DUPLICATES _loom_list)
# keep the last of repeated flags: a static link resolves left to right
list(REVERSE _loom_flags)
list(REMOVE_DUPLICATES _loom_flags)
list(REVERSE _loom_flags)
string(REPLACE ";" " " LOOM_PC_LIBS_PRIVATE "${_loom_flags}")
set(LOOM_CMAKE_LIBS_PRIVATE "${_loom_list}")

# the backends built in: the components of the CMake package
get_target_property(_loom_defs loom COMPILE_DEFINITIONS)
set(LOOM_BACKENDS_BUILT cpu)
foreach(b VULKAN OPENCL CUDA)
  if("LOOM_HAVE_${b}=1" IN_LIST _loom_defs)
    string(TOLOWER ${b} lb)
    list(APPEND LOOM_BACKENDS_BUILT ${lb})
  endif()
endforeach()
if(TARGET loom_cuda)
  list(APPEND LOOM_BACKENDS_BUILT cuda)
  list(REMOVE_DUPLICATES LOOM_BACKENDS_BUILT)
endif()

# relative paths from the installed files back to the prefix, so an installed
# tree can be moved (cmake --install --prefix, make install PREFIX=...)
set(LOOM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/loom)
file(RELATIVE_PATH LOOM_PC_PREFIX_REL /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
file(RELATIVE_PATH LOOM_CMAKE_PREFIX_REL /p/${LOOM_CMAKE_DIR} /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/loom.pc.in ${PROJECT_BINARY_DIR}/loom.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/loomConfig.cmake.in ${PROJECT_BINARY_DIR}/loomConfig.cmake @ONLY)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/loomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)

install(TARGETS loom loom_shared loom_cli
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/loom.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES docs/loom.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_BINARY_DIR}/loomConfig.cmake ${PROJECT_BINARY_DIR}/loomConfigVersion.cmake
  DESTINATION ${LOOM_CMAKE_DIR})

# cpack -G DEB (run in the build folder): a Debian package of the same files.
set(CPACK_PACKAGE_NAME loom)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "loom developers <loom@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "train neural networks on any GPU (library, headers and the loom tool)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# Depends: what libloom.so and bin/loom record as NEEDED (dpkg-shlibdeps):
# libc, libstdc++, zlib, OpenBLAS, the JPEG libraries; never a GPU API. The
# backends open their libraries at run time (Vulkan: libvulkan.so.1; OpenCL:
# libOpenCL.so.1; CUDA: the static runtime opens libcuda.so.1, cuBLAS is
# opened by loom), so those are Recommends (the ICD loaders) and Suggests
# (drivers, cuBLAS): without them the backend reports what is missing.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(_loom_recommends "")
set(_loom_suggests "")
if(LOOM_BACKENDS_BUILT MATCHES "vulkan")
  list(APPEND _loom_recommends "libvulkan1")
  list(APPEND _loom_suggests "mesa-vulkan-drivers | vulkan-icd")
endif()
if(LOOM_BACKENDS_BUILT MATCHES "opencl")
  list(APPEND _loom_recommends "ocl-icd-libopencl1 | libopencl1")
  list(APPEND _loom_suggests "pocl-opencl-icd | opencl-icd")
endif()
if(LOOM_BACKENDS_BUILT MATCHES "cuda")
  list(APPEND _loom_suggests "libcublas-${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
endif()
string(REPLACE ";" ", " CPACK_DEBIAN_PACKAGE_RECOMMENDS "${_loom_recommends}")
string(REPLACE ";" ", " CPACK_DEBIAN_PACKAGE_SUGGESTS "${_loom_suggests}")
include(CPack)
