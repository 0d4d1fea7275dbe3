/* backends/cuda/blas.cu — cuBLAS opened at run time: loom__cublas_load fills
 * the table loom__cublas (the entry points of LOOM__CUBLAS_FNS, cuda.h) from
 * the library named by LOOM_CUBLAS_LIBRARY, else libcublas.so.<the major
 * version of the headers built against>, opened once with dlopen. So
 * libloom records no dependency on cuBLAS: without it the CUDA backend is
 * unavailable with a message naming the library, the other backends work.
 *
 * Also the driver check: the statically linked CUDA runtime opens
 * libcuda.so.1 itself and reports its absence as "insufficient driver";
 * loom__cu_driver_present opens it first so that the message can name it. */
#define LOOM__CUBLAS_NO_REDIRECT 1
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "cuda.h"

/* each listed type matches the header's declaration (one overload of it);
 * unevaluated (inside sizeof), so no build references the symbol itself */
#define CHECK_TYPE(name, type) \
    static_assert(sizeof(static_cast<loom__fn_ptr<type>>(&::name)) > 0, #name ": the header declares another type");
LOOM__CUBLAS_FNS(CHECK_TYPE)
#undef CHECK_TYPE

#define STR2(x) #x
#define STR(x) STR2(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

loom__cublas_fns loom__cublas;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[768];

static void load(void) {
    const char *env = getenv("LOOM_CUBLAS_LIBRARY");
    const char *name = env && *env ? env : CUBLAS_SONAME;
    const char *how = env && *env ? " (LOOM_CUBLAS_LIBRARY)" : "";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        size_t nl = strlen(name);
        if (e && !strncmp(e, name, nl) && !strncmp(e + nl, ": ", 2)) e += nl + 2; /* dlerror repeats the name */
        snprintf(load_why, sizeof load_why,
                 "CUDA: built, no cuBLAS: %s%s: %s (install cuBLAS %d: the CUDA toolkit or NVIDIA's "
                 "libcublas-%d-* package; or set LOOM_CUBLAS_LIBRARY to its path)",
                 name, how, e ? e : "dlopen failed", CUBLAS_VER_MAJOR, CUBLAS_VER_MAJOR);
        return;
    }
    loom__cublas_fns f;
#define LOAD(fn, type)                                                                                          \
    f.fn = (loom__fn_ptr<type>)dlsym(lib, #fn);                                                                             \
    if (!f.fn) {                                                                                                \
        snprintf(load_why, sizeof load_why, "CUDA: built, but %s%s has no %s (loom needs cuBLAS %d)", name, how, \
                 #fn, CUBLAS_VER_MAJOR);                                                                        \
        dlclose(lib);                                                                                           \
        return;                                                                                                 \
    }
    LOOM__CUBLAS_FNS(LOAD)
#undef LOAD
    loom__cublas = f;
    loaded = true;
}

bool loom__cublas_load(const char **why) {
    pthread_once(&once, load);
    if (!loaded && why) *why = load_why;
    return loaded;
}

bool loom__cu_driver_present(const char **why) {
    static char msg[512];
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        if (e && !strncmp(e, "libcuda.so.1: ", 14)) e += 14;
        snprintf(msg, sizeof msg, "CUDA: built, no NVIDIA driver (libcuda.so.1: %s)", e ? e : "dlopen failed");
        if (why) *why = msg;
        return false;
    }
    dlclose(lib);
    return true;
}
