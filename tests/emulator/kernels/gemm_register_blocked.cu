// Register-blocked SGEMM (8x8 outputs per thread) written for kernelscope's tests: on sm_80 ptxas ends
// its K loop with `@P0 CALL.REL.NOINC <exit>; BRA <head>`; on sm_90 a `K <= 0` early-out path
// precedes the loop. tests/emulator/test_controlflow.py.
#define TM 8
#define TN 8
__global__ void gemm_blocked(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[64][8];
    __shared__ float Bs[8][64];
    float acc[TM][TN] = {0};
    int tr = threadIdx.x / 8, tc = threadIdx.x % 8;
    for (int k0 = 0; k0 < K; k0 += 8) {
        As[threadIdx.x % 64][threadIdx.x / 64] = A[(blockIdx.y * 64 + threadIdx.x % 64) * K + k0 + threadIdx.x / 64];
        Bs[threadIdx.x / 64][threadIdx.x % 64] = B[(k0 + threadIdx.x / 64) * N + blockIdx.x * 64 + threadIdx.x % 64];
        __syncthreads();
        for (int k = 0; k < 8; ++k)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += As[tr * TM + i][k] * Bs[k][tc * TN + j];
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            C[(blockIdx.y * 64 + tr * TM + i) * N + blockIdx.x * 64 + tc * TN + j] = acc[i][j];
}

int main() {
  float *A = 0, *B = 0, *C = 0;
  gemm_blocked<<<dim3(16, 16), 64>>>(A, B, C, 1024, 1024, 1024);
  return 0;
}
