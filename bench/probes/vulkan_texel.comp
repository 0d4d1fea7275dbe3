/* bench/probes/vulkan_texel.comp — the GEMM of bench/probes/vulkan_texel.c:
 * C (n, n) = A (n, n) B (n, n), f32, row-major, n a multiple of 8*RN and RM.
 * Work-groups of 8 invocations; each invocation keeps an RM x RN block of C
 * in registers and loads A and B four elements (one vec4) at a time, either
 * from storage buffers (the loads of shaders/gemm_wide.comp) or, with
 * -DTEXEL, from uniform texel buffers (R32G32B32A32_SFLOAT, texelFetch). */
#version 450
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 8) in;
#ifdef TEXEL
layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer B;
#define LDA(i) texelFetch(A, int(i))
#define LDB(i) texelFetch(B, int(i))
#else
layout(std430, binding = 0) readonly buffer AB { vec4 A[]; };
layout(std430, binding = 1) readonly buffer BB { vec4 B[]; };
#define LDA(i) A[i]
#define LDB(i) B[i]
#endif
layout(std430, binding = 2) writeonly buffer CB { float C[]; };
layout(push_constant) uniform P { uint n; } pc;
#ifndef RM
#define RM 8
#endif
#ifndef RN
#define RN 8
#endif
void main() {
    uint n = pc.n, nw = n / 4u;
    uint tx = gl_LocalInvocationID.x;
    uint m0 = gl_WorkGroupID.x * RM, n0 = gl_WorkGroupID.y * (8u * RN) + tx * RN;
    float acc[RM][RN];
    [[unroll]] for (int i = 0; i < RM; i++) [[unroll]] for (int j = 0; j < RN; j++) acc[i][j] = 0.0;
    for (uint kw = 0u; kw < nw; kw++) {
        vec4 a[RM];
        [[unroll]] for (int i = 0; i < RM; i++) a[i] = LDA((m0 + uint(i)) * nw + kw);
        [[unroll]] for (int kk = 0; kk < 4; kk++) {
            float bb[RN];
            [[unroll]] for (int q = 0; q < RN / 4; q++) {
                vec4 t = LDB((kw * 4u + uint(kk)) * nw + n0 / 4u + uint(q));
                bb[4 * q] = t.x; bb[4 * q + 1] = t.y; bb[4 * q + 2] = t.z; bb[4 * q + 3] = t.w;
            }
            [[unroll]] for (int i = 0; i < RM; i++)
                [[unroll]] for (int j = 0; j < RN; j++) acc[i][j] = fma(a[i][kk], bb[j], acc[i][j]);
        }
    }
    [[unroll]] for (int i = 0; i < RM; i++)
        [[unroll]] for (int j = 0; j < RN; j++) C[(m0 + uint(i)) * n + n0 + uint(j)] = acc[i][j];
}
