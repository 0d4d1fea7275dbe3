/* bench/host_overhead.c — per-step host time of a compiled plan against its
 * op count: chains of 10 and 500 tiny elementwise ops (x (16) -> x * 1.0001
 * -> ...), so device work is negligible and what is timed is the host side of
 * loom_plan_run: recording-once backends (Vulkan: one command buffer,
 * resubmitted; CUDA: a graph replay) should cost about the same per step for
 * both, while a backend that enqueues every op each step (OpenCL, the CPU
 * dispatcher) grows with the op count.
 *
 * Per backend and chain length: wall time per step (best of 5 rounds of 200
 * steps) and host CPU time per step of the calling thread
 * (CLOCK_THREAD_CPUTIME_ID over the same rounds: loom's own work, not the device's; on
 * lavapipe and PoCL the "device" is other threads of this process, so the
 * wall time there is device time). Usage: bench-host_overhead
 * [--backend NAME]... (default: every available backend). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/loom.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* this thread's CPU time: lavapipe and PoCL run the device work on threads of their own */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* best wall and cpu seconds per step of a chain of n ops; false on error */
static bool measure(loom_ctx *ctx, loom_backend *be, int n, double *wall, double *cpu) {
    loom_graph *g;
    loom_graph_create(ctx, NULL, &g);
    loom_tensor *x = loom_input(g, "x", LOOM_F32, 1, (int64_t[]){16});
    for (int i = 0; i < n; i++) x = loom_scale(g, x, 1.0001);
    loom_keep(x);
    loom_plan *p = NULL;
    bool ok = loom_plan_compile(g, be, &(loom_plan_desc){.no_reuse = true}, &p) == LOOM_OK;
    *wall = *cpu = 1e30;
    for (int r = 0; ok && r < 6; r++) {
        double t0 = now_s(), c0 = cpu_s();
        for (int s = 0; ok && s < 200; s++) ok = loom_plan_run(p) == LOOM_OK;
        double w = (now_s() - t0) / 200, c = (cpu_s() - c0) / 200;
        if (r > 0 && w < *wall) *wall = w; /* round 0 warms up (pipelines, graph capture) */
        if (r > 0 && c < *cpu) *cpu = c;
    }
    if (!ok) fprintf(stderr, "%s, %d ops: %s\n", loom_backend_name(be), n, loom_last_error(ctx));
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return ok;
}

int main(int argc, char **argv) {
    const char *want[8];
    int nwant = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc && nwant < 8)
            want[nwant++] = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--backend NAME]...\n", argv[0]);
            return 2;
        }
    }
    if (!nwant) nwant = loom_backend_list(want, 8);
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    printf("host time per plan run, chains of tiny scale ops (best of 5 x 200 runs)\n");
    printf("| backend | ops | wall us/step | host cpu us/step | cpu per op us |\n|---|---|---|---|---|\n");
    int rc = 0;
    for (int b = 0; b < nwant; b++) {
        const char *why = NULL;
        if (!loom_backend_available(ctx, want[b], &why)) {
            printf("| %s | - | not available: %s | | |\n", want[b], why ? why : "?");
            continue;
        }
        loom_backend *be;
        if (loom_backend_create(ctx, want[b], NULL, &be) != LOOM_OK) {
            printf("| %s | - | %s | | |\n", want[b], loom_last_error(ctx));
            rc = 1;
            continue;
        }
        const int ns[2] = {10, 500};
        for (int k = 0; k < 2; k++) {
            double w, c;
            if (!measure(ctx, be, ns[k], &w, &c)) {
                rc = 1;
                continue;
            }
            printf("| %s | %d | %.1f | %.1f | %.3f |\n", want[b], ns[k], 1e6 * w, 1e6 * c, 1e6 * c / ns[k]);
        }
        loom_backend_destroy(be);
    }
    loom_ctx_destroy(ctx);
    return rc;
}
