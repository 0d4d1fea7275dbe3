#version 450
// The procedural scene: a sky gradient, a sun that moves slowly with the
// frame's time, soft rolling hills and a striped disc. Smooth on purpose:
// a small coordinate network can learn it in a few hundred steps.
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 colour;
layout(push_constant) uniform Scene { float t; } scene;

float disc(vec2 p, vec2 c, float r, float soft) { return 1.0 - smoothstep(r - soft, r + soft, length(p - c)); }

void main() {
    vec2 p = uv;
    vec3 sky = mix(vec3(0.95, 0.75, 0.45), vec3(0.20, 0.35, 0.70), p.y);
    vec2 sun_at = vec2(0.25 + 0.5 * fract(scene.t * 0.05), 0.25 + 0.08 * sin(scene.t * 0.3));
    vec3 c = mix(sky, vec3(1.0, 0.90, 0.55), disc(p, sun_at, 0.10, 0.02));
    float hill = 0.68 + 0.07 * sin(p.x * 6.0 + 1.3) + 0.04 * sin(p.x * 11.0 + scene.t * 0.2);
    c = mix(c, vec3(0.20, 0.50, 0.25) * (1.1 - 0.4 * p.y), smoothstep(hill - 0.01, hill + 0.01, p.y));
    float stripes = 0.5 + 0.5 * sin(18.0 * (p.x + p.y));
    c = mix(c, mix(vec3(0.85, 0.20, 0.20), vec3(0.95, 0.95, 0.90), stripes), disc(p, vec2(0.72, 0.74), 0.12, 0.01));
    colour = vec4(c, 1.0);
}
