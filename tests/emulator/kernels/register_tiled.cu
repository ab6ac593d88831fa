// A register-tiled SGEMM with bounds checks (tests/emulator/test_walk_slice.py): a 128 x 128 tile
// per block of 256 threads, each thread an 8 x 8 block of C in registers, K in steps of 16 through
// shared memory, indices in size_t. Every global load is checked against M, N and K, as a library
// kernel for any shape is; those checks are live work for the walk (addresses and branches read them), about
// half of a K-step's instructions, so the walk needs well over a thousand steps to reach the
// epilogue's stores.

#define BM 128
#define BN 128
#define BK 16
#define TM 8
#define TN 8

__global__ void sgemm_register_tiled(size_t M, size_t N, size_t K, float alpha, const float* A, const float* B,
                                     float beta, float* C)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const size_t tid = threadIdx.x;
    const size_t row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const size_t ty = tid / (BN / TN), tx = tid % (BN / TN);
    float acc[TM][TN] = {};
    float a_frag[TM], b_frag[TN];
    for (size_t k0 = 0; k0 < K; k0 += BK) {
        // 128 x 16 of A and 16 x 128 of B: eight elements of each per thread
        for (int i = 0; i < (BM * BK) / 256; ++i) {
            size_t e = tid + i * 256;
            size_t r = e / BK, c = e % BK;
            size_t gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
        }
        for (int i = 0; i < (BK * BN) / 256; ++i) {
            size_t e = tid + i * 256;
            size_t r = e / BN, c = e % BN;
            size_t gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            for (int m = 0; m < TM; ++m) a_frag[m] = As[k][ty * TM + m];
            for (int n = 0; n < TN; ++n) b_frag[n] = Bs[k][tx * TN + n];
            for (int m = 0; m < TM; ++m)
                for (int n = 0; n < TN; ++n)
                    acc[m][n] += a_frag[m] * b_frag[n];
        }
        __syncthreads();
    }
    for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n) {
            size_t r = row0 + ty * TM + m, c = col0 + tx * TN + n;
            if (r < M && c < N)
                C[r * N + c] = alpha * acc[m][n] + beta * C[r * N + c];
        }
}
