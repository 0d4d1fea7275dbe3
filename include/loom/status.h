/* loom/status.h — result codes, the context and its last-error message.
 *
 * defines: loom_status, loom_status_str, loom_ctx, loom_ctx_desc,
 *          loom_ctx_create/destroy, loom_last_error.
 *
 * Every fallible call returns a loom_status. On failure the context that was
 * involved holds a message naming what went wrong and where; read it with
 * loom_last_error(ctx). The library never calls exit().
 */
#ifndef LOOM_STATUS_H
#define LOOM_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, text): one line per result code. */
#define LOOM_STATUS_LIST(X)                                                     \
    X(OK, "ok")                                          /* success */          \
    X(ERR_INVALID_ARG, "invalid argument")               /* bad value/flag */   \
    X(ERR_SHAPE, "shape mismatch")                       /* op shapes */        \
    X(ERR_DTYPE, "dtype mismatch")                       /* op dtypes */        \
    X(ERR_UNSUPPORTED, "not supported")                  /* op/dtype/backend */ \
    X(ERR_OOM, "out of memory")                          /* host or device */   \
    X(ERR_IO, "I/O error")                               /* open/read/write */  \
    X(ERR_FORMAT, "malformed data")                      /* file contents */    \
    X(ERR_BACKEND, "backend error")                      /* driver failure */   \
    X(ERR_STATE, "invalid state")                        /* call order */

typedef enum loom_status {
#define LOOM__X(n, s) LOOM_##n,
    LOOM_STATUS_LIST(LOOM__X)
#undef LOOM__X
    LOOM_STATUS_COUNT
} loom_status;

/* Static text for a status ("shape mismatch"). Never NULL. */
const char *loom_status_str(loom_status st);

typedef struct loom_ctx loom_ctx;

typedef enum loom_log_level {
    LOOM_LOG_ERROR,
    LOOM_LOG_WARN,
    LOOM_LOG_INFO,
    LOOM_LOG_DEBUG
} loom_log_level;

/* Zero-initialised is valid: every field has a default. */
typedef struct loom_ctx_desc {
    int threads;      /* CPU worker threads; 0 = number of cores */
    int log_level;    /* messages at or below this level are logged; 0 = errors only */
    void (*log)(void *user, loom_log_level level, const char *msg); /* NULL = stderr */
    void *log_user;   /* passed to log */
} loom_ctx_desc;

/* Create a context. desc may be NULL. On failure *out is NULL and the status
 * says why (only LOOM_ERR_OOM is possible). A context, and everything created
 * from it, is used by one thread at a time. */
loom_status loom_ctx_create(const loom_ctx_desc *desc, loom_ctx **out);
void loom_ctx_destroy(loom_ctx *ctx);

/* The message of the last failure recorded on ctx ("" if none). The string is
 * owned by ctx and valid until the next failing call. */
const char *loom_last_error(const loom_ctx *ctx);
/* The status of the last failure recorded on ctx (LOOM_OK if none). */
loom_status loom_last_status(const loom_ctx *ctx);
void loom_clear_error(loom_ctx *ctx);

/* Threads the CPU backend uses for this context. */
int loom_ctx_threads(const loom_ctx *ctx);

/* Library version, "MAJOR.MINOR.PATCH". */
const char *loom_version(void);

#ifdef __cplusplus
}
#endif
#endif
