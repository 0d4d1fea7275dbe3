/* tests/testutil.h — tiny helpers shared by the loom test programs.
 *
 * defines: CHECK, CHECK_OK, tu_summary, tu_skip, tu_cpu_open, tu_cpu_close,
 *          tu_tmpdir, tu_rm_rf.
 *
 * Header-only: each test program is one translation unit, so the counters are
 * file-static. A test ends with `return tu_summary();`, which prints the plain
 * closing line "N passed, N failed" that the CI reads, and returns the exit
 * code (0 when nothing failed). A test that cannot run here (missing hardware)
 * returns tu_skip(reason): exit code 77, which ctest reports as skipped.
 */
#ifndef LOOM_TESTUTIL_H
#define LOOM_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "loom/loom.h"

static int tu_passed, tu_failed;

/* Count cond as one check; on failure print file:line and the printf-style
 * message (the first variadic argument is the format). */
#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (cond) {                                               \
            tu_passed++;                                          \
        } else {                                                  \
            tu_failed++;                                          \
            printf("%s:%d: FAIL: ", __FILE__, __LINE__);          \
            printf(__VA_ARGS__);                                  \
            printf("\n");                                         \
            fflush(stdout);                                       \
        }                                                         \
    } while (0)

/* A loom call that must return LOOM_OK; on failure the message includes the
 * call text and the context's last error. */
#define CHECK_OK(ctx, call)                                                                           \
    do {                                                                                              \
        loom_status tu_st_ = (call);                                                                  \
        CHECK(tu_st_ == LOOM_OK, "%s -> %s: %s", #call, loom_status_str(tu_st_), loom_last_error(ctx)); \
    } while (0)

/* Print the closing line and return the exit code. */
static inline int tu_summary(void) {
    printf("%d passed, %d failed\n", tu_passed, tu_failed);
    fflush(stdout);
    return tu_failed ? 1 : 0;
}

/* check(ctx, be, name, reproducible) on every backend available here, made
 * with its ordinary and then its reproducible kernels (a backend not
 * available, or without a reproducible mode, prints why; a backend that
 * fails to be made otherwise fails the test); then the closing line and the
 * exit code (tu_summary). */
static inline int tu_every_backend(void (*check)(loom_ctx *ctx, loom_backend *be, const char *name, bool reproducible)) {
    loom_ctx *ctx = NULL;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    const char *names[16];
    int nb = loom_backend_list(names, 16);
    for (int b = 0; b < nb && b < 16; b++) {
        const char *why = NULL;
        if (!loom_backend_available(ctx, names[b], &why)) {
            printf("backend %s: skipped: %s\n", names[b], why ? why : "not available");
            continue;
        }
        for (int repro = 0; repro < 2; repro++) {
            loom_backend *be = NULL;
            loom_status st = loom_backend_create(ctx, names[b], &(loom_backend_desc){.reproducible = repro}, &be);
            if (st != LOOM_OK && repro) {
                printf("%s: no reproducible mode: %s\n", names[b], loom_last_error(ctx));
                continue;
            }
            CHECK_OK(ctx, st);
            if (be) check(ctx, be, names[b], repro);
            loom_backend_destroy(be);
        }
    }
    loom_ctx_destroy(ctx);
    return tu_summary();
}

/* The whole test cannot run here: say why, exit code 77 (ctest: skipped). */
static inline int tu_skip(const char *why) {
    printf("SKIP: %s\n", why);
    fflush(stdout);
    return 77;
}

/* A context and a CPU backend with `threads` workers (0 = the context's
 * default). Returns false (after printing why) on failure. */
static inline bool tu_cpu_open(int threads, loom_ctx **ctx, loom_backend **be) {
    *ctx = NULL, *be = NULL;
    if (loom_ctx_create(NULL, ctx) != LOOM_OK) {
        printf("cannot create a loom context\n");
        return false;
    }
    loom_backend_desc d = {0};
    d.threads = threads;
    if (loom_backend_create(*ctx, "cpu", &d, be) != LOOM_OK) {
        printf("cannot create the cpu backend: %s\n", loom_last_error(*ctx));
        loom_ctx_destroy(*ctx);
        *ctx = NULL;
        return false;
    }
    return true;
}

static inline void tu_cpu_close(loom_ctx *ctx, loom_backend *be) {
    loom_backend_destroy(be);
    loom_ctx_destroy(ctx);
}

/* A fresh directory $TMPDIR/loom-<what>-XXXXXX (/tmp without TMPDIR) into
 * buf; false (after printing why) when it cannot be made. */
static inline bool tu_tmpdir(const char *what, char *buf, size_t n) {
    const char *t = getenv("TMPDIR");
    snprintf(buf, n, "%s/loom-%s-XXXXXX", t && *t ? t : "/tmp", what);
    if (mkdtemp(buf)) return true;
    printf("cannot make a temp directory %s\n", buf);
    return false;
}

/* rm -rf dir (a test's temp directory); says so when it fails */
static inline void tu_rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
}

#endif
