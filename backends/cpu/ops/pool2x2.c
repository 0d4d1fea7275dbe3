/* backends/cpu/ops/pool2x2.c — 2x2 stride-2 max pooling of one plane and its
 * gradient with AVX-512, for the CPU backend's pool kernels (ops/pool2d.c)
 * and the fused batch-norm passes (fuse_kernels.c).
 *
 * The scalar loops of f32_inline.h vectorise over windows, 8 per AVX2
 * vector, so a 7- or 14-window row (the cnn's 14x14 and 28x28 planes) runs
 * mostly in the scalar tail. Here a vector holds 16 input columns of a row
 * pair (8 windows; a masked tail for the rest): the two columns of a window
 * sit in adjacent lanes, a swap within lane pairs gives each lane its
 * neighbour, and both lanes of a window compute its maximum with the same
 * selects in the same order as the scalar code, so the results are the same
 * bits. The gradient's dy is widened to lane pairs by a permute; its four
 * destinations are masked selects of it. A row pair with a NaN is redone
 * by the scalar rule (loom__arg4), as the scalar loops do. */
#include "../f32_inline.h"
#include "../vmath.h"

bool loom__max2_avx512_ok(void) {
    static int ok = -1;
    if (ok < 0) {
        ok = LOOM__X86 && LOOM__HAS("avx512f") && loom__env_switch("LOOM_CPU_POOL_AVX512") != 0;
    }
    return ok;
}

#if LOOM__X86
#include <immintrin.h>

#define EVEN ((__mmask16)0x5555)

/* the window maxima of 16 lanes of a row pair; *a..*d: each lane's view of
 * its window (a, b the top row's two columns, c, d the bottom row's) */
LOOM__TARGET("avx512f") static inline __m512 win_max(__m512 r0, __m512 r1, __m512 *a, __m512 *b, __m512 *c,
                                                      __m512 *d) {
    __m512 s0 = _mm512_permute_ps(r0, 0xB1), s1 = _mm512_permute_ps(r1, 0xB1); /* swap within lane pairs */
    *a = _mm512_mask_blend_ps(EVEN, s0, r0), *b = _mm512_mask_blend_ps(EVEN, r0, s0);
    *c = _mm512_mask_blend_ps(EVEN, s1, r1), *d = _mm512_mask_blend_ps(EVEN, r1, s1);
    __m512 m = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(*a, *b, _CMP_GE_OQ), *b, *a); /* a >= b ? a : b */
    __m512 n = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(*c, *d, _CMP_GE_OQ), *d, *c);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(m, n, _CMP_GE_OQ), n, m);
}

static inline __mmask16 lanes(int64_t n) { return (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1); }

LOOM__TARGET("avx512f") void loom__max2_plane_avx512(const float *x, float *y, int64_t H, int64_t W, int64_t OH,
                                                     int64_t OW) {
    (void)H;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    const int64_t L = 2 * OW;
    for (int64_t i = 0; i < OH; i++) {
        const float *r0 = x + 2 * i * W, *r1 = r0 + W;
        float *yr = y + i * OW;
        __mmask16 bad = 0;
        for (int64_t k = 0; k < L; k += 16) {
            __mmask16 m = lanes(L - k);
            __m512 v0 = _mm512_maskz_loadu_ps(m, r0 + k), v1 = _mm512_maskz_loadu_ps(m, r1 + k), a, b, c, d;
            __m512 r = win_max(v0, v1, &a, &b, &c, &d);
            bad |= _mm512_mask_cmp_ps_mask(m, v0, v1, _CMP_UNORD_Q);
            _mm512_mask_storeu_ps(yr + k / 2, lanes((L - k) / 2), _mm512_permutexvar_ps(even, r));
        }
        for (int64_t j = 0; bad && j < OW; j++) { /* a NaN in the row pair: the scalar rule */
            float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
            int q = loom__arg4(a, b, c, d);
            yr[j] = q == 0 ? a : q == 1 ? b : q == 2 ? c : d;
        }
    }
}

LOOM__TARGET("avx512f") void loom__max2_grad_plane_avx512(const float *x, const float *dy, float *dx, int64_t H,
                                                          int64_t W, int64_t OH, int64_t OW) {
    if ((H & 1) || (W & 1)) memset(dx, 0, (size_t)(H * W) * sizeof *dx);
    const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const int64_t L = 2 * OW;
    for (int64_t i = 0; i < OH; i++) {
        const float *r0 = x + 2 * i * W, *r1 = r0 + W, *g = dy + i * OW;
        float *d0 = dx + 2 * i * W, *d1 = d0 + W;
        __mmask16 bad = 0;
        for (int64_t k = 0; k < L; k += 16) {
            __mmask16 m = lanes(L - k);
            __m512 v0 = _mm512_maskz_loadu_ps(m, r0 + k), v1 = _mm512_maskz_loadu_ps(m, r1 + k), a, b, c, d;
            __m512 r = win_max(v0, v1, &a, &b, &c, &d);
            bad |= _mm512_mask_cmp_ps_mask(m, v0, v1, _CMP_UNORD_Q);
            __mmask16 e0 = _mm512_cmp_ps_mask(a, r, _CMP_EQ_OQ);
            __mmask16 e1 = (__mmask16)(~e0 & _mm512_cmp_ps_mask(b, r, _CMP_EQ_OQ));
            __mmask16 e2 = (__mmask16)(~(e0 | e1) & _mm512_cmp_ps_mask(c, r, _CMP_EQ_OQ));
            __mmask16 e3 = (__mmask16)~(e0 | e1 | e2);
            __mmask16 top = (__mmask16)((EVEN & e0) | (~EVEN & e1)), bot = (__mmask16)((EVEN & e2) | (~EVEN & e3));
            __m512 gv = _mm512_permutexvar_ps(pairs, _mm512_maskz_loadu_ps(lanes((L - k) / 2), g + k / 2));
            _mm512_mask_storeu_ps(d0 + k, m, _mm512_maskz_mov_ps(top, gv));
            _mm512_mask_storeu_ps(d1 + k, m, _mm512_maskz_mov_ps(bot, gv));
        }
        if (bad) loom__max2_grad_row(r0, r1, g, d0, d1, OW); /* a NaN in the row pair: the scalar rule */
    }
}
#else
void loom__max2_plane_avx512(const float *x, float *y, int64_t H, int64_t W, int64_t OH, int64_t OW) {
    loom__max2_plane(x, y, H, W, OH, OW);
}
void loom__max2_grad_plane_avx512(const float *x, const float *dy, float *dx, int64_t H, int64_t W, int64_t OH,
                                  int64_t OW) {
    loom__max2_grad_plane(x, dy, dx, H, W, OH, OW);
}
#endif
