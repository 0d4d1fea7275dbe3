/* tests/test-outfile.c — the atomic output writer (core/outfile.c) that the
 * safetensors, shard and npy writers use.
 *
 * - a committed file holds exactly what was written (buffered small writes,
 *   writes larger than the buffer, a header overwritten at the end)
 * - an aborted write leaves the previous file byte-identical and no
 *   temporary file behind
 * - every writer gets its own temporary name beside the target, also two
 *   writers of one target at once; threads saving one target concurrently
 *   leave one whole file
 * - a target that is not a regular file (a directory, a FIFO, /dev/full)
 *   is refused at open, naming it, and nothing is written
 * - temporary files of dead writers (pid gone, over a minute old) are
 *   removed when the target is next written; fresh ones are kept
 * - failures name the file and leave the target intact: a missing
 *   directory, and the file-size limit
 *   (RLIMIT_FSIZE, SIGXFSZ ignored) hit by a direct write and by the flush
 *   at commit
 *
 * Files go to ./test-outfile.d (ctest runs in the build tree).
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom/loom.h"
#include "outfile.h"
#include "testutil.h"

#define TDIR "test-outfile.d"

static loom_ctx *ctx;

static char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, TDIR "/%s", name);
    return p;
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    return b;
}

static bool same_file(const char *path, const void *want, size_t n) {
    size_t got_n = 0;
    uint8_t *got = read_file(path, &got_n);
    bool ok = got && got_n == n && memcmp(got, want, n) == 0;
    free(got);
    return ok;
}

/* Temporary files (".tmp.") left in TDIR. */
static int temp_files_left(void) {
    DIR *d = opendir(TDIR);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

/* Write p whole through a writer and commit. */
static loom_status save(const char *path, const void *p, size_t n) {
    loom__outfile *f;
    loom_status st = loom__outfile_open(ctx, path, &f);
    if (st != LOOM_OK) return st;
    st = loom__outfile_write(f, p, n);
    if (st != LOOM_OK) {
        loom__outfile_abort(f);
        return st;
    }
    return loom__outfile_commit(f);
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 9));
}

static void test_commit(void) {
    const char *path = tpath("a.bin");
    unlink(path); /* left by an earlier run */
    size_t big_n = 3 * 1024 * 1024 + 17; /* past the writer's buffer */
    uint8_t *want = malloc(big_n);
    fill(want, big_n, 1);
    loom__outfile *f;
    CHECK_OK(ctx, loom__outfile_open(ctx, path, &f));
    if (!f) return;
    /* small writes, one larger than the buffer, then the header filled in */
    memset(want, 0, 8);
    CHECK_OK(ctx, loom__outfile_write(f, want, 8));
    CHECK_OK(ctx, loom__outfile_write(f, want + 8, 1000));
    CHECK_OK(ctx, loom__outfile_write(f, want + 1008, 2 * 1024 * 1024));
    CHECK_OK(ctx, loom__outfile_write(f, want + 1008 + 2 * 1024 * 1024, big_n - 1008 - 2 * 1024 * 1024));
    CHECK_OK(ctx, loom__outfile_write(f, NULL, 0));
    const char *temp = loom__outfile_temp(f);
    CHECK(!strncmp(temp, path, strlen(path)) && !strncmp(temp + strlen(path), ".tmp.", 5),
          "the temporary file '%s' lies beside the target", temp);
    struct stat sb;
    CHECK(stat(path, &sb) != 0, "nothing at the target before commit");
    fill(want, 8, 9);
    CHECK_OK(ctx, loom__outfile_pwrite(f, 0, want, 8));
    CHECK_OK(ctx, loom__outfile_commit(f));
    CHECK(same_file(path, want, big_n), "the committed file holds what was written");
    CHECK(temp_files_left() == 0, "no temporary file after commit");
    free(want);
}

static void test_abort(void) {
    const char *path = tpath("keep.bin");
    CHECK_OK(ctx, save(path, "previous", 8));
    loom__outfile *f;
    CHECK_OK(ctx, loom__outfile_open(ctx, path, &f));
    if (!f) return;
    uint8_t junk[5000];
    fill(junk, sizeof junk, 2);
    CHECK_OK(ctx, loom__outfile_write(f, junk, sizeof junk));
    loom__outfile_abort(f);
    loom__outfile_abort(NULL);
    CHECK(same_file(path, "previous", 8), "an aborted write leaves the previous file");
    CHECK(temp_files_left() == 0, "an aborted write leaves no temporary file");
}

static void test_unique(void) {
    const char *path = tpath("two.bin");
    loom__outfile *a, *b;
    CHECK_OK(ctx, loom__outfile_open(ctx, path, &a));
    CHECK_OK(ctx, loom__outfile_open(ctx, path, &b));
    if (!a || !b) return;
    CHECK(strcmp(loom__outfile_temp(a), loom__outfile_temp(b)) != 0, "two writers of one target: '%s' and '%s'",
          loom__outfile_temp(a), loom__outfile_temp(b));
    CHECK(temp_files_left() == 2, "each writer has its own temporary file");
    CHECK_OK(ctx, loom__outfile_write(a, "first", 5));
    CHECK_OK(ctx, loom__outfile_write(b, "second", 6));
    CHECK_OK(ctx, loom__outfile_commit(b));
    CHECK(same_file(path, "second", 6), "one writer committed");
    CHECK_OK(ctx, loom__outfile_commit(a));
    CHECK(same_file(path, "first", 5), "the last to commit wins, whole");
    CHECK(temp_files_left() == 0, "no temporary file after both commits");
}

#define NTHREADS 4
#define NSAVES 25
#define PAYLOAD 70000

static void *saver(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    uint8_t *p = malloc(PAYLOAD);
    loom_ctx *c = NULL;
    bool ok = p && loom_ctx_create(NULL, &c) == LOOM_OK;
    if (ok) memset(p, (int)('A' + id), PAYLOAD);
    for (int i = 0; ok && i < NSAVES; i++) {
        loom__outfile *f;
        ok = loom__outfile_open(c, tpath("shared.bin"), &f) == LOOM_OK;
        ok = ok && loom__outfile_write(f, p, PAYLOAD) == LOOM_OK;
        ok = ok && loom__outfile_commit(f) == LOOM_OK;
    }
    if (c) loom_ctx_destroy(c);
    free(p);
    return (void *)(uintptr_t)ok;
}

static void test_threads(void) {
    pthread_t t[NTHREADS];
    for (uintptr_t i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, saver, (void *)i);
    int ok = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok += r != NULL;
    }
    CHECK(ok == NTHREADS, "%d threads saving one target: %d succeeded in every save", NTHREADS, ok);
    size_t n = 0;
    uint8_t *got = read_file(tpath("shared.bin"), &n);
    bool whole = got && n == PAYLOAD;
    for (size_t i = 1; whole && i < n; i++) whole = got[i] == got[0];
    CHECK(whole && got[0] >= 'A' && got[0] < 'A' + NTHREADS, "the file is one thread's payload, whole");
    free(got);
    CHECK(temp_files_left() == 0, "no temporary file after the threads");
}

static void test_errors(void) {
    loom__outfile *f = (loom__outfile *)&ctx;
    loom_status s = loom__outfile_open(ctx, TDIR "/no-such-dir/x.bin", &f);
    CHECK(s == LOOM_ERR_IO && !f && strstr(loom_last_error(ctx), "no-such-dir/x.bin") &&
              strstr(loom_last_error(ctx), "cannot create the temporary file"),
          "missing directory: %s: %s", loom_status_str(s), loom_last_error(ctx));

    /* a directory in the way: refused at open, the directory is intact */
    const char *dir = tpath("a-directory");
    mkdir(dir, 0777);
    char inner[600];
    snprintf(inner, sizeof inner, "%s/inside", dir);
    CHECK_OK(ctx, save(inner, "x", 1));
    s = save(dir, "data", 4);
    CHECK(s == LOOM_ERR_IO && strstr(loom_last_error(ctx), "not a regular file") && strstr(loom_last_error(ctx), dir),
          "a directory in the way: %s: %s", loom_status_str(s), loom_last_error(ctx));
    CHECK(same_file(inner, "x", 1) && temp_files_left() == 0, "the directory is intact, no temporary file left");
}

/* A FIFO and a device node as the target: refused at open naming them; the
 * FIFO stays a FIFO and no temporary file is made. */
static void test_special(void) {
    const char *fifo = tpath("a-fifo");
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    loom__outfile *f = NULL;
    loom_status s = loom__outfile_open(ctx, fifo, &f);
    struct stat sb;
    CHECK(s == LOOM_ERR_IO && !f && strstr(loom_last_error(ctx), fifo) && strstr(loom_last_error(ctx), "a FIFO") &&
              stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode) && temp_files_left() == 0,
          "a FIFO as the target: %s: %s", loom_status_str(s), loom_last_error(ctx));
    if (f) loom__outfile_abort(f), f = NULL;
    unlink(fifo);
    if (stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode)) {
        s = loom__outfile_open(ctx, "/dev/full", &f);
        CHECK(s == LOOM_ERR_IO && !f && strstr(loom_last_error(ctx), "/dev/full") &&
                  strstr(loom_last_error(ctx), "not a regular file"),
              "/dev/full as the target: %s: %s", loom_status_str(s), loom_last_error(ctx));
        if (f) loom__outfile_abort(f);
        CHECK(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode), "/dev/full is still a device");
    }
}

/* Stale temporary files: a dead pid's, two minutes old, is removed by the
 * next writer of that target; a dead pid's fresh one and a live pid's old
 * one stay. */
static void test_stale(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    char old_dead[600], new_dead[600], old_live[600];
    snprintf(old_dead, sizeof old_dead, TDIR "/stale.bin.tmp.%ld.3", (long)child);
    snprintf(new_dead, sizeof new_dead, TDIR "/stale.bin.tmp.%ld.4", (long)child);
    snprintf(old_live, sizeof old_live, TDIR "/stale.bin.tmp.%ld.5", (long)getppid());
    const char *names[3] = {old_dead, new_dead, old_live};
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= 120, tv[1] = tv[0];
    for (int k = 0; k < 3; k++) {
        FILE *fp = fopen(names[k], "wb");
        if (fp) fputs("partial", fp), fclose(fp);
        if (k != 1) utimes(names[k], tv);
    }
    CHECK_OK(ctx, save(tpath("stale.bin"), "new", 3));
    struct stat sb;
    CHECK(stat(old_dead, &sb) != 0, "a dead writer's old temporary file is removed");
    CHECK(stat(new_dead, &sb) == 0 && stat(old_live, &sb) == 0, "a fresh one and a live writer's are kept");
    unlink(new_dead), unlink(old_live);
}

/* The file-size limit hit (as a full disk would): by a write larger than
 * the buffer, and by the flush at commit. */
static void test_full(void) {
    const char *path = tpath("full.bin");
    CHECK_OK(ctx, save(path, "previous", 8));
    struct rlimit saved;
    if (getrlimit(RLIMIT_FSIZE, &saved) != 0) {
        printf("note: cannot read RLIMIT_FSIZE; the file-size limit checks are skipped\n");
        return;
    }
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = saved;
    lim.rlim_cur = 4096;
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
        printf("note: cannot lower RLIMIT_FSIZE; the file-size limit checks are skipped\n");
        signal(SIGXFSZ, prev);
        return;
    }
    size_t big_n = 2 * 1024 * 1024;
    uint8_t *big = calloc(1, big_n);
    loom__outfile *f;
    loom_status s = loom__outfile_open(ctx, path, &f), s2 = LOOM_OK, s3 = LOOM_OK;
    char msg[1024] = "";
    if (s == LOOM_OK) {
        s = loom__outfile_write(f, big, big_n);
        snprintf(msg, sizeof msg, "%s", loom_last_error(ctx));
        s2 = loom__outfile_write(f, "x", 1);
        s3 = loom__outfile_commit(f);
    }
    loom_status small = save(path, big, 10000); /* fits the buffer: fails at commit */
    char small_msg[1024];
    snprintf(small_msg, sizeof small_msg, "%s", loom_last_error(ctx));
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, prev);
    free(big);
    CHECK(s == LOOM_ERR_IO && strstr(msg, "write") && strstr(msg, path) && strstr(msg, "unchanged"),
          "a write past the file-size limit fails naming the file: %s: %s", loom_status_str(s), msg);
    CHECK(s2 == LOOM_ERR_IO && s3 == LOOM_ERR_IO, "the writer stays failed: %s, %s", loom_status_str(s2),
          loom_status_str(s3));
    CHECK(small == LOOM_ERR_IO && strstr(small_msg, "write") && strstr(small_msg, path),
          "a flush past the limit at commit fails naming the file: %s: %s", loom_status_str(small), small_msg);
    CHECK(same_file(path, "previous", 8), "after the failed writes the previous file is byte-identical");
    CHECK(temp_files_left() == 0, "the failed writes left no temporary file");
}

int main(void) {
    mkdir(TDIR, 0777);
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    test_commit();
    test_abort();
    test_unique();
    test_threads();
    test_errors();
    test_special();
    test_stale();
    test_full();
    loom_ctx_destroy(ctx);
    return tu_summary();
}
