/* backends/cuda/common.cuh — device helpers shared by every ops/<family>.cu:
 * loads and stores of the storage types (float, __half, loom__bf16) with
 * core/dtype.c's rounding, loads of any float dtype through a byte pointer,
 * Philox4x32-10 (core/rng.c), and block tree reductions.
 *
 * Arithmetic is float. f16 stores use __float2half_rn (round to nearest
 * even, subnormals and overflow to inf as loom_f32_to_f16); bf16 stores use
 * the same round-to-nearest-even and quiet-NaN rule as loom_f32_to_bf16.
 * The backend is compiled with --fmad=false: a * b + c rounds twice, as in
 * the CPU backend's C code. */
#ifndef LOOM_CUDA_COMMON_CUH
#define LOOM_CUDA_COMMON_CUH

#include "cuda.h"

__device__ __forceinline__ float bf16_to_f32(uint16_t h) { return __uint_as_float((unsigned)h << 16); }

__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
    unsigned x = __float_as_uint(f);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    unsigned lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

/* float value of one stored element */
__device__ __forceinline__ float ldf(float v) { return v; }
__device__ __forceinline__ float ldf(__half v) { return __half2float(v); }
__device__ __forceinline__ float ldf(loom__bf16 v) { return bf16_to_f32(v.u); }

/* a float rounded to storage type T */
template <typename T> __device__ __forceinline__ T stf(float v);
template <> __device__ __forceinline__ float stf<float>(float v) { return v; }
template <> __device__ __forceinline__ __half stf<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ loom__bf16 stf<loom__bf16>(float v) {
    loom__bf16 r;
    r.u = f32_to_bf16(v);
    return r;
}

/* p[i] = v rounded to T */
template <typename T> __device__ __forceinline__ void st(T *p, int64_t i, float v) { p[i] = stf<T>(v); }

/* Any float dtype through a byte pointer (element index i). */
__device__ __forceinline__ float ld_any(const unsigned char *p, int dt, int64_t i) {
    switch (dt) {
    case LOOM_K_DT_F16: return __half2float(((const __half *)p)[i]);
    case LOOM_K_DT_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Philox4x32-10, identical to core/rng.c loom_philox4x32_10 / loom_philox. */
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
#pragma unroll
    for (int r = 0; r < 10; r++) {
        unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += 0x9E3779B9u;
        k.y += 0xBB67AE85u;
    }
    return c;
}

__device__ __forceinline__ uint4 philox(uint64_t seed, uint64_t stream, uint64_t counter) {
    return philox4x32_10(make_uint4((unsigned)counter, (unsigned)(counter >> 32), (unsigned)stream, (unsigned)(stream >> 32)),
                         make_uint2((unsigned)seed, (unsigned)(seed >> 32)));
}

/* Block tree reductions over the block's blockDim.x threads (a power of
 * two), in the dynamic shared memory (blockDim.x floats); every thread gets
 * the result. Every thread of the block must call them. Same tree as the
 * OpenCL backend's group_sum / group_max. */
extern __shared__ float loom_smem[];

__device__ __forceinline__ float block_sum(float v) {
    int l = threadIdx.x, n = blockDim.x;
    loom_smem[l] = v;
    __syncthreads();
    for (int h = n / 2; h > 0; h >>= 1) {
        if (l < h) loom_smem[l] += loom_smem[l + h];
        __syncthreads();
    }
    float r = loom_smem[0];
    __syncthreads();
    return r;
}

__device__ __forceinline__ float block_max(float v) {
    int l = threadIdx.x, n = blockDim.x;
    loom_smem[l] = v;
    __syncthreads();
    for (int h = n / 2; h > 0; h >>= 1) {
        if (l < h) loom_smem[l] = loom_smem[l + h] > loom_smem[l] ? loom_smem[l + h] : loom_smem[l];
        __syncthreads();
    }
    float r = loom_smem[0];
    __syncthreads();
    return r;
}

/* global index of this thread in a 1-D grid */
__device__ __forceinline__ int64_t gid1() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }

/* A small geometry table passed by value (kernel parameter space). */
template <int N> struct loom__cu_tab {
    int64_t v[N];
};

#endif
