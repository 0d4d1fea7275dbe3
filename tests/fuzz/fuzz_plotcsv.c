/* tests/fuzz/fuzz_plotcsv.c — libFuzzer target for the CSV reader of
 * `loom plot` (tools/plot_csv.c, compiled in here): a run log or an lr-find
 * curve. The input is the file. A failure must say something; a success must
 * give finite points, no more per curve than rows read. */
#include "fuzz_util.h" /* first: its feature macros */

#include <math.h>

#include "../../tools/plot_csv.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_init("fuzz_plotcsv");
    if (size > (1 << 20)) return 0;
    loom__plot_csv p;
    char err[256] = "";
    if (loom__plot_csv_parse((const char *)data, size, &p, err, sizeof err) != 0) {
        if (!err[0]) fz_fail("fuzz_plotcsv", "an error without a message");
    } else {
        for (int k = 0; k < 8; k++) {
            if (p.s[k].n < 0 || p.s[k].n > p.rows) fz_fail("fuzz_plotcsv", "more points than rows");
            for (int i = 0; i < p.s[k].n; i++)
                if (!isfinite(p.s[k].x[i]) || !isfinite(p.s[k].y[i])) fz_fail("fuzz_plotcsv", "a non-finite point");
        }
    }
    loom__plot_csv_free(&p);
    return 0;
}
