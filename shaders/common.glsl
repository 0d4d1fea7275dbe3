/* shaders/common.glsl — included by every shader (after #version and the
 * include extension): storage types and their load/store macros, dtype codes,
 * exact f32 -> f16 / bf16 rounding, Philox4x32-10, the global index, and
 * work-group reductions. Each variant (shaders/variants.txt) is compiled with
 * one storage define: T_F32, T_F16 or T_BF16 (or none for f32-only kernels).
 *
 * Storage: f32 is float[]; f16 and bf16 are uint16_t[] (16-bit storage only,
 * no 16-bit arithmetic); i32 is int[]; u8 is uint8_t[] (8-bit storage).
 * Arithmetic is always float. Conversions match core/dtype.c bit for bit:
 * f16 loads and f16 / bf16 stores are integer arithmetic (stores round to
 * nearest even; the driver's float->half rounding is not trusted, and
 * unpackHalf2x16 would quiet signaling NaNs), bf16 keeps loom_f32_to_bf16's
 * quiet-NaN rule. tests/test-vulkan.c checks them against core/dtype.c.
 *
 * Bindings: set 0, binding b, storage buffers (TENSOR_IN / TENSOR_OUT
 * below); on CPU devices bindings 10 and 11 are uniform texel buffers, views
 * of a dispatch's storage bindings (loom__vk_texel in vulkan.h: gemm_wide.comp's
 * TEXEL form, conv2d.comp's TEXEL_X, TEXEL_IN below). Push constants: each kernel declares
 * its own block (PUSH below) of 32-bit scalars in the order the host pushes
 * them (vulkan.h).
 *
 * Work-group size: the specialization constant 0 (the host picks it: 256 for
 * elementwise kernels, or the `local` of loom__vk_run_groups). A kernel that
 * uses group_sum / group_max defines LOOM_GROUP_REDUCE before including this
 * file (or passes it in variants.txt); the shared array holds LOOM_MAX_LOCAL.
 *
 * No contraction: results that must be two roundings (a * b + c) are written
 * with `precise` (NoContraction), as the CPU backend (C11, no -ffp-contract)
 * rounds them. */
#extension GL_EXT_shader_16bit_storage : enable
#extension GL_EXT_shader_8bit_storage : enable

layout(local_size_x_id = 0) in;

#define LOOM_MAX_LOCAL 256

/* slot indices, kind codes and dtype codes shared with the C side (glslang -I core) */
#include "params.h"

/* ---- conversions (core/dtype.c) ---- */
/* loom_f16_to_f32, bit for bit (unpackHalf2x16 would quiet signaling NaNs) */
float f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (e == 0u) return uintBitsToFloat(sign | floatBitsToUint(float(man) * (1.0 / 16777216.0))); /* exact */
    if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (man << 13));
    return uintBitsToFloat(sign | ((e + 112u) << 23) | (man << 13));
}
float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }

/* loom_f32_to_f16: round to nearest even, overflow to inf, NaN stays NaN */
uint f32_to_f16(float f) {
    uint x = floatBitsToUint(f);
    uint sign = (x >> 16) & 0x8000u;
    uint e8 = (x >> 23) & 0xffu;
    uint man = x & 0x7fffffu;
    if (e8 == 0xffu) return sign | 0x7c00u | (man != 0u ? (0x200u | (man >> 13)) : 0u);
    int e = int(e8) - 127 + 15;
    if (e >= 31) return sign | 0x7c00u;
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000u;
        uint shift = uint(14 - e); /* 14..24 */
        uint half_ = 1u << (shift - 1u);
        uint rest = man & ((1u << shift) - 1u);
        uint r = man >> shift;
        if (rest > half_ || (rest == half_ && (r & 1u) != 0u)) r++;
        return sign | r;
    }
    uint r = (uint(e) << 10) | (man >> 13);
    uint rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u) != 0u)) r++;
    return sign | r;
}

/* loom_f32_to_bf16 */
uint f32_to_bf16(float f) {
    uint x = floatBitsToUint(f);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0u) return ((x >> 16) | 0x40u) & 0xffffu;
    uint lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return x >> 16;
}

/* explicit dtypes: buf is a buffer array of the storage type, i an index */
#define LD_F32(buf, i) (buf[i])
#define ST_F32(buf, i, v) (buf[i] = (v))
#define LD_F16(buf, i) f16_to_f32(uint(buf[i]))
#define ST_F16(buf, i, v) (buf[i] = uint16_t(f32_to_f16(v)))
#define LD_BF16(buf, i) bf16_to_f32(uint(buf[i]))
#define ST_BF16(buf, i, v) (buf[i] = uint16_t(f32_to_bf16(v)))

/* the variant's storage type T and LD / ST for it */
#if defined(T_F32)
#define T float
#define LD LD_F32
#define ST ST_F32
#elif defined(T_F16)
#define T uint16_t
#define LD LD_F16
#define ST ST_F16
#elif defined(T_BF16)
#define T uint16_t
#define LD LD_BF16
#define ST ST_BF16
#endif

/* Texel inputs (CPU devices; the host binds them with loom__vk_texel, one
 * element per texel: R32_SFLOAT, or R16_UINT widened bit for bit as LD):
 * TEXEL_IN(s, name) declares `name` at texel binding 10 + s, LDT(name, i)
 * loads element i as float (the same index as the storage binding it views). */
#if defined(T_F32)
#define TEXEL_IN(s, name) layout(set = 0, binding = 10 + s) uniform samplerBuffer name
#define LDT(name, i) texelFetch(name, int(i)).x
#elif defined(T_F16)
#define TEXEL_IN(s, name) layout(set = 0, binding = 10 + s) uniform usamplerBuffer name
#define LDT(name, i) f16_to_f32(texelFetch(name, int(i)).x)
#elif defined(T_BF16)
#define TEXEL_IN(s, name) layout(set = 0, binding = 10 + s) uniform usamplerBuffer name
#define LDT(name, i) bf16_to_f32(texelFetch(name, int(i)).x)
#endif
/* LD0 / LD1: loads from bindings 0 and 1; with TEXEL01 (the *_t variants the
 * host picks with loom__vk_texel_variant) through their texel views */
#if defined(TEXEL01)
TEXEL_IN(0, in0_t);
TEXEL_IN(1, in1_t);
#define LD0(buf, i) LDT(in0_t, i)
#define LD1(buf, i) LDT(in1_t, i)
#else
#define LD0(buf, i) LD(buf, i)
#define LD1(buf, i) LD(buf, i)
#endif

/* Storage-buffer declarations: TENSOR_IN(0, T, a) declares `a` (T[]) at
 * binding 0, read-only; TENSOR_OUT may be written (and read). Buffers may
 * alias (in-place ops), so nothing is `restrict`. */
#define TENSOR_IN(b, type, name) layout(std430, set = 0, binding = b) readonly buffer B_##name { type name[]; }
#define TENSOR_OUT(b, type, name) layout(std430, set = 0, binding = b) buffer B_##name { type name[]; }
/* the plan's error slots (loom__vk_err) and per-step params (loom__vk_params) */
#define ERR_SLOTS(b) layout(std430, set = 0, binding = b) buffer B_err_slots { int err_slots[]; }
#define PARAMS(b) layout(std430, set = 0, binding = b) readonly buffer B_params { uint params[]; }
/* PUSH { uint a_off; ...; } pc; */
#define PUSH layout(push_constant) uniform Push

/* ---- indices ---- */
/* loom__vk_run_1d splits more than maxComputeWorkGroupCount[0] groups over y:
 * the flat index of this invocation (check it against n). */
uint loom_gid() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}
/* a / d for a < 2^22 without an integer division (lavapipe divides lane by
 * lane): the float quotient is within 1 of the true one; one correction */
uint loom_udiv22(uint a, uint d) {
    uint q = uint(float(a) * (1.0 / float(d)));
    if (q * d > a) q--;
    else if (a - q * d >= d) q++;
    return q;
}
/* 2x2 max pooling's rule (core's pool_argmax on a window a b / c d): the
 * first maximum in window order; a NaN replaces the maximum so far */
int loom_arg4(float a, float b, float c, float d) {
    int k = 0;
    float m = a;
    if (b > m || isnan(b)) m = b, k = 1;
    if (c > m || isnan(c)) m = c, k = 2;
    if (d > m || isnan(d)) k = 3;
    return k;
}
/* the flat work-group index (loom__vk_run_groups; check it against the count) */
uint loom_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

/* ---- Philox4x32-10, identical to core/rng.c loom_philox4x32_10 ---- */
uvec4 philox4x32_10(uvec4 c, uvec2 k) {
    for (int r = 0; r < 10; r++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += uvec2(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

/* loom_philox(seed, stream, counter): 64-bit values as (low, high) words */
uvec4 philox(uvec2 seed, uvec2 stream, uvec2 counter) {
    return philox4x32_10(uvec4(counter.x, counter.y, stream.x, stream.y), seed);
}

/* loom_u32_to_unit: 24-bit uniform in [0, 1) */
float u32_to_unit(uint x) { return float(x >> 8) * (1.0 / 16777216.0); }

/* ---- work-group reductions (define LOOM_GROUP_REDUCE first) ----
 * Tree reductions over the work-group (its size a power of two <= 256): every
 * invocation gets the result. Call from uniform control flow only. */
#ifdef LOOM_GROUP_REDUCE
shared float loom_red[LOOM_MAX_LOCAL];

float group_sum(float v) {
    uint l = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    loom_red[l] = v;
    barrier();
    for (uint h = n / 2u; h > 0u; h >>= 1) {
        if (l < h) loom_red[l] += loom_red[l + h];
        barrier();
    }
    float r = loom_red[0];
    barrier();
    return r;
}

float group_max(float v) {
    uint l = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    loom_red[l] = v;
    barrier();
    for (uint h = n / 2u; h > 0u; h >>= 1) {
        if (l < h) loom_red[l] = loom_red[l + h] > loom_red[l] ? loom_red[l + h] : loom_red[l];
        barrier();
    }
    float r = loom_red[0];
    barrier();
    return r;
}
#endif

/* ---- row kernels (with LOOM_GROUP_REDUCE): a work-group per row whose
 * invocations stride over it and meet in group reductions, or, with ROWS
 * (the *_rows variants for CPU devices, where lavapipe runs shared memory and
 * barriers slowly), one invocation per row walking it alone: ROW_ID() the
 * row, ROW_L / ROW_NL the invocation's start and stride, ROW_SUM / ROW_MAX
 * the reductions (plain values with ROWS). Call them from uniform control
 * flow. ---- */
#ifdef LOOM_GROUP_REDUCE
#if defined(ROWS)
#define ROW_ID() loom_gid()
#define ROW_L 0u
#define ROW_NL 1u
#define ROW_SUM(v) (v)
#define ROW_MAX(v) (v)
#else
#define ROW_ID() loom_group()
#define ROW_L gl_LocalInvocationID.x
#define ROW_NL gl_WorkGroupSize.x
#define ROW_SUM(v) group_sum(v)
#define ROW_MAX(v) group_max(v)
#endif
#endif
