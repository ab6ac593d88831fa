// A K loop inside loops over a block's output tiles (tests/emulator/test_trip_counts.py). Written
// for kernelscope's tests.
//
// The tile loops' trip count is a template argument: with TILES = 1 ptxas drops them, and at 255
// registers it recomputes their per-tile row and column bases (written on the tile loops' lines)
// inside the K loop. Those lines make the tile loop's span cover more of the K loop's body than the
// K loop's own span does; the K loop's back edge is charged to its own `for`.
template <int TILES>
__global__ void tiles_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                           int M, int N, int K) {
    __shared__ float As[64][64];
    __shared__ float Bs[64][64];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 16 + tx;
    const int steps = (K + 63) / 64;
#pragma unroll
    for (int ti = 0; ti < TILES; ++ti) {
#pragma unroll
        for (int tj = 0; tj < TILES; ++tj) {
            const int row0 = (blockIdx.y * TILES + ti) * 64;
            const int col0 = (blockIdx.x * TILES + tj) * 64;
            float acc[16][4] = {};
            for (int s = 0; s < steps; ++s) {
#pragma unroll
                for (int i = 0; i < 64; ++i) {
                    const int e = tid + i * 64, r = e / 64, c = e % 64;
                    As[r][c] = (row0 + r < M && s * 64 + c < K) ? A[(row0 + r) * K + s * 64 + c] : 0.f;
                    Bs[r][c] = (s * 64 + r < K && col0 + c < N) ? B[(s * 64 + r) * N + col0 + c] : 0.f;
                }
                __syncthreads();
#pragma unroll
                for (int k = 0; k < 64; ++k) {
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
    }
}

int main() {
  float *a, *b, *c;
  tiles_gemm<1><<<dim3(32, 32), dim3(16, 4)>>>(a, b, c, 2048, 2048, 2048);
  return 0;
}
