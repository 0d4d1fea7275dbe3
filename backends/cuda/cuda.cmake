# backends/cuda/cuda.cmake — the CUDA backend (backends/cuda), included from
# the top-level CMakeLists.txt after the `loom` target exists.
#
# LOOM_CUDA=AUTO builds it when nvcc and the toolkit (cudart, cuBLAS) are
# found, ON requires them, OFF skips it. nvcc is looked up on PATH, then in
# $CUDA_PATH/bin, /usr/local/cuda/bin and /opt/cuda/bin; CMAKE_CUDA_COMPILER
# set by the user wins. CMAKE_CUDA_ARCHITECTURES defaults to Ampere and
# Hopper machine code plus Hopper PTX (80-real;90-real;90-virtual), so a newer
# GPU JIT-compiles the PTX.
#
# The .cu files (host and device code, C++ compiled by nvcc) go in an OBJECT
# library whose compile options are its own: the top level's
# add_compile_options (-Wall, -Werror, sanitizers) are gcc flags that nvcc
# rejects; the host compiler gets the equivalent warnings through -Xcompiler.
# The objects land in `loom`, which then links the CUDA runtime statically
# (libcudart_static.a, which opens the driver libcuda.so.1 at run time) and
# libstdc++ (nvcc's host code is C++). cuBLAS is opened at run time
# (backends/cuda/blas.cu): libloom.so has no NEEDED entry for any CUDA
# library, so it loads on machines without the toolkit or the driver.
#
# C++20 by an explicit -std=c++20 (CMake 3.25 has no CUDA20 dialect flag
# for nvcc, so CMAKE_CUDA_STANDARD is not used). Kernels are compiled without FMA contraction (--fmad=false) and with IEEE
# division and square root (the nvcc defaults, never --use_fast_math), so
# elementwise results round like the CPU backend's C code.
if(NOT LOOM_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LOOM_CUDA=${LOOM_CUDA}: expected AUTO, ON or OFF")
endif()

set(LOOM_CUDA_BUILT OFF)
if(LOOM_CUDA STREQUAL "OFF")
  message(STATUS "loom: CUDA backend: not built (LOOM_CUDA=OFF)")
  return()
endif()

# ---- find a working nvcc without failing when there is none ----
# check_language() tries the compiler in a scratch project, so a broken
# toolkit makes AUTO skip the backend instead of failing the configure.
if(NOT CMAKE_CUDA_COMPILER)
  find_program(LOOM_NVCC nvcc
    HINTS ENV CUDA_PATH ENV CUDA_HOME
    PATH_SUFFIXES bin
    PATHS /usr/local/cuda /opt/cuda)
  if(LOOM_NVCC AND NOT DEFINED ENV{CUDACXX})
    set(ENV{CUDACXX} ${LOOM_NVCC})
  endif()
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(NOT CMAKE_CUDA_COMPILER)
  if(LOOM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LOOM_CUDA=ON but no working nvcc was found (PATH, CUDA_PATH, /usr/local/cuda/bin); "
                        "set CMAKE_CUDA_COMPILER=/path/to/nvcc")
  endif()
  message(STATUS "loom: CUDA backend: not built (no working nvcc found)")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING "CUDA architectures (loom default: sm_80, sm_90 + PTX)")
endif()
# the static runtime, linked explicitly below (CUDA::cudart_static)
set(CMAKE_CUDA_RUNTIME_LIBRARY None)
enable_language(CUDA)

# the toolkit next to that nvcc
get_filename_component(LOOM_CUDA_BIN ${CMAKE_CUDA_COMPILER} DIRECTORY)
get_filename_component(LOOM_CUDA_ROOT ${LOOM_CUDA_BIN} DIRECTORY)
if(NOT CUDAToolkit_ROOT)
  set(CUDAToolkit_ROOT ${LOOM_CUDA_ROOT})
endif()
find_package(CUDAToolkit QUIET)
find_path(LOOM_CUBLAS_INCLUDE cublas_v2.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${LOOM_CUDA_ROOT}/include)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static OR NOT LOOM_CUBLAS_INCLUDE)
  if(LOOM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LOOM_CUDA=ON: nvcc ${CMAKE_CUDA_COMPILER} found, but not the CUDA toolkit (static cudart, cuBLAS headers)")
  endif()
  message(STATUS "loom: CUDA backend: not built (toolkit: static cudart / cuBLAS headers not found next to ${CMAKE_CUDA_COMPILER})")
  return()
endif()

# cuDNN: optional and not used yet: the convolutions and batch norm run on
# im2col + cuBLAS and custom kernels. Its presence is only reported (loom
# info), so that a later cuDNN path knows where to look; nothing links it.
find_path(LOOM_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${LOOM_CUDA_ROOT}/include)

file(GLOB LOOM_CUDA_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/backends/cuda/*.cu ${PROJECT_SOURCE_DIR}/backends/cuda/ops/*.cu)
add_library(loom_cuda OBJECT ${LOOM_CUDA_SRC})
# its own options only (see the header of this file)
set_property(TARGET loom_cuda PROPERTY COMPILE_OPTIONS "")
target_compile_options(loom_cuda PRIVATE
  -std=c++20 --fmad=false -Xcudafe --display_error_number
  -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-fno-strict-aliasing)
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  target_compile_options(loom_cuda PRIVATE -O3)
endif()
if(LOOM_WERROR)
  target_compile_options(loom_cuda PRIVATE -Werror=all-warnings -Xcompiler=-Werror)
endif()
target_include_directories(loom_cuda PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/core
  ${CUDAToolkit_INCLUDE_DIRS} ${LOOM_CUBLAS_INCLUDE})
target_compile_definitions(loom_cuda PRIVATE LOOM_HAVE_CUDA=1)
set_target_properties(loom_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON CUDA_SEPARABLE_COMPILATION OFF)

set(LOOM_CUDA_CUDNN "cuDNN headers not found")
if(LOOM_CUDNN_INCLUDE)
  target_compile_definitions(loom_cuda PRIVATE LOOM_CUDNN_HEADERS=1)
  set(LOOM_CUDA_CUDNN "cuDNN headers found, not used")
endif()

target_link_libraries(loom PRIVATE loom_cuda)
# `loom` was created before enable_language(CUDA): its CUDA_ARCHITECTURES is empty
set_property(TARGET loom PROPERTY CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
set_property(TARGET loom loom_cuda PROPERTY CUDA_RUNTIME_LIBRARY None)
target_link_libraries(loom PUBLIC CUDA::cudart_static stdc++ ${CMAKE_DL_LIBS})
target_compile_definitions(loom PRIVATE LOOM_HAVE_CUDA=1)
set(LOOM_CUDA_BUILT ON)
message(STATUS "loom: CUDA backend: built (CUDA ${CUDAToolkit_VERSION}, ${CMAKE_CUDA_COMPILER}, "
               "architectures ${CMAKE_CUDA_ARCHITECTURES}, static cudart, cuBLAS opened at run time, ${LOOM_CUDA_CUDNN})")
