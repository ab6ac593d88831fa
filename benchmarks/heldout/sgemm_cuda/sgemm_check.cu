// Independent check of the model (README.md beside this file): siboehm/SGEMM_CUDA's kernels 1-10,
// each launched once at M = N = K = 4096 with the configuration its runner (src/runner.cu) gives
// that size. The kernels are the repository's own (src/, fetched, not committed); this driver and
// its launch list are kernelscope's. No parameter of the model was set from this code.
#include "src/kernels.cuh"

int main() {
    const int M = 4096, N = 4096, K = 4096;
    float *A, *B, *C;
    cudaMalloc(&A, sizeof(float) * M * K);
    cudaMalloc(&B, sizeof(float) * K * N);
    cudaMalloc(&C, sizeof(float) * M * N);
    cudaMemset(A, 0, sizeof(float) * M * K);
    cudaMemset(B, 0, sizeof(float) * K * N);
    cudaMemset(C, 0, sizeof(float) * M * N);
    sgemm_naive<<<dim3(128, 128), dim3(32, 32)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemm_global_mem_coalesce<32><<<dim3(128, 128), dim3(1024)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    cudaFuncSetAttribute(sgemm_shared_mem_block<32>, cudaFuncAttributePreferredSharedMemoryCarveout,
                         cudaSharedmemCarveoutMaxShared);
    sgemm_shared_mem_block<32><<<dim3(128, 128), dim3(1024)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemm1DBlocktiling<64, 64, 8, 8><<<dim3(64, 64), dim3(512)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemm2DBlocktiling<128, 128, 8, 8, 8><<<dim3(32, 32), dim3(256)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemmVectorize<128, 128, 8, 8, 8><<<dim3(32, 32), dim3(256)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemmResolveBankConflicts<128, 128, 8, 8, 8><<<dim3(32, 32), dim3(256)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemmResolveBankExtraCol<128, 128, 8, 8, 8><<<dim3(32, 32), dim3(256)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemmAutotuned<128, 128, 16, 8, 8><<<dim3(32, 32), dim3(256)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128><<<dim3(32, 32), dim3(128)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
    cudaDeviceSynchronize();
    return 0;
}
