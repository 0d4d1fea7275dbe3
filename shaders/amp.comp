/* shaders/amp.comp — the loss-scaling ops (semantics in core/ops/amp.c; host:
 * backends/vulkan/ops/amp.c), as backends/cpu/ops/amp.c and
 * backends/opencl/kernels/amp.cl. Non-finite means all exponent bits set
 * (inf or NaN), tested on the bits. The scaler's tensors are f32; the scanned
 * gradient is f32, f16 or bf16 (amp_found_scan_<dtype>). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

bool nonfinite(float v) { return (floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u; }

#if defined(K_AMP_FOUND_INIT)
/* y () = prev (or 0); runs before amp_found_scan */
TENSOR_IN(0, float, prev);
TENSOR_OUT(1, float, y);
PUSH { uint po, yo, has_prev; } pc;

void main() {
    if (loom_gid() == 0u) y[pc.yo] = pc.has_prev != 0u ? prev[pc.po] : 0.0;
}

#elif defined(K_AMP_FOUND_SCAN)
/* x (n): an invocation holding a non-finite element raises y to prev + 1
 * (atomicMax on the bits: positive floats order as their bits) */
TENSOR_IN(0, T, x);
TENSOR_IN(1, float, prev);
TENSOR_OUT(2, int, y);
PUSH { uint xo, po, yo, n, has_prev; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    if (!nonfinite(LD(x, pc.xo + i))) return;
    float raised = (pc.has_prev != 0u ? prev[pc.po] : 0.0) + 1.0;
    atomicMax(y[pc.yo], floatBitsToInt(raised));
}

#elif defined(K_AMP_UNSCALE)
/* y (8) = hyper with gmult / scale; apply -> -1 when found on an applying step */
TENSOR_IN(0, float, hy);
TENSOR_IN(1, float, scale);
TENSOR_IN(2, float, found);
TENSOR_OUT(3, float, y);
PUSH { uint ho, so, fo, yo; } pc;

void main() {
    uint i = loom_gid();
    if (i >= 8u) return;
    float v = hy[pc.ho + i];
    if (i == LOOM_G_HYPER_GMULT) v = v / scale[pc.so];
    if (i == LOOM_G_HYPER_APPLY && found[pc.fo] != 0.0 && v != 0.0) v = -1.0;
    y[pc.yo + i] = v;
}

#elif defined(K_AMP_SCALER_UPDATE)
/* on applying steps: back off after a non-finite step, grow after `interval` finite ones */
TENSOR_OUT(0, float, scale);
TENSOR_OUT(1, float, tracker);
TENSOR_OUT(2, float, skipped);
TENSOR_IN(3, float, found);
TENSOR_IN(4, float, hy);
TENSOR_OUT(5, float, y);
PUSH { uint so, to, ko, fo, ho, yo; float growth, backoff, interval; } pc;

void main() {
    if (loom_gid() != 0u) return;
    y[pc.yo] = 0.0;
    if (hy[pc.ho + LOOM_G_HYPER_APPLY] == 0.0) return;
    if (found[pc.fo] != 0.0) {
        scale[pc.so] = scale[pc.so] * pc.backoff;
        tracker[pc.to] = 0.0;
        skipped[pc.ko] = skipped[pc.ko] + 1.0;
    } else {
        float t = tracker[pc.to] + 1.0;
        if (t >= pc.interval) {
            float grown = scale[pc.so] * pc.growth;
            if (!nonfinite(grown)) scale[pc.so] = grown;
            t = 0.0;
        }
        tracker[pc.to] = t;
    }
}
#endif
