// Written for kernelscope from the kernel's signature and launch as recorded in
// tests/data/ncu-reports/gtx1660s-naive-gemm.ncu-rep (LakshyaSingh354/CudaCode): the textbook
// one-thread-per-output SGEMM C = alpha*A*B + beta*C, row-major, M=N=K=1024 (grid 32x32, block 32x32).
__global__ void naive_gemm(const float *A, const float *B, float *C, int M, int N, int K,
                           float alpha, float beta) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}
