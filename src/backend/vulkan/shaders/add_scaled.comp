#version 450
// add_scaled.comp — x[i] += h[i] * mult (a residual connection: transformers' hidden_states
// = residual + hidden_states, times Granite's residual_multiplier). Element i is
// (workgroup y * workgroups x + workgroup x) * 64 + invocation: a 2-D grid for counts past
// maxComputeWorkGroupCount[0].
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer HB { float Hs[]; };
layout(push_constant) uniform P {
    uint n;
    float mult;
} p;

void main() {
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
             gl_LocalInvocationID.x;
    if (i >= p.n) return;
    precise float t = Hs[i] * p.mult;
    precise float r = X[i] + t;
    X[i] = r;
}
