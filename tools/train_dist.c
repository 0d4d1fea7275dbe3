/* tools/train_dist.c — `loom train` as one rank of a data-parallel job:
 * the --launcher choice, the group (loom/dist.h), and ending the whole job
 * when this rank fails. */
#include <stdio.h>
#include <string.h>

#include "loom/train.h"
#include "train_dist.h"

int loom__train_open_dist(loom_ctx *ctx, const char *launcher, double timeout_s, const char *model, bool *quiet,
                          loom_dist **out) {
    *out = NULL;
    loom_dist_desc dd = {.timeout_s = timeout_s};
    if (!strcmp(launcher, "mpi")) {
        dd.launcher = LOOM_DIST_MPI;
    } else if (!strcmp(launcher, "none")) {
        dd.launcher = LOOM_DIST_NONE;
    } else if (strcmp(launcher, "auto")) {
        fprintf(stderr, "loom train: bad value '%s' for --launcher (expected auto, mpi or none)\n", launcher);
        return 2;
    }
    if (loom_dist_create(ctx, &dd, out) != LOOM_OK) {
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx));
        return 2;
    }
    if (loom_dist_world(*out) > 1 && loom_model_is_text(model)) {
        fprintf(stderr, "loom train: %d processes (--launcher): data parallel is for the image models, not '%s'\n",
                loom_dist_world(*out), model);
        loom_dist_destroy(*out);
        *out = NULL;
        return 2;
    }
    if (loom_dist_rank(*out) != 0) *quiet = true;
    return -1;
}

void loom__train_end_dist(loom_dist *dist, int rc) {
    if (rc == 0 || loom_dist_world(dist) < 2) return;
    fprintf(stderr, "loom train: rank %d of %d failed: ending the job\n", loom_dist_rank(dist), loom_dist_world(dist));
    fflush(stdout), fflush(stderr);
    loom_dist_abort(dist, rc);
}
