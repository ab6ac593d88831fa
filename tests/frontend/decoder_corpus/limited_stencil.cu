// A decoder corpus source (analysis/frontend/cubin/learn.py compiles every .cu file of tests/):
// the shape of a hand-written solver module, as benchmarks/scaling.py generates 5,000 lines of
// them. Its clamps and upwind branches compile to `FMNMX R3, R3, -1, !PT` (a float immediate)
// and `FSETP.GT.AND`, forms the repository's other sources did not show (2026-11-27), so every
// such solver file was read through nvdisasm.

__device__ float flux(float a, float b) {
    float d = b - a;
    return d > 0.0f ? d * 2.5f : d * 0.5f;
}

__device__ float limit(float x) {
    return fminf(fmaxf(x, -1.0f), 1.0f);
}

__global__ void limited_stencil(const float *u, float *v, int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
    float c = u[j * nx + i];
    float f = flux(u[j * nx + i - 1], c) - flux(c, u[j * nx + i + 1]);
    float g = flux(u[(j - 1) * nx + i], c) - flux(c, u[(j + 1) * nx + i]);
    v[j * nx + i] = c + limit(f + g) * 0.25f;
}
