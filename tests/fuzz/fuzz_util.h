/* tests/fuzz/fuzz_util.h — shared pieces of the fuzz targets: abort on a
 * broken invariant (with loom's last message), a private temp directory per
 * process (removed at exit), a file written whole. Include once per target,
 * before any other header. */
#ifndef LOOM_FUZZ_UTIL_H
#define LOOM_FUZZ_UTIL_H

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* nftw */
#endif
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"

static loom_ctx *fz_ctx;
static char fz_dir[256];

static inline void fz_fail(const char *target, const char *why) {
    fprintf(stderr, "%s: invariant broken: %s (%s)\n", target, why, fz_ctx ? loom_last_error(fz_ctx) : "");
    abort();
}

static inline int fz_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(p);
    return 0;
}

/* Everything under dir, and dir itself (symlinks are not followed). */
static inline void fz_rm_rf(const char *dir) { nftw(dir, fz_rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static inline void fz_cleanup(void) {
    if (fz_dir[0]) fz_rm_rf(fz_dir);
}

/* The context and the temp directory, made on first use. */
static inline void fz_init(const char *target) {
    if (fz_ctx) return;
    if (loom_ctx_create(NULL, &fz_ctx) != LOOM_OK) fz_fail(target, "cannot create a context");
    const char *t = getenv("TMPDIR");
    snprintf(fz_dir, sizeof fz_dir, "%s/loom-%s-XXXXXX", t && *t ? t : "/tmp", target);
    if (!mkdtemp(fz_dir)) fz_fail(target, "cannot make a temp directory");
    atexit(fz_cleanup);
}

static inline void fz_put(const char *target, const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) fz_fail(target, "cannot write a temporary file");
    fclose(f);
}

/* A file written as far as it goes (a path the input made may be taken). */
static inline void fz_put_quiet(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (n) (void)!fwrite(p, 1, n, f);
    fclose(f);
}

#endif
