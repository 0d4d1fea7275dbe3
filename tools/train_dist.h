/* tools/train_dist.h — the process group of a `loom train` / `loom lr-find`
 * run (--launcher, --dist-timeout; tools/train_dist.c). */
#ifndef LOOM_TOOLS_TRAIN_DIST_H
#define LOOM_TOOLS_TRAIN_DIST_H
#include <stdbool.h>

#include "loom/loom.h"

/* Join the group for --launcher auto|mpi|none with --dist-timeout
 * timeout_s (0 = the library's default) for a run of `model`. Ranks other
 * than 0 get *quiet set. Returns -1 to go on, else the exit code (the error
 * printed). */
int loom__train_open_dist(loom_ctx *ctx, const char *launcher, double timeout_s, const char *model, bool *quiet,
                          loom_dist **out);
/* After a run that ended with exit code rc: with several ranks and rc != 0,
 * say so and end the whole job (the others would wait for this rank). */
void loom__train_end_dist(loom_dist *dist, int rc);
#endif
