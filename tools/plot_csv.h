/* tools/plot_csv.h — the CSV reader of `loom plot` (tools/plot_csv.c): a
 * `loom train --log-csv` log or a `loom lr-find` curve, parsed from memory
 * (so tests/fuzz/fuzz_plotcsv.c can drive it) into the plot's series. */
#ifndef LOOM_TOOLS_PLOT_CSV_H
#define LOOM_TOOLS_PLOT_CSV_H
#include <stdbool.h>
#include <stddef.h>

/* One curve: n points (x, y), finite y only. */
typedef struct loom__plot_xy {
    double *x, *y;
    int n, cap;
} loom__plot_xy;

/* What a CSV holds. A run log: s[0..3] loss per step and train/val/test
 * loss per epoch, s[4..7] the accuracies likewise. An lr-find curve
 * (lrfind): s[0] the loss and s[1] the smoothed loss against the LR. */
typedef struct loom__plot_csv {
    bool lrfind;
    double suggestion; /* lr-find: the suggested LR (NaN: none) */
    loom__plot_xy s[8];
    int rows;          /* data rows read */
} loom__plot_csv;

/* Parse len bytes of text (no NUL needed). 0 on success; -1 with a message
 * in err ("line N: what is wrong") for text that is not such a CSV: a NUL
 * byte, no header, a header without the needed columns, a row with another
 * field count than the header, a field that is not a number, an unknown row
 * kind, or out of memory. Lines may be of any length. *out is freed by
 * loom__plot_csv_free either way. */
int loom__plot_csv_parse(const char *text, size_t len, loom__plot_csv *out, char *err, size_t errlen);
void loom__plot_csv_free(loom__plot_csv *p);

#endif
