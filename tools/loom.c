/* tools/loom.c — the `loom` command-line tool: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "loom/loom.h"

int loom_cmd_info(int argc, char **argv);
int loom_cmd_train(int argc, char **argv);
int loom_cmd_lr_find(int argc, char **argv);
int loom_cmd_plot(int argc, char **argv);
int loom_cmd_bench_loader(int argc, char **argv);
int loom_cmd_pack(int argc, char **argv);
int loom_cmd_pack_text(int argc, char **argv);
int loom_cmd_generate(int argc, char **argv);
int loom_cmd_compare(int argc, char **argv);
int loom_cmd_bench(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom <command> [options]\n"
            "commands:\n"
            "  info      version, backends built and available, devices, op table\n"
            "  train     train a model (mlp, cnn on images; gpt, transformer on tokens); see loom train --help\n"
            "  lr-find   the LR range test: loss against an exponential LR sweep, CSV + SVG\n"
            "  plot      loss and accuracy curves of a --log-csv log as SVG: loom plot run.csv -o out.svg\n"
            "  bench-loader  the data loader alone: images/s, workers, first-batch latency\n"
            "  pack      decode + resize a dataset once into a memory-mapped shard: loom pack --help\n"
            "  pack-text text files as byte-level tokens for a gpt, with a validation split: loom pack-text --help\n"
            "  generate  sample text from a trained gpt: loom generate --ckpt X --prompt '...'\n"
            "  compare   one model on every backend side by side: step and op times, memory, divergence\n"
            "  bench     the guide's table on a backend: baseline, loader workers, mixed precision\n"
            "  help      this message\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "info")) return loom_cmd_info(argc - 1, argv + 1);
    if (!strcmp(argv[1], "train")) return loom_cmd_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "lr-find")) return loom_cmd_lr_find(argc - 1, argv + 1);
    if (!strcmp(argv[1], "plot")) return loom_cmd_plot(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bench-loader")) return loom_cmd_bench_loader(argc - 1, argv + 1);
    if (!strcmp(argv[1], "pack")) return loom_cmd_pack(argc - 1, argv + 1);
    if (!strcmp(argv[1], "pack-text")) return loom_cmd_pack_text(argc - 1, argv + 1);
    if (!strcmp(argv[1], "generate")) return loom_cmd_generate(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare")) return loom_cmd_compare(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bench")) return loom_cmd_bench(argc - 1, argv + 1);
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "loom: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
