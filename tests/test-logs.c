/* tests/test-logs.c — training logs: a short run (synthetic data) writes the
 * CSV log (a row per step and per epoch) and a TensorBoard event file; the
 * event file is read back with the `tensorboard` Python package's
 * EventFileLoader, which must find every logged scalar with the right count
 * (skipped, exit 77, when python3 or tensorboard is missing). */
#include <math.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>

#include "loom/train.h"
#include "testutil.h"

static void make_data(loom_dataset *ds, int64_t n) {
    ds->n = n, ds->c = 1, ds->h = 8, ds->w = 8, ds->num_classes = 4;
    ds->pixels = malloc((size_t)n * 64);
    ds->labels = malloc((size_t)n * sizeof *ds->labels);
    uint32_t s = 9;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        int k = (int)(s >> 30);
        ds->labels[i] = k;
        for (int p = 0; p < 64; p++) {
            s = s * 1664525u + 1013904223u;
            int q = (p / 8 >= 4) * 2 + (p % 8 >= 4);
            ds->pixels[i * 64 + p] = (uint8_t)((s >> 25) + (q == k ? 110 : 20));
        }
    }
}

static const char *py =
    "import sys, glob\n"
    "try:\n"
    "    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader\n"
    "    from tensorboard.compat.proto import event_pb2\n"
    "except Exception as e:\n"
    "    print('SKIP: tensorboard not importable:', e); sys.exit(77)\n"
    "files = glob.glob('logs-tb/events.out.tfevents.*')\n"
    "assert len(files) == 1, files\n"
    "counts, version = {}, None\n"
    "for ev in EventFileLoader(files[0]).Load():\n"
    "    if ev.file_version: version = ev.file_version\n"
    "    for v in ev.summary.value:\n"
    "        val = v.simple_value if v.HasField('simple_value') else float(v.tensor.float_val[0])\n"
    "        assert val == val, (v.tag, val)\n"
    "        counts[v.tag] = counts.get(v.tag, 0) + 1\n"
    "want = {'train/loss': 16, 'train/accuracy': 16, 'train/lr': 16, 'train/samples_per_s': 16}\n"
    "for t in ('train_loss', 'train_acc', 'val_loss', 'val_acc', 'lr', 'samples_per_s', 'data_wait_pct', 'loss_scale',\n"
    "          'skipped_steps'): want['epoch/' + t] = 2\n"
    "print('version', version, 'scalars', sorted(counts.items()))\n"
    "assert version == 'brain.Event:2', version\n"
    "assert counts == want, (counts, want)\n"
    "print('OK')\n";

int main(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    loom_dataset data;
    make_data(&data, 320);
    system("rm -rf logs-tb");
    loom_trainer_desc d = {.data = {.train = &data, .batch = 32, .val_split = 0.2, .mean = 0.3f, .std = 0.3f},
                           .model = {.net.arch = "mlp", .amp = LOOM_F16}, /* mixed precision: the loss scale is logged too */
                           .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.05}},
                           .run = {.backend = "cpu", .epochs = 2, .seed = 1},
                           .log = {.csv = "logs.csv", .tensorboard_dir = "logs-tb"}};
    loom_train_result r;
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    /* CSV: header, 8 step rows and an epoch row per epoch */
    FILE *f = fopen("logs.csv", "r");
    char line[512];
    int steps = 0, epochs = 0, lines = 0;
    bool header = false;
    while (f && fgets(line, sizeof line, f)) {
        if (lines++ == 0) header = !strncmp(line, "kind,epoch,step,loss,accuracy,lr,samples_per_s,val_loss,val_acc", 62);
        steps += !strncmp(line, "step,", 5);
        epochs += !strncmp(line, "epoch,", 6);
    }
    if (f) fclose(f);
    CHECK(header && steps == 16 && epochs == 2, "CSV: header %d, %d step rows (16), %d epoch rows (2)", header, steps, epochs);
    remove("logs.csv");
    /* errors name the path */
    d.log.csv = "/nonexistent-dir/x.csv";
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_IO && strstr(loom_last_error(ctx), "/nonexistent-dir/x.csv"),
          "unwritable CSV log: '%s'", loom_last_error(ctx));
    loom_dataset_free(&data);
    loom_ctx_destroy(ctx);

    f = fopen("check_tb.py", "w");
    fputs(py, f);
    fclose(f);
    int rc = system("python3 check_tb.py");
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
    remove("check_tb.py");
    system("rm -rf logs-tb");
    if (rc == 77 || rc == 127) {
        if (tu_failed) return tu_summary();
        return tu_skip("the TensorBoard event file was not read back: python3 with the tensorboard package is missing (pip install tensorboard)");
    }
    CHECK(rc == 0, "tensorboard's EventFileLoader reads every scalar back (python exit %d)", rc);
    return tu_summary();
}
