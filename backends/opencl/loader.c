/* backends/opencl/loader.c — the OpenCL ICD loader, opened at run time:
 * loom__cl_load fills the table loom__clf (the entry points of LOOM__CL_FNS,
 * opencl.h) from the library named by the environment variable
 * LOOM_OPENCL_LIBRARY, else libOpenCL.so.1, opened once with dlopen and kept
 * open. So libloom records no dependency on libOpenCL: without it the OpenCL
 * backend is unavailable with a message naming the library, and the other
 * backends work. */
#define LOOM__CL_NO_REDIRECT 1
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "opencl.h"

loom__cl_fns loom__clf;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[768];

static void load(void) {
    const char *env = getenv("LOOM_OPENCL_LIBRARY");
    const char *name = env && *env ? env : "libOpenCL.so.1";
    const char *how = env && *env ? " (LOOM_OPENCL_LIBRARY)" : "";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        size_t nl = strlen(name);
        if (e && !strncmp(e, name, nl) && !strncmp(e + nl, ": ", 2)) e += nl + 2; /* dlerror repeats the name */
        snprintf(load_why, sizeof load_why,
                 "no OpenCL ICD loader: %s%s: %s (Debian/Ubuntu: apt install "
                 "ocl-icd-libopencl1, plus a driver such as pocl-opencl-icd; or set LOOM_OPENCL_LIBRARY to its path)",
                 name, how, e ? e : "dlopen failed");
        return;
    }
    loom__cl_fns f;
#define LOAD(fn)                                                                                        \
    f.fn = (cl_api_##fn)dlsym(lib, #fn);                                                                \
    if (!f.fn) {                                                                                        \
        snprintf(load_why, sizeof load_why, "%s%s has no %s (loom needs OpenCL 1.2)", name, how, #fn); \
        dlclose(lib);                                                                                   \
        return;                                                                                         \
    }
    LOOM__CL_FNS(LOAD)
#undef LOAD
    loom__clf = f;
    loaded = true;
}

bool loom__cl_load(const char **why) {
    pthread_once(&once, load);
    if (!loaded && why) *why = load_why;
    return loaded;
}
