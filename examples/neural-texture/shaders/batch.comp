#version 450
// One training batch from the rendered frame: BATCH pixels drawn by a hash of
// (frame, i); x = Fourier features of the pixel's centre, y = its colour.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Frame { uint px[]; };        // RGBA8, size x size
layout(std430, binding = 1) readonly buffer Freq { vec2 freq[]; };       // NFREQ frequencies
layout(std430, binding = 2) writeonly buffer X { float x[]; };           // (BATCH, 2 NFREQ)
layout(std430, binding = 3) writeonly buffer Y { float y[]; };           // (BATCH, 3)
layout(push_constant) uniform P { uint frame, batch, size, nfreq; } pc;

uint hash(uint v) {
    v ^= v >> 16; v *= 0x7feb352du; v ^= v >> 15; v *= 0x846ca68bu; v ^= v >> 16;
    return v;
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.batch) return;
    uint n = pc.size * pc.size;
    uint at = hash(i * 0x9e3779b9u ^ hash(pc.frame + 0x632be5abu)) % n;
    vec2 p = (vec2(at % pc.size, at / pc.size) + 0.5) / float(pc.size);
    for (uint k = 0; k < pc.nfreq; k++) {
        float a = 6.28318530718 * dot(freq[k], p);
        x[i * 2 * pc.nfreq + k] = sin(a);
        x[i * 2 * pc.nfreq + pc.nfreq + k] = cos(a);
    }
    vec4 c = unpackUnorm4x8(px[at]);
    y[i * 3 + 0] = c.r;
    y[i * 3 + 1] = c.g;
    y[i * 3 + 2] = c.b;
}
