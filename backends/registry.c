/* backends/registry.c — the backends compiled into this library register
 * here: each one that the build configured (LOOM_HAVE_<NAME>) adds its
 * function table to loom__backends, which the core reads (core/backend.c)
 * without naming any backend. The order is the order of preference when a
 * caller asks for the best backend: dedicated GPU APIs first, the CPU
 * reference backend, always built, last. */
#include "../core/backend_impl.h"

extern const loom__backend_vtbl loom__cpu_backend;
#ifdef LOOM_HAVE_OPENCL
extern const loom__backend_vtbl loom__opencl_backend;
#endif
#ifdef LOOM_HAVE_VULKAN
extern const loom__backend_vtbl loom__vulkan_backend;
#endif
#ifdef LOOM_HAVE_CUDA
extern const loom__backend_vtbl loom__cuda_backend;
#endif

const loom__backend_vtbl *const loom__backends[] = {
#ifdef LOOM_HAVE_CUDA
    &loom__cuda_backend,
#endif
#ifdef LOOM_HAVE_VULKAN
    &loom__vulkan_backend,
#endif
#ifdef LOOM_HAVE_OPENCL
    &loom__opencl_backend,
#endif
    &loom__cpu_backend,
    NULL,
};
