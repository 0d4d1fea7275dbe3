/* core/outfile.c — atomic output files (core/outfile.h): a temporary file
 * beside the target, written through a buffer, fsynced and renamed over the
 * target on commit, removed on abort or failure. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"

#define OUTFILE_BUFFER ((size_t)256 * 1024)
/* O_EXCL collisions (names left by a crashed process with our pid) tried
 * past before giving up */
#define OUTFILE_TRIES 64
/* A dead writer's temporary file is removed only once it is this old (a
 * file just renamed or being inspected is left alone). */
#define OUTFILE_STALE_S 60

struct loom__outfile {
    loom_ctx *ctx;
    char *path, *temp;
    int fd;
    uint8_t *buf;
    size_t used;
    loom_status failed; /* the first failure, LOOM_OK while none */
};

/* Writers started by this process: the k of "<path>.tmp.<pid>.<k>". */
static atomic_uint outfile_serial;

static bool write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = write(fd, c, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static bool pwrite_all(int fd, const void *p, size_t n, off_t at) {
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        c += w, at += w;
        n -= (size_t)w;
    }
    return true;
}

/* Make the rename durable (best effort: some file systems refuse fsync on a
 * directory, which is not an error of ours). */
static void fsync_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* Remove "<path>.tmp.<pid>.<k>" files beside path left by writers that died
 * (kill -9, a crash): the pid is not alive (kill(pid, 0) fails with ESRCH),
 * the entry is a regular file and it was last changed over OUTFILE_STALE_S
 * ago. Best effort: a file that cannot be inspected or removed stays. A
 * process in another pid namespace writing to the same folder could be
 * taken for dead; the age keeps its file while it is being written. */
static void clean_stale(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    DIR *d = opendir(dir);
    if (!d) return;
    size_t bl = strlen(base);
    time_t now = time(NULL);
    char p[4096];
    for (struct dirent *e; (e = readdir(d));) {
        const char *t = e->d_name;
        if (strncmp(t, base, bl) || strncmp(t + bl, ".tmp.", 5)) continue;
        char *end;
        errno = 0;
        long pid = strtol(t + bl + 5, &end, 10);
        if (errno || pid <= 0 || pid == (long)getpid() || *end != '.' || end[1] < '0' || end[1] > '9') continue;
        strtoul(end + 1, &end, 10);
        if (*end || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        struct stat sb;
        if (snprintf(p, sizeof p, "%s/%s", dir, t) >= (int)sizeof p) continue;
        if (lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode) || now - sb.st_mtime < OUTFILE_STALE_S) continue;
        (void)unlink(p);
    }
    closedir(d);
}

static void outfile_free(loom__outfile *f) {
    free(f->path), free(f->temp), free(f->buf);
    free(f);
}

/* Record the failure of step (errno err) and remove the temporary file. */
static loom_status fail(loom__outfile *f, const char *step, int err) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    unlink(f->temp);
    f->failed = loom__err(f->ctx, LOOM_ERR_IO,
                          "%s: %s of the temporary file %s failed: %s (the previous file, if any, is unchanged)",
                          f->path, step, f->temp, strerror(err));
    return f->failed;
}

loom_status loom__outfile_open(loom_ctx *ctx, const char *path, loom__outfile **out) {
    *out = NULL;
    if (!path) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "output file: path is NULL");
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return loom__err(ctx, LOOM_ERR_IO, "%s exists and is not a regular file (%s): refused, nothing written", path,
                         S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
                         : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)              ? "a device"
                                                                                    : "a socket or other special file");
    clean_stale(path);
    loom__outfile *f = calloc(1, sizeof *f);
    size_t tlen = strlen(path) + 64;
    if (f) f->fd = -1, f->ctx = ctx;
    if (!f || !(f->path = malloc(strlen(path) + 1)) || !(f->temp = malloc(tlen)) ||
        !(f->buf = malloc(OUTFILE_BUFFER))) {
        if (f) outfile_free(f);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", path);
    }
    strcpy(f->path, path);
    for (int k = 0; k < OUTFILE_TRIES && f->fd < 0; k++) {
        unsigned serial = atomic_fetch_add(&outfile_serial, 1u);
        snprintf(f->temp, tlen, "%s.tmp.%ld.%u", path, (long)getpid(), serial);
        f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd < 0 && errno != EEXIST) break;
    }
    if (f->fd < 0) {
        loom_status st = loom__err(ctx, LOOM_ERR_IO, "%s: cannot create the temporary file %s: %s", path, f->temp,
                                   strerror(errno));
        outfile_free(f);
        return st;
    }
    *out = f;
    return LOOM_OK;
}

static loom_status flush(loom__outfile *f) {
    if (f->used && !write_all(f->fd, f->buf, f->used)) return fail(f, "write", errno);
    f->used = 0;
    return LOOM_OK;
}

loom_status loom__outfile_write(loom__outfile *f, const void *p, size_t n) {
    if (f->failed != LOOM_OK) return f->failed;
    if (f->used + n <= OUTFILE_BUFFER) {
        if (n) memcpy(f->buf + f->used, p, n);
        f->used += n;
        return LOOM_OK;
    }
    loom_status st = flush(f);
    if (st != LOOM_OK) return st;
    if (n < OUTFILE_BUFFER) {
        memcpy(f->buf, p, n);
        f->used = n;
        return LOOM_OK;
    }
    return write_all(f->fd, p, n) ? LOOM_OK : fail(f, "write", errno);
}

loom_status loom__outfile_pwrite(loom__outfile *f, uint64_t offset, const void *p, size_t n) {
    if (f->failed != LOOM_OK) return f->failed;
    loom_status st = flush(f);
    if (st != LOOM_OK) return st;
    if (offset > (uint64_t)INT64_MAX - n) return fail(f, "write", EINVAL);
    return pwrite_all(f->fd, p, n, (off_t)offset) ? LOOM_OK : fail(f, "write", errno);
}

loom_status loom__outfile_commit(loom__outfile *f) {
    loom_status st = f->failed;
    if (st == LOOM_OK) st = flush(f);
    if (st == LOOM_OK && fsync(f->fd) != 0) st = fail(f, "fsync", errno);
    if (st == LOOM_OK) {
        int fd = f->fd;
        f->fd = -1;
        if (close(fd) != 0) st = fail(f, "close", errno);
    }
    if (st == LOOM_OK && rename(f->temp, f->path) != 0) st = fail(f, "rename", errno);
    if (st == LOOM_OK) fsync_dir_of(f->path);
    outfile_free(f);
    return st;
}

void loom__outfile_abort(loom__outfile *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    if (f->failed == LOOM_OK) unlink(f->temp);
    outfile_free(f);
}

const char *loom__outfile_temp(const loom__outfile *f) { return f->temp; }
