/* core/prefetch.h — software prefetch for streaming loops on the host: the CPU
 * backend's kernels and the loader's passes.
 *
 * A loop that spends a few dozen instructions per 64-byte line (GELU's CDF,
 * batch norm's sums, layer norm) keeps only a handful of lines in flight
 * through the out-of-order window; where the hardware prefetchers do not run
 * ahead of it (the VMs loom is measured on), every line then waits the full
 * memory latency: GELU over a 16 MB tensor took 2.2 ns per element against
 * 1.0 with one prefetch per line 4 KB ahead, and 1.1 when the tensor sat in
 * L2 (bench/results/2026-12-06-cpu-prefetch.md). A prefetch is a hint: it
 * never faults, changes no result, and on a core whose own prefetchers keep
 * up it costs one instruction per line.
 *
 * The addresses are formed as integers, so that a hint past the end of an
 * array is not pointer arithmetic outside the object. */
#ifndef LOOM_CORE_PREFETCH_H
#define LOOM_CORE_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

/* how far ahead of a stream's current line to ask, in bytes */
#define LOOM__PF_AHEAD 4096

/* one cache line of p + ahead bytes (read) */
static inline __attribute__((always_inline)) void loom__prefetch(const void *p, int64_t ahead) {
    __builtin_prefetch((const void *)((uintptr_t)p + (uintptr_t)ahead), 0, 3);
}

/* every line of [p, p + bytes) (read): a stream the loop will reach next,
 * such as the next image's plane of a batch-norm channel */
static inline __attribute__((always_inline)) void loom__prefetch_span(const void *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch((const void *)((uintptr_t)p + o), 0, 3);
}

#endif
