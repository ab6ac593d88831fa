// A register-blocked GEMM kernel template defined in a header (tests/emulator/test_trip_counts.py).
// Written for kernelscope's tests.
//
// The K loop's bound, `(K + Cfg::TILE - 1) / Cfg::TILE`, is written with a member of the template
// argument, which the source model does not fold: its trips come from the walked warp, with the K
// the launch in header_k_loop.cu passes. ptxas closes the loop with `@P0 CALL.REL.NOINC exit;
// BRA head`, and its unrolled body takes the walk's step bound within a few trips.
template <class Cfg>
__global__ void cfg_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                         int M, int N, int K) {
    __shared__ float As[Cfg::TILE][Cfg::TILE];
    __shared__ float Bs[Cfg::TILE][Cfg::TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 16 + tx;
    const int row0 = blockIdx.y * Cfg::TILE, col0 = blockIdx.x * Cfg::TILE;
    const int steps = (K + Cfg::TILE - 1) / Cfg::TILE;
    float acc[16][4] = {};
    for (int s = 0; s < steps; ++s) {
#pragma unroll
        for (int i = 0; i < Cfg::TILE; ++i) {
            const int e = tid + i * 64, r = e / Cfg::TILE, c = e % Cfg::TILE;
            As[r][c] = (row0 + r < M && s * Cfg::TILE + c < K) ? A[(row0 + r) * K + s * Cfg::TILE + c] : 0.f;
            Bs[r][c] = (s * Cfg::TILE + r < K && col0 + c < N) ? B[(s * Cfg::TILE + r) * N + col0 + c] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < Cfg::TILE; ++k) {
#pragma unroll
            for (int a = 0; a < 16; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) acc[a][b] += As[ty * 16 + a][k] * Bs[k][tx * 4 + b];
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 16; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b)
            if (row0 + ty * 16 + a < M && col0 + tx * 4 + b < N) C[(row0 + ty * 16 + a) * N + col0 + tx * 4 + b] = acc[a][b];
}
