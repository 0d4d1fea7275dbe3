/* core/rng.c — Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011) and the maps loom builds on it. The
 * GPU backends implement the same functions; tests pin them to the published
 * known-answer vectors. */
#include <math.h>

#include "impl.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void loom_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

void loom_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)stream,
                             (uint32_t)(stream >> 32)};
    loom_philox4x32_10(ctr, key, out);
}

float loom_philox_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t w[4];
    loom_philox(seed, stream, i >> 2, w);
    return loom_u32_to_unit(w[i & 3]);
}

/* Normal number i uses block i/2 and its words (0,1) for even i, (2,3) for odd
 * i: Box-Muller with u1 in (0,1] (so log never sees 0) and u2 in [0,1). */
double loom_philox_normal(uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t w[4];
    loom_philox(seed, stream, i >> 1, w);
    int k = (int)(i & 1) * 2;
    double u1 = ((double)(w[k] >> 8) + 1.0) * (1.0 / 16777216.0);
    double u2 = (double)(w[k + 1] >> 8) * (1.0 / 16777216.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

uint64_t loom_hash_name(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

void loom__shuffle(int64_t *v, int64_t n, uint64_t seed, uint64_t stream) {
    for (int64_t i = n - 1; i > 0; i--) {
        uint32_t w[4];
        loom_philox(seed, stream, (uint64_t)i, w);
        uint64_t r = ((uint64_t)w[0] << 32 | w[1]) % (uint64_t)(i + 1);
        int64_t t = v[i];
        v[i] = v[r];
        v[r] = t;
    }
}
