#version 450
// copy.comp — y[i] = x[i] for i < n (the parallel residual's normed input).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XB { float X[]; };
layout(std430, binding = 1) writeonly buffer YB { float Y[]; };
layout(push_constant) uniform P {
    uint n;
} p;

void main() {
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
             gl_LocalInvocationID.x; // a 2-D grid past maxComputeWorkGroupCount[0]
    if (i < p.n) Y[i] = X[i];
}
