#version 450
// act.comp — x[i] = act(x[i]), the activation of an ungated MLP (the CPU's norm_act.c
// facet_act_row): act 0 SiLU g / (1 + e^-g); 1 gelu tanh form 0.5 g (1 + tanh(sqrt(2/pi)
// (g + 0.044715 g^3))), as g sigmoid(2u) (no tanh overflow); 2 gelu erf form
// 0.5 g (1 + erf(g / sqrt 2)); 3 relu2 max(g, 0)^2. GLSL has no erf: erfc(z) for z >= 0
// is Abramowitz & Stegun 7.1.26 (t = 1 / (1 + 0.3275911 z), a degree-5 polynomial in t
// times e^-z^2, absolute error <= 1.5e-7), and 1 + erf(-z) is taken as erfc(z) directly
// (no cancellation for negative g).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XB { float X[]; };
layout(push_constant) uniform P {
    uint n, act;
} p;

float erfc_pos(float z) { // z >= 0
    float t = 1.0 / (1.0 + 0.3275911 * z);
    float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 +
                 t * (-1.453152027 + t * 1.061405429))));
    return poly * exp(-z * z);
}

void main() {
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
             gl_LocalInvocationID.x; // a 2-D grid past maxComputeWorkGroupCount[0]
    if (i >= p.n) return;
    float g = X[i], a;
    if (p.act == 1u) {
        float u = 0.7978845608028654 * (g + 0.044715 * g * g * g);
        a = g / (1.0 + exp(-2.0 * u));
    } else if (p.act == 2u) {
        float z = abs(g) * 0.7071067811865476, c = erfc_pos(z);
        a = 0.5 * g * (g >= 0.0 ? 2.0 - c : c); // 1 + erf(g / sqrt 2)
    } else if (p.act == 3u) {
        a = g > 0.0 ? g * g : 0.0;
    } else {
        a = g / (1.0 + exp(-g));
    }
    X[i] = a;
}
