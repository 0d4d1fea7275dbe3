/* loader/tail_avx512_body.h — the row loop of loader/tail_avx512.c, included
 * there twice: TAIL_BODY named rows_body with TAIL_TARGET AVX-512 (F, BW,
 * DQ, VL) and TAIL_VB 0, and rows_body_vbmi with VBMI added and TAIL_VB 1.
 * With VBMI, 16 pixels travel as packed RGBx words (one vpermb from the 48
 * loaded bytes, or the gather's words), the composed brightness / contrast
 * table is looked up on all 48 bytes at once (lut64), and the u8 result is
 * stored by one vpermb; they are split into channels only for saturation,
 * hue, the gray sum and ToTensor + Normalize. Same bits either way
 * (tests/test-fuse.c runs both). TAIL_STAGES names its adjustments' loop. */
/* TAIL_STAGES: the job's adjustments in order on sixteen pixels, in p or
 * (*packed) as RGBx words in w */
TAIL_TARGET static inline __attribute__((always_inline)) void TAIL_STAGES(const loom__tail_rows *r, px16 *p, __m512i *w,
                                                                          bool *packed, __m512i ff, __m512 sat_f, __m512 sat_g) {
    for (int k = 0; k < r->ns; k++) {
        int kind = r->st[k].kind;
        if (kind == LOOM__TS_LUT) {
            const loom__tail_stage *q = &r->st[k];
#if TAIL_VB
            if (!*packed) *w = pack16(*p), *packed = true;
            *w = lut64(*w, q->lut);
#else
            for (int j = 0; j < q->nlin; j++) {
                const __m512 mul = _mm512_set1_ps(q->mul[j]), add = _mm512_set1_ps(q->add[j]);
                p->r = trunc_u8(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p->r), mul), add));
                p->g = trunc_u8(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p->g), mul), add));
                p->b = trunc_u8(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p->b), mul), add));
            }
#endif
            continue;
        }
        if (*packed) *p = split16(*w, ff), *packed = false;
        if (kind == LOOM__TS_SAT) sat16(p, sat_f, sat_g);
        else hue16(p, r->st[k].f);
    }
}

/* TAIL_BODY: columns [0, W16) of every row; AFF (the affine), CONTIG (rows loaded as
 * bytes), OUT (1: the tensor, 2: u8 pixels, 0: nothing) and GRAY (the gray
 * sum) are constants where the dispatcher calls it for the common cases, so
 * each gets its own loop without those branches. */
TAIL_TARGET static inline __attribute__((always_inline)) int64_t TAIL_BODY(loom__tail_rows *r, const bool AFF,
                                                                           const bool CONTIG, const int OUT, const bool GRAY) {
    const int64_t H = r->H, W = r->W, hw = H * W, W16 = W & ~(int64_t)15;
    if (W16 == 0 || r->npx * 3 + 8 > 0x7fffffff) return 0;
    __m512 sat_f, sat_g, fillv[3];
    norm16 nv[3];
    consts16(r, OUT == 1, &sat_f, &sat_g, fillv, nv);
    const void *base = r->base;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), ff = _mm512_set1_epi32(0xff);
    const __m512i last = _mm512_set1_epi32((int32_t)(r->npx - 1)), cstep = _mm512_set1_epi32((int32_t)r->cstep);
    const __m512i fill_r = _mm512_set1_epi32(r->fill[0]), fill_g = _mm512_set1_epi32(r->fill[1]),
                  fill_b = _mm512_set1_epi32(r->fill[2]);
    /* m[0] x and m[3] x per column in float (x = ox - hx) */
    float *fx0 = NULL, *fy0 = NULL;
    if (AFF) {
        if (!(fx0 = malloc(2 * (size_t)W16 * sizeof *fx0))) return 0; /* the next path does it all */
        fy0 = fx0 + W16;
        for (int64_t ox = 0; ox < W16; ox++) {
            double x = (double)(r->ax0 + r->axs * ox) - r->hx;
            fx0[ox] = (float)(r->m[0] * x), fy0[ox] = (float)(r->m[3] * x);
        }
    }
    const double M = fmax(fabs(r->m[0]) * r->hx + fabs(r->m[1]) * r->hy + fabs(r->m[2]) + fabs(r->hx),
                          fabs(r->m[3]) * r->hx + fabs(r->m[4]) * r->hy + fabs(r->m[5]) + fabs(r->hy)) + 1.0;
    /* tie: tail_avx2.c's bound (eight roundings of at most 2^-24 M, twice
     * over); here there are three (m0 x, the row's part, their sum) */
    const __m512 tie = _mm512_set1_ps((float)(0.5 - M * 0x1p-20)), zerof = _mm512_setzero_ps(),
                 Wf = _mm512_set1_ps((float)r->aw), Hf = _mm512_set1_ps((float)r->ah);
    /* loom__tail_px_at(y, x) = at0 + rowi y + cstep x (all within int32: npx * 3 + 8 fits) */
    const __m512i at0 = _mm512_set1_epi32((int32_t)(r->roff * r->pitch + r->coff)),
                  rowi = _mm512_set1_epi32((int32_t)(r->rstep * r->pitch));
    const bool reverse = r->cstep == -1 && OUT != 0; /* a flip's lanes back in image order (a sum needs none) */
#if !TAIL_VB
    const __m512i rev = _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
#else
    __m512i unpack, unpack_rev, pack;
    vb_tables(&unpack, &unpack_rev, &pack);
    const __m512i fill_w = pack16((px16){fill_r, fill_g, fill_b});
#endif
    enum { rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }; /* an immediate, even at -O0 */
    int64_t gray = 0;
    for (int64_t oy = 0; oy < H; oy++) {
        /* the row's part of the source point, rounded once (fx = m0 x + this: two roundings) */
        const double y = (double)(r->ay0 + r->ays * oy) - r->hy;
        const __m512 cxf = _mm512_set1_ps((float)(r->m[1] * y + r->m[2] + r->hx)),
                     cyf = _mm512_set1_ps((float)(r->m[4] * y + r->m[5] + r->hy));
        __m512i acc = _mm512_setzero_si512();
        for (int64_t ox = 0; ox < W16; ox += 16) {
            __mmask16 in = 0xffff;
            px16 p = {0};
            __m512i w = _mm512_setzero_si512();
            bool packed = false; /* the pixels are in w, not yet in p */
            if (CONTIG) {
                const uint8_t *q = r->base + (r->cstep > 0 ? loom__tail_px_at(r, oy, ox) : loom__tail_px_at(r, oy, ox + 15)) * 3;
#if TAIL_VB
                w = _mm512_permutexvar_epi8(reverse ? unpack_rev : unpack, _mm512_maskz_loadu_epi8(0xffffffffffffULL, q));
                packed = true;
#else
                p = load16(q);
                if (reverse)
                    p = (px16){_mm512_permutexvar_epi32(rev, p.r), _mm512_permutexvar_epi32(rev, p.g),
                               _mm512_permutexvar_epi32(rev, p.b)};
#endif
            } else {
                __m512i at;
                if (AFF) {
                    __m512 fx = _mm512_add_ps(_mm512_loadu_ps(fx0 + ox), cxf), fy = _mm512_add_ps(_mm512_loadu_ps(fy0 + ox), cyf);
                    __m512 rx = _mm512_roundscale_ps(fx, rnd), ry = _mm512_roundscale_ps(fy, rnd);
                    __mmask16 near = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(fx, rx)), tie, _CMP_GT_OQ) |
                                     _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(fy, ry)), tie, _CMP_GT_OQ);
                    in = _mm512_cmp_ps_mask(rx, zerof, _CMP_GE_OQ) & _mm512_cmp_ps_mask(rx, Wf, _CMP_LT_OQ) &
                         _mm512_cmp_ps_mask(ry, zerof, _CMP_GE_OQ) & _mm512_cmp_ps_mask(ry, Hf, _CMP_LT_OQ);
                    __m512i yi = _mm512_cvtps_epi32(ry), xi = _mm512_cvtps_epi32(rx);
                    at = _mm512_maskz_add_epi32(in, _mm512_add_epi32(at0, _mm512_mullo_epi32(rowi, yi)), _mm512_mullo_epi32(cstep, xi));
                    if (near) { /* those lanes again with the scalar arithmetic */
                        int32_t a[16];
                        _mm512_storeu_si512(a, at);
                        for (unsigned m = near; m; m &= m - 1) {
                            const int l = __builtin_ctz(m);
                            double fxd, fyd;
                            int64_t q;
                            loom__affine_point(r->m, r->hx, r->hy, r->ax0 + r->axs * (ox + l), r->ay0 + r->ays * oy, &fxd,
                                               &fyd);
                            bool ok = loom__nearest_at(fxd, fyd, r->aw, r->ah, &q);
                            a[l] = ok ? (int32_t)loom__tail_px_at(r, q / r->aw, q % r->aw) : 0;
                            in = ok ? (__mmask16)(in | (1u << l)) : (__mmask16)(in & ~(1u << l));
                        }
                        at = _mm512_loadu_si512(a);
                    }
                } else {
                    int64_t a0 = loom__tail_px_at(r, oy, ox);
                    at = _mm512_add_epi32(_mm512_set1_epi32((int32_t)a0), _mm512_mullo_epi32(lane, cstep));
                }
                __mmask16 is_last = _mm512_cmpeq_epi32_mask(at, last);
                __m512i off = _mm512_mask_sub_epi32(_mm512_add_epi32(at, _mm512_add_epi32(at, at)), is_last,
                                                    _mm512_add_epi32(at, _mm512_add_epi32(at, at)), _mm512_set1_epi32(1));
                w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, off, base, 1);
                w = _mm512_mask_srli_epi32(w, is_last, w, 8);
                packed = true;
            }
            if (packed && (!TAIL_VB || (AFF && GRAY))) p = split16(w, ff), packed = false;
            if (AFF && GRAY) { /* (else the lanes outside are replaced at the end) */
                p.r = _mm512_mask_blend_epi32(in, fill_r, p.r);
                p.g = _mm512_mask_blend_epi32(in, fill_g, p.g);
                p.b = _mm512_mask_blend_epi32(in, fill_b, p.b);
            }
            TAIL_STAGES(r, &p, &w, &packed, ff, sat_f, sat_g);
            if (packed && OUT != 2) p = split16(w, ff), packed = false;
            if (OUT == 1) {
                __m512i idx[3] = {p.r, p.g, p.b};
                for (int ch = 0; ch < 3; ch++) {
                    __m512 v = r->norm ? _mm512_mask_blend_ps(in, fillv[ch], normalize16(idx[ch], &nv[ch]))
                                       : _mm512_mask_i32gather_ps(fillv[ch], in, idx[ch], r->lut[ch], 4);
                    float *o = r->x + (size_t)ch * (size_t)hw + (size_t)(oy * W + ox);
                    if (((uintptr_t)o & 63) == 0) _mm512_stream_ps(o, v);
                    else _mm512_storeu_ps(o, v);
                }
            } else if (OUT == 2 && packed) {
#if TAIL_VB
                if (AFF) w = _mm512_mask_blend_epi32(in, fill_w, w); /* the fill is written after the adjustments */
                _mm512_mask_storeu_epi8(r->dst + (oy * W + ox) * 3, 0xffffffffffffULL, _mm512_permutexvar_epi8(pack, w));
                if (GRAY) p = split16(w, ff); /* (AFF with GRAY was split above: no fill here) */
#endif
            } else if (OUT == 2) {
                if (AFF) { /* the fill is written after the adjustments */
                    p.r = _mm512_mask_blend_epi32(in, fill_r, p.r);
                    p.g = _mm512_mask_blend_epi32(in, fill_g, p.g);
                    p.b = _mm512_mask_blend_epi32(in, fill_b, p.b);
                }
                uint8_t *o = r->dst + (oy * W + ox) * 3;
#if TAIL_VB
                _mm512_mask_storeu_epi8(o, 0xffffffffffffULL, _mm512_permutexvar_epi8(pack, pack16(p)));
#else
                loom__store_rgb8(o, _mm512_castsi512_si256(p.r), _mm512_castsi512_si256(p.g), _mm512_castsi512_si256(p.b));
                loom__store_rgb8(o + 24, _mm512_extracti64x4_epi64(p.r, 1), _mm512_extracti64x4_epi64(p.g, 1),
                                 _mm512_extracti64x4_epi64(p.b, 1));
#endif
            }
            if (GRAY)
                acc = _mm512_add_epi32(acc, gray16(_mm512_cvtepi32_ps(p.r), _mm512_cvtepi32_ps(p.g), _mm512_cvtepi32_ps(p.b)));
        }
        if (GRAY) gray += _mm512_reduce_add_epi32(acc);
    }
    free(fx0);
    if (OUT == 1) _mm_sfence(); /* the streaming stores, before the batch is handed over */
    r->gray_sum += gray;
    return W16;
}

