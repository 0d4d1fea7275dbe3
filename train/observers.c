/* train/observers.c — the built-in observers of a trainer: the CSV log (a
 * "step" row per batch, an "epoch" row per epoch) and the TensorBoard
 * scalars (train/... per step, epoch/... per epoch; see train/logs.c). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train_impl.h"

/* ---- CSV ---- */
typedef struct csv_log {
    loom_ctx *ctx;
    FILE *f;
    char *path;
} csv_log;

/* A failed write, flush or close: LOOM_ERR_IO naming the file and the reason (ENOSPC: no space left). */
static loom_status csv_failed(csv_log *c, const char *what) {
    return loom__err(c->ctx, LOOM_ERR_IO, "train: %s the CSV log '%s' failed: %s", what, c->path,
                     errno ? strerror(errno) : "a write error");
}

static loom_status csv_step(void *user, const loom_step_result *s) {
    csv_log *c = user;
    errno = 0;
    if (fprintf(c->f, "step,%d,%lld,%.6g,%.6g,%.6g,%.6g,,,,,%.3f\n", s->epoch, (long long)s->global_step, s->loss,
                s->accuracy, s->lr, s->samples_per_s, s->elapsed_s) < 0 || ferror(c->f))
        return csv_failed(c, "writing");
    return LOOM_OK;
}

static loom_status csv_epoch(void *user, const loom_epoch_stats *es) {
    csv_log *c = user;
    errno = 0;
    if (fprintf(c->f, "epoch,%d,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.3f\n", es->epoch,
                (long long)es->global_step, es->train_loss, es->train_acc, es->lr, es->samples_per_s, es->val_loss,
                es->val_acc, es->test_loss, es->test_acc, es->seconds) < 0 ||
        fflush(c->f) != 0 || ferror(c->f))
        return csv_failed(c, "writing");
    return LOOM_OK;
}

static loom_status csv_finish(void *user, const loom_train_result *r) {
    (void)r;
    csv_log *c = user;
    errno = 0;
    bool bad = fflush(c->f) != 0 || ferror(c->f);
    bad |= fclose(c->f) != 0;
    c->f = NULL;
    return bad ? csv_failed(c, "closing") : LOOM_OK;
}

static void csv_close(void *user) {
    csv_log *c = user;
    if (c->f) fclose(c->f);
    free(c->path);
    free(c);
}

/* The log is appended to as the run goes (a resumed run appends to it), so
 * it is written in place, not through core/outfile's replace-at-the-end;
 * but a target that is not a regular file (a device, a FIFO, a directory)
 * is refused before anything is opened for writing, and opening never
 * blocks. */
loom_status loom__csv_observer(loom_ctx *ctx, const char *path, bool append, loom_train_observer *out) {
    csv_log *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return loom__err(ctx, LOOM_ERR_OOM, "train: out of memory for the CSV log");
    }
    c->ctx = ctx;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        csv_close(c);
        return loom__err(ctx, LOOM_ERR_IO, "train: the CSV log '%s' exists and is not a regular file", path);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0666);
    if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) { /* replaced since the stat */
        close(fd);
        csv_close(c);
        return loom__err(ctx, LOOM_ERR_IO, "train: the CSV log '%s' exists and is not a regular file", path);
    }
    if (fd < 0 || !(c->f = fdopen(fd, append ? "a" : "w"))) {
        loom_status st = loom__err(ctx, LOOM_ERR_IO, "train: cannot write the CSV log '%s': %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        csv_close(c);
        return st;
    }
    errno = 0;
    if (!append &&
        fprintf(c->f, "kind,epoch,step,loss,accuracy,lr,samples_per_s,val_loss,val_acc,test_loss,test_acc,seconds\n") < 0) {
        loom_status st = csv_failed(c, "writing");
        csv_close(c);
        return st;
    }
    *out = (loom_train_observer){.user = c, .on_step = csv_step, .on_epoch = csv_epoch, .on_finish = csv_finish,
                                 .on_close = csv_close};
    return LOOM_OK;
}

/* ---- TensorBoard ---- */
typedef struct tb_log {
    loom_ctx *ctx;
    loom_tb_writer *w;
} tb_log;

static loom_status tb_step(void *user, const loom_step_result *s) {
    tb_log *b = user;
    const char *tags[] = {"train/loss", "train/accuracy", "train/lr", "train/samples_per_s"};
    double vals[] = {s->loss, s->accuracy, s->lr, s->samples_per_s};
    loom_status st = LOOM_OK;
    for (int k = 0; k < 4 && st == LOOM_OK; k++) st = loom_tb_scalar(b->ctx, b->w, tags[k], s->global_step, vals[k]);
    return st;
}

static loom_status tb_epoch(void *user, const loom_epoch_stats *es) {
    tb_log *b = user;
    const char *tags[] = {"epoch/train_loss", "epoch/train_acc", "epoch/val_loss",      "epoch/val_acc",
                          "epoch/test_loss",  "epoch/test_acc",  "epoch/lr",            "epoch/samples_per_s",
                          "epoch/data_wait_pct", "epoch/loss_scale", "epoch/skipped_steps"};
    /* without loss scaling (loss_scale NaN) there are no skipped steps to log */
    double vals[] = {es->train_loss, es->train_acc, es->val_loss, es->val_acc, es->test_loss, es->test_acc, es->lr,
                     es->samples_per_s, es->data_wait_pct, es->loss_scale,
                     isnan(es->loss_scale) ? NAN : (double)es->skipped_steps};
    loom_status st = LOOM_OK;
    for (int k = 0; k < 11 && st == LOOM_OK; k++)
        if (!isnan(vals[k])) st = loom_tb_scalar(b->ctx, b->w, tags[k], es->epoch, vals[k]);
    return st;
}

static void tb_close(void *user) {
    tb_log *b = user;
    loom_tb_close(b->w);
    free(b);
}

loom_status loom__tb_observer(loom_ctx *ctx, const char *dir, loom_train_observer *out) {
    tb_log *b = calloc(1, sizeof *b);
    if (!b) return loom__err(ctx, LOOM_ERR_OOM, "train: out of memory for the TensorBoard writer");
    b->ctx = ctx;
    loom_status st = loom_tb_open(ctx, dir, &b->w);
    if (st != LOOM_OK) {
        free(b);
        return st;
    }
    *out = (loom_train_observer){.user = b, .on_step = tb_step, .on_epoch = tb_epoch, .on_close = tb_close};
    return LOOM_OK;
}
