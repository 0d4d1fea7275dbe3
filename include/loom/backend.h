/* loom/backend.h — choosing and querying a compute backend.
 *
 * defines: loom_backend, loom_backend_desc, loom_backend_create/destroy,
 *          loom_backend_list, loom_backend_describe, loom_backend_supports.
 *
 * Backends are compiled in (CPU always; CUDA, Vulkan, OpenCL when built). A
 * backend instance owns one device and its memory; plans compiled for it run
 * there. An op or dtype that a backend lacks is an error when a plan is
 * compiled, naming op, dtype and backend; there is never a silent fallback.
 */
#ifndef LOOM_BACKEND_H
#define LOOM_BACKEND_H

#include <stdio.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_backend loom_backend;

typedef struct loom_backend_desc {
    int device;  /* device index for GPU backends; -1/0 = default */
    int threads; /* CPU backend threads; 0 = the context's setting */
} loom_backend_desc;

/* name: "cpu", "cuda", "vulkan", "opencl". An unknown or unavailable backend
 * is LOOM_ERR_UNSUPPORTED with the reason in loom_last_error. */
loom_status loom_backend_create(loom_ctx *ctx, const char *name, const loom_backend_desc *desc, loom_backend **out);
void loom_backend_destroy(loom_backend *be);
const char *loom_backend_name(const loom_backend *be);

/* Names of the backends compiled into this library; returns the count and
 * fills up to max names. */
int loom_backend_list(const char **names, int max);
/* Whether backend `name` can run here; if not, *why explains (static text or
 * a string owned by ctx). */
bool loom_backend_available(loom_ctx *ctx, const char *name, const char **why);
/* Whether backend `name` is available and its default device is a real GPU
 * (a CPU device behind a GPU API, such as PoCL or lavapipe, is not). */
bool loom_backend_is_gpu(loom_ctx *ctx, const char *name);
/* Whether the backend has a kernel for op index `op` (see loom_op_name) with output dtype dt. */
bool loom_backend_supports(const loom_backend *be, int op, loom_dtype dt);
/* Human-readable device and capability description. */
void loom_backend_describe(const loom_backend *be, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
