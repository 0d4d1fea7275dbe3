/* shaders/embedding.comp — embedding lookup and its scatter-add gradient, as
 * backends/cpu/ops/embedding.c and backends/opencl/kernels/embedding.cl. An
 * index outside [0, V) is reported through the node's error slot (the first
 * bad position, atomicMin) and never read or written. The gradient runs one
 * invocation per column d, summing the positions in order: deterministic, no
 * atomics; 16-bit outputs accumulate in an f32 scratch first, as the CPU's
 * 16-bit wrapper does (then embedding_grad_store rounds once). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_EMBEDDING)
/* y (n, D) = w (V, D) rows idx (n) */
TENSOR_IN(0, T, w);
TENSOR_IN(1, int, idx);
TENSOR_OUT(2, T, y);
ERR_SLOTS(3);
PUSH { uint wo, io, yo, n, D, V; uint slot; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n * pc.D) return;
    uint k = i / pc.D, d = i % pc.D;
    int v = idx[pc.io + k];
    if (v < 0 || uint(v) >= pc.V) {
        if (d == 0u) atomicMin(err_slots[pc.slot], int(k));
        ST(y, pc.yo + i, 0.0);
        return;
    }
    ST(y, pc.yo + i, LD(w, pc.wo + uint(v) * pc.D + d));
}

#elif defined(K_EMBEDDING_GRAD)
/* acc (V, D) f32 = 0, then acc[idx[k], d] += dy[k, d] for k in order; column d
 * per invocation. acc is y itself for f32, else the node's f32 scratch. */
TENSOR_IN(0, T, dy);
TENSOR_IN(1, int, idx);
TENSOR_OUT(2, float, acc);
ERR_SLOTS(3);
PUSH { uint dyo, io, ao, n, D, V; uint slot; } pc;

void main() {
    uint d = loom_gid();
    if (d >= pc.D) return;
    for (uint v = 0u; v < pc.V; v++) acc[pc.ao + v * pc.D + d] = 0.0;
    for (uint k = 0u; k < pc.n; k++) {
        int v = idx[pc.io + k];
        if (v < 0 || uint(v) >= pc.V) {
            if (d == 0u) atomicMin(err_slots[pc.slot], int(k));
            continue;
        }
        uint a = pc.ao + uint(v) * pc.D + d;
        acc[a] = acc[a] + LD(dy, pc.dyo + k * pc.D + d);
    }
}

#elif defined(K_EMBEDDING_GRAD_STORE)
/* y (n) = acc (n) f32 rounded to the storage dtype */
TENSOR_IN(0, float, acc);
TENSOR_OUT(1, T, y);
PUSH { uint yo, n; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    ST(y, pc.yo + i, acc[i]);
}

#else
#error "embedding.comp: define one of K_EMBEDDING, K_EMBEDDING_GRAD, K_EMBEDDING_GRAD_STORE"
#endif
