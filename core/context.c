/* core/context.c — status strings, the context, error recording and logging. */
#include <time.h>
#include <unistd.h>

#include "impl.h"

#define LOOM_VERSION_STR "0.1.0"

const char *loom_version(void) { return LOOM_VERSION_STR; }

const char *loom_status_str(loom_status st) {
    static const char *const names[] = {
#define LOOM__X(n, s) s,
        LOOM_STATUS_LIST(LOOM__X)
#undef LOOM__X
    };
    if ((unsigned)st >= LOOM_STATUS_COUNT) return "unknown status";
    return names[st];
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

loom_status loom_ctx_create(const loom_ctx_desc *desc, loom_ctx **out) {
    loom_ctx_desc d = {0};
    if (desc) d = *desc;
    *out = NULL;
    loom_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return LOOM_ERR_OOM;
    ctx->threads = d.threads > 0 ? d.threads : default_threads();
    ctx->log_level = d.log_level;
    ctx->log = d.log;
    ctx->log_user = d.log_user;
    *out = ctx;
    return LOOM_OK;
}

void loom_ctx_destroy(loom_ctx *ctx) {
    if (ctx && ctx->cache_free) ctx->cache_free(ctx->cache);
    free(ctx);
}

const char *loom_last_error(const loom_ctx *ctx) { return ctx ? ctx->last_error : "no context"; }
loom_status loom_last_status(const loom_ctx *ctx) { return ctx ? ctx->last_status : LOOM_ERR_INVALID_ARG; }
int loom_ctx_threads(const loom_ctx *ctx) { return ctx->threads; }

void loom_clear_error(loom_ctx *ctx) {
    ctx->last_status = LOOM_OK;
    ctx->last_error[0] = 0;
}

int loom__env_switch(const char *name) {
    const char *e = getenv(name);
    if (!e || !*e) return -1;
    return !strcmp(e, "0") ? 0 : !strcmp(e, "1") ? 1 : -2;
}

loom_status loom__env_switches_check(loom_ctx *ctx, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (loom__env_switch(names[i]) == -2)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s='%s': expected 0 or 1 (or unset: the default)", names[i],
                             getenv(names[i]));
    return LOOM_OK;
}

loom_status loom__err(loom_ctx *ctx, loom_status st, const char *fmt, ...) {
    if (!ctx) return st;
    ctx->last_status = st;
    if (fmt) { /* format apart: an argument may be ctx->last_error itself */
        char msg[sizeof ctx->last_error];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        memcpy(ctx->last_error, msg, sizeof msg);
    } else {
        snprintf(ctx->last_error, sizeof ctx->last_error, "%s", loom_status_str(st));
    }
    loom__log(ctx, LOOM_LOG_DEBUG, "error: %s", ctx->last_error);
    return st;
}

void loom__log(loom_ctx *ctx, loom_log_level level, const char *fmt, ...) {
    if (!ctx || (int)level > ctx->log_level) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ctx->log)
        ctx->log(ctx->log_user, level, msg);
    else
        fprintf(stderr, "loom: %s\n", msg);
}

void *loom__xmalloc(size_t n) { return malloc(n ? n : 1); }

double loom__now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
void *loom__xcalloc(size_t n, size_t sz) { return calloc(n ? n : 1, sz ? sz : 1); }
