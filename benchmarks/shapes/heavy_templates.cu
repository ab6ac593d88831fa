// Heavy templates: a tiled GEMM instantiated for several tile shapes and element types, each
// with a compile-time unrolled inner product.
template <typename T, int BM, int BN, int BK, int TM>
__global__ void tiled_gemm(const T *A, const T *B, T *C, int M, int N, int K) {
    __shared__ T As[BK][BM];
    __shared__ T Bs[BK][BN];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tx = threadIdx.x % BN, ty = threadIdx.x / BN;
    T acc[TM] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x)
            As[i % BK][i / BK] = A[(row0 + i / BK) * K + k0 + i % BK];
        for (int i = threadIdx.x; i < BN * BK; i += blockDim.x)
            Bs[i / BN][i % BN] = B[(k0 + i / BN) * N + col0 + i % BN];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            T b = Bs[k][tx];
#pragma unroll
            for (int m = 0; m < TM; ++m) acc[m] += As[k][ty * TM + m] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < TM; ++m) C[(row0 + ty * TM + m) * N + col0 + tx] = acc[m];
}

template <typename T, int BM, int BN, int BK, int TM>
void launch(const T *A, const T *B, T *C, int n) {
    dim3 grid(n / BN, n / BM);
    tiled_gemm<T, BM, BN, BK, TM><<<grid, (BM / TM) * BN>>>(A, B, C, n, n, n);
}

int main() {
    const int n = 2048;
    launch<float, 64, 64, 8, 8>(nullptr, nullptr, nullptr, n);
    launch<float, 128, 64, 8, 8>(nullptr, nullptr, nullptr, n);
    launch<float, 64, 32, 16, 4>(nullptr, nullptr, nullptr, n);
    launch<double, 64, 64, 8, 8>(nullptr, nullptr, nullptr, n);
    launch<double, 32, 32, 16, 4>(nullptr, nullptr, nullptr, n);
    launch<int, 64, 64, 8, 8>(nullptr, nullptr, nullptr, n);
    return 0;
}
