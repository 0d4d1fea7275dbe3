#version 450
// Draws what the network learned: every pixel through the MLP, reading the
// weights straight from loom's parameter buffers (linear layers: W (out, in)
// row-major, as loom and torch store them).
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint NFREQ = 32;
layout(constant_id = 1) const uint HIDDEN = 64;
layout(std430, binding = 0) readonly buffer Freq { vec2 freq[]; };
layout(std430, binding = 1) readonly buffer W1 { float w1[]; };   // (HIDDEN, 2 NFREQ)
layout(std430, binding = 2) readonly buffer B1 { float b1[]; };
layout(std430, binding = 3) readonly buffer W2 { float w2[]; };   // (HIDDEN, HIDDEN)
layout(std430, binding = 4) readonly buffer B2 { float b2[]; };
layout(std430, binding = 5) readonly buffer W3 { float w3[]; };   // (3, HIDDEN)
layout(std430, binding = 6) readonly buffer B3 { float b3[]; };
layout(std430, binding = 7) writeonly buffer Out { uint px[]; };  // RGBA8, size x size
layout(push_constant) uniform P { uint size; } pc;

void main() {
    uint at = gl_GlobalInvocationID.x;
    if (at >= pc.size * pc.size) return;
    vec2 p = (vec2(at % pc.size, at / pc.size) + 0.5) / float(pc.size);
    float f[2 * NFREQ], h1[HIDDEN], h2[HIDDEN];
    for (uint k = 0; k < NFREQ; k++) {
        float a = 6.28318530718 * dot(freq[k], p);
        f[k] = sin(a);
        f[NFREQ + k] = cos(a);
    }
    for (uint o = 0; o < HIDDEN; o++) {
        float s = b1[o];
        for (uint k = 0; k < 2 * NFREQ; k++) s += w1[o * 2 * NFREQ + k] * f[k];
        h1[o] = max(s, 0.0);
    }
    for (uint o = 0; o < HIDDEN; o++) {
        float s = b2[o];
        for (uint k = 0; k < HIDDEN; k++) s += w2[o * HIDDEN + k] * h1[k];
        h2[o] = max(s, 0.0);
    }
    vec3 c;
    for (uint o = 0; o < 3; o++) {
        float s = b3[o];
        for (uint k = 0; k < HIDDEN; k++) s += w3[o * HIDDEN + k] * h2[k];
        c[o] = 1.0 / (1.0 + exp(-s));
    }
    px[at] = packUnorm4x8(vec4(c, 1.0));
}
