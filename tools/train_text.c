/* tools/train_text.c — where the token files of a text model's `loom train`
 * run are: a token file or a directory, and the validation file beside it;
 * and the --profile table of any `loom train` run. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/text.h"
#include "train_text.h"

static bool is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

loom_status loom__text_data(loom_ctx *ctx, const char *data_dir, int seq_len, int vocab, char *train, char *val,
                            int64_t *n) {
    *n = 0;
    train[0] = val[0] = 0;
    if (!data_dir)
        return loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "text models read token files: give --data-dir FILE or DIR "
                                 "(`loom pack-text` writes them)");
    struct stat sb;
    if (stat(data_dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(train, 4096, "%s/train.bin", data_dir);
        snprintf(val, 4096, "%s/val.bin", data_dir);
        if (!is_file(val)) snprintf(val, 4096, "%s/train.val.bin", data_dir);
    } else {
        snprintf(train, 4096, "%s", data_dir);
        if (!loom_text_val_path(train, val, 4096)) val[0] = 0;
    }
    if (!is_file(val)) val[0] = 0;
    loom_source *src;
    loom_status st = loom_source_open_tokens(ctx, train, &(loom_tokens_desc){.seq_len = seq_len, .vocab_size = vocab}, &src);
    if (st != LOOM_OK) return st;
    *n = src->n;
    loom_source_destroy(src);
    return LOOM_OK;
}

void loom__print_profile(const loom_train_result *r) {
    if (r->n_profile <= 0) return;
    double total = 0;
    for (int i = 0; i < r->n_profile; i++) total += r->profile[i].seconds;
    printf("profile: training step, top ops by time (%s backend)\n", r->backend);
    for (int i = 0; i < r->n_profile; i++)
        printf("  %-26s %8.3f ms/step  %5.1f%%\n", r->profile[i].op,
               1e3 * r->profile[i].seconds / (double)(r->profile[i].runs ? r->profile[i].runs : 1),
               100 * r->profile[i].seconds / (total > 0 ? total : 1));
}
