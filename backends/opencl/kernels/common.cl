/* backends/opencl/kernels/common.cl — shared definitions for every kernel
 * file: the storage type T and its load/store macros, explicit per-dtype
 * loads/stores, the dtype codes, Philox4x32-10, reduction helpers.
 *
 * The program is built once per storage dtype with -DLOOM_T_F32, -DLOOM_T_F16
 * or -DLOOM_T_BF16. Arithmetic is always float. Conversions match
 * core/dtype.c bit for bit: f16 via vload_half / vstore_half_rte (round to
 * nearest even; no cl_khr_fp16 needed), bf16 as ushort with the same
 * round-to-nearest-even and quiet-NaN rule as loom_f32_to_bf16.
 *
 * Contraction is off: a * b + c is two roundings, as in the CPU backend
 * (C11 without -ffp-contract), so elementwise results match it exactly. */
#pragma OPENCL FP_CONTRACT OFF

inline float bf16_to_f32(ushort h) { return as_float((uint)h << 16); }

inline ushort f32_to_bf16(float f) {
    uint x = as_uint(f);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (ushort)((x >> 16) | 0x40u); /* quiet NaN */
    uint lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (ushort)(x >> 16);
}

/* explicit dtypes: p is a __global pointer of the storage type */
#define LD_F32(p, i) ((p)[i])
#define ST_F32(p, i, v) ((p)[i] = (v))
#define LD_F16(p, i) vload_half((i), (p))
#define ST_F16(p, i, v) vstore_half_rte((v), (i), (p))
#define LD_BF16(p, i) bf16_to_f32((p)[i])
#define ST_BF16(p, i, v) ((p)[i] = f32_to_bf16(v))

/* the program's storage type */
#if defined(LOOM_T_F32)
typedef float T;
#define LD LD_F32
#define ST ST_F32
#elif defined(LOOM_T_F16)
typedef half T;
#define LD LD_F16
#define ST ST_F16
#elif defined(LOOM_T_BF16)
typedef ushort T;
#define LD LD_BF16
#define ST ST_BF16
#else
#error "build with -DLOOM_T_F32, -DLOOM_T_F16 or -DLOOM_T_BF16"
#endif

/* a ## b after both are expanded (LOOM_CAT(float, 16): float16) */
#define LOOM_CAT_(a, b) a##b
#define LOOM_CAT(a, b) LOOM_CAT_(a, b)

/* LDV(n, p): n consecutive elements p[0 .. n-1] of the storage type as a
 * float vector (n = 2, 4, 8, 16; may be a macro), one vector load, no
 * alignment beyond the element's */
#if defined(LOOM_T_F32)
#define LDV_(n, p) vload##n(0, (p))
#elif defined(LOOM_T_F16)
#define LDV_(n, p) vload_half##n(0, (p))
#else
#define LDV_(n, p) as_float##n(convert_uint##n(vload##n(0, (p))) << 16)
#endif
#define LDV(n, p) LDV_(n, p)

/* STV(n, x, p): the float n-vector x stored as n consecutive elements
 * p[0 .. n-1] of the storage type, each rounded as ST rounds it (n may be
 * a macro) */
#if defined(LOOM_T_F32)
#define STV_(n, x, p) vstore##n((x), 0, (p))
#elif defined(LOOM_T_F16)
#define STV_(n, x, p) vstore_half##n##_rte((x), 0, (p))
#else
#define STV_(n, x, p)                                       \
    {                                                       \
        float s_[n];                                        \
        vstore##n((x), 0, s_);                              \
        for (int e_ = 0; e_ < n; e_++) ST((p), e_, s_[e_]); \
    }
#endif
#define STV(n, x, p) STV_(n, x, p)

/* four (eight, sixteen) consecutive elements p[i ..] as a float4 (float8, float16), and the store
 * of a float4 (float8) */
#define LD4(p, i) LDV(4, (p) + (i))
#define ST4(p, i, v) STV(4, (v), (p) + (i))
#define LD8(p, i) LDV(8, (p) + (i))
#define ST8(p, i, v) STV(8, (v), (p) + (i))
#define LD16(p, i) LDV(16, (p) + (i))

/* ldv_edge<n>(p, have): the first `have` (<= n) elements at p as a float n-vector, zeros after;
 * stv_part<n>(p, have, x): the first `have` lanes of x stored at p, each rounded as ST rounds it */
#define LDV_EDGE_FN(n)                                                     \
    inline float##n ldv_edge##n(__global const T *p, long have) {          \
        float v[n];                                                        \
        for (int i = 0; i < n; i++) v[i] = i < have ? LD(p, i) : 0.0f;     \
        return vload##n(0, v);                                             \
    }                                                                      \
    inline void stv_part##n(__global T *p, long have, float##n x) {        \
        float v[n];                                                        \
        vstore##n(x, 0, v);                                                \
        for (int i = 0; i < have; i++) ST(p, i, v[i]);                     \
    }
LDV_EDGE_FN(8)
LDV_EDGE_FN(16)

/* the sum of a vector's lanes, halves added down to (x + y) + (z + w) */
inline float hsum8(float8 v) {
    float4 s = v.lo + v.hi;
    return (s.x + s.y) + (s.z + s.w);
}
inline float hsum16(float16 v) { return hsum8(v.lo + v.hi); }

/* Any float dtype through a byte pointer (element index i). */
inline float ld_any(__global const uchar *p, int dt, long i) {
    switch (dt) {
    case LOOM_K_DT_F16: return vload_half(i, (__global const half *)p);
    case LOOM_K_DT_BF16: return bf16_to_f32(((__global const ushort *)p)[i]);
    default: return ((__global const float *)p)[i];
    }
}

/* Philox4x32-10's ten rounds on the counter words c0..c3 (type UT: uint, or uintN for N counters
 * in lanes) and the key words kx, ky (uint), in place: identical to core/rng.c loom_philox4x32_10 */
#define PHILOX_ROUNDS(UT, c0, c1, c2, c3, kx, ky)                                   \
    for (int r_ = 0; r_ < 10; r_++) {                                               \
        UT hi0_ = mul_hi((UT)(0xD2511F53u), c0), lo0_ = (UT)(0xD2511F53u) * c0;     \
        UT hi1_ = mul_hi((UT)(0xCD9E8D57u), c2), lo1_ = (UT)(0xCD9E8D57u) * c2;     \
        c0 = hi1_ ^ c1 ^ (UT)(kx), c1 = lo1_, c2 = hi0_ ^ c3 ^ (UT)(ky), c3 = lo0_; \
        kx += 0x9E3779B9u, ky += 0xBB67AE85u;                                       \
    }

/* Philox4x32-10, identical to core/rng.c loom_philox4x32_10 / loom_philox. */
inline uint4 philox4x32_10(uint4 c, uint2 k) {
    uint c0 = c.x, c1 = c.y, c2 = c.z, c3 = c.w, kx = k.x, ky = k.y;
    PHILOX_ROUNDS(uint, c0, c1, c2, c3, kx, ky)
    return (uint4)(c0, c1, c2, c3);
}

inline uint4 philox(ulong seed, ulong stream, ulong counter) {
    return philox4x32_10((uint4)((uint)counter, (uint)(counter >> 32), (uint)stream, (uint)(stream >> 32)),
                         (uint2)((uint)seed, (uint)(seed >> 32)));
}

/* Work-group tree reductions over s[0..get_local_size(0)) (a power of two);
 * every item gets the result. */
inline float group_sum(__local float *s, float v) {
    int l = get_local_id(0), n = get_local_size(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = n / 2; h > 0; h >>= 1) {
        if (l < h) s[l] += s[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

inline float group_max(__local float *s, float v) {
    int l = get_local_id(0), n = get_local_size(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = n / 2; h > 0; h >>= 1) {
        if (l < h) s[l] = s[l + h] > s[l] ? s[l + h] : s[l];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* the capability probe program.c queries (preferred work-group multiple) */
__kernel void loom_probe(__global float *y) { y[get_global_id(0)] = 0.0f; }
