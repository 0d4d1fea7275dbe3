/* cmake/empty.c — the shared library's own source: it has none; its objects
 * are the static library's, linked whole (cmake/install.cmake). */
typedef int loom__shared_library_has_no_source_of_its_own;
