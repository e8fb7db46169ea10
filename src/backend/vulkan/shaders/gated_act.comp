#version 450
// gated_act.comp — gate[i] = act(gate[i]) * up[i]: act 0 SiLU g / (1 + e^-g), 1 gelu
// tanh form 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) (as g sigmoid(2u)).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer GB { float G[]; };
layout(std430, binding = 1) readonly buffer UB { float U[]; };
layout(push_constant) uniform P {
    uint n, act;
} p;

void main() {
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
             gl_LocalInvocationID.x; // a 2-D grid past maxComputeWorkGroupCount[0]
    if (i >= p.n) return;
    float g = G[i], a;
    if (p.act == 0u) {
        a = g / (1.0 + exp(-g));
    } else {
        float u = 0.7978845608028654 * (g + 0.044715 * g * g * g);
        a = g / (1.0 + exp(-2.0 * u));
    }
    G[i] = a * U[i];
}
