// A K loop whose first trip is longer than the walk's step bound: 64 threads each fill 64 words
// of each shared tile and run a 64-deep unrolled inner product, so the walk stops inside the
// first trip, before the loop's exit compare has run once (tests/emulator/test_trip_counts.py).
// A do-while loop: the source model counts `for` loops only, so only the walk knows its trips.
#define BM 64
#define BN 64
#define BK 64
#define TM 8
#define TN 8
#define THREADS 64

__global__ void long_k_body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                            int M, int N, int K)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    float acc[TM][TN] = {};
    int k0 = 0;
    do {
#pragma unroll 4
        for (int i = threadIdx.x; i < BM * BK; i += THREADS)
            As[i % BK][i / BK] = A[(blockIdx.y * BM + i / BK) * K + k0 + i % BK];
#pragma unroll 4
        for (int i = threadIdx.x; i < BN * BK; i += THREADS)
            Bs[i / BN][i % BN] = B[(k0 + i / BN) * N + blockIdx.x * BN + i % BN];
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
        k0 += BK;
    } while (k0 < K);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            C[(blockIdx.y * BM + ty * TM + i) * N + blockIdx.x * BN + tx * TN + j] = acc[i][j];
}
