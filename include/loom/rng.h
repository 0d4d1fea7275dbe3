/* loom/rng.h — the counter-based random number generator (Philox4x32-10).
 *
 * defines: loom_philox4x32_10, loom_philox_uniform, loom_philox_normal.
 *
 * Every random number in loom (parameter init, dropout, augmentation) is a
 * pure function of (seed, stream, counter), implemented identically in C,
 * CUDA, GLSL and OpenCL, so the same seed gives the same numbers on every
 * backend and in every thread order.
 *
 * Layout: key = {seed lo32, seed hi32}; counter block =
 * {counter lo32, counter hi32, stream lo32, stream hi32}.
 */
#ifndef LOOM_RNG_H
#define LOOM_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The raw 10-round Philox4x32 bijection (Salmon et al. 2011). */
void loom_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Four 32-bit words for (seed, stream, counter). */
void loom_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);

/* u32 -> float in [0, 1): (x >> 8) * 2^-24. */
static inline float loom_u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* The i-th uniform in [0,1) of stream (seed, stream): word i%4 of block i/4. */
float loom_philox_uniform(uint64_t seed, uint64_t stream, uint64_t i);
/* The i-th standard normal of stream (seed, stream): Box-Muller over words
 * (0,1) of block i/2 for even i, words (2,3) for odd i (cos branch only). */
double loom_philox_normal(uint64_t seed, uint64_t stream, uint64_t i);

/* FNV-1a 64-bit hash (used to turn a parameter name into a stream id). */
uint64_t loom_hash_name(const char *s);

#ifdef __cplusplus
}
#endif
#endif
