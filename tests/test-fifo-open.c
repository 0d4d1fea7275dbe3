/* tests/test-fifo-open.c — every file opener of the loader refuses a FIFO
 * (or another non-regular file) in place of its file without blocking: a
 * token file, a shard, a .npy array and an IDX file, each named by a FIFO
 * that no one writes to. An alarm turns a hang into a failure. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/loader.h"
#include "loom/npy.h"
#include "testutil.h"

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test-fifo-open: timed out (an open blocks on a FIFO)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
}

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(30);
    loom_ctx *ctx;
    char dir[256], fifo[300];
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK || !tu_tmpdir("fifo-open", dir, sizeof dir)) return 1;
    snprintf(fifo, sizeof fifo, "%s/data.bin", dir);
    if (mkfifo(fifo, 0600) != 0) return tu_skip("cannot make a FIFO here");
    loom_source *src = NULL;
    loom_status st = loom_source_open_tokens(ctx, fifo, &(loom_tokens_desc){.seq_len = 4}, &src);
    CHECK(st == LOOM_ERR_IO && !src && strstr(loom_last_error(ctx), fifo), "tokens: %s '%s'", loom_status_str(st),
          loom_last_error(ctx));
    st = loom_source_open_shard(ctx, fifo, &src);
    CHECK(st == LOOM_ERR_IO && !src && strstr(loom_last_error(ctx), fifo), "shard: %s '%s'", loom_status_str(st),
          loom_last_error(ctx));
    loom_npy a = {0};
    st = loom_npy_read(ctx, fifo, &a);
    CHECK(st != LOOM_OK && strstr(loom_last_error(ctx), fifo), "npy: %s '%s'", loom_status_str(st), loom_last_error(ctx));
    loom_npy_free(&a);
    loom_dataset ds = {0};
    st = loom_dataset_load_idx(ctx, fifo, fifo, &ds);
    CHECK(st != LOOM_OK && strstr(loom_last_error(ctx), fifo), "idx: %s '%s'", loom_status_str(st), loom_last_error(ctx));
    tu_rm_rf(dir);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
