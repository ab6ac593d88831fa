// A program that links cuBLAS, cuRAND, cuFFT and cuSPARSE, as llm.c's dev/cuda programs link
// cuBLAS: every library call's status is checked, and the program's own kernel runs after them.
// Built with -lcublas -lcurand -lcufft -lcusparse (tests/capture/test_programs.py).
#include <cstdio>
#include <cstdlib>
#if __has_include(<cublas_v2.h>) && __has_include(<curand.h>) && __has_include(<cufft.h>) && __has_include(<cusparse.h>)
#include <cublas_v2.h>
#include <cufft.h>
#include <curand.h>
#include <cusparse.h>
#else
// The libraries' headers are not on every machine (not in the wheels kernelscope installs):
// these are their declarations of what this program calls, as cublas_v2.h, curand.h, cufft.h
// and cusparse.h of CUDA 13 write them.
extern "C" {
typedef struct cublasContext* cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle);
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc);
const char* cublasGetStatusString(cublasStatus_t status);
#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasSgemm cublasSgemm_v2
typedef struct curandGenerator_st* curandGenerator_t;
typedef enum { CURAND_STATUS_SUCCESS = 0 } curandStatus_t;
typedef enum { CURAND_RNG_PSEUDO_DEFAULT = 100 } curandRngType_t;
curandStatus_t curandCreateGenerator(curandGenerator_t* generator, curandRngType_t rng_type);
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t generator, unsigned long long seed);
curandStatus_t curandGenerateUniform(curandGenerator_t generator, float* outputPtr, size_t num);
curandStatus_t curandDestroyGenerator(curandGenerator_t generator);
typedef int cufftHandle;
typedef enum { CUFFT_SUCCESS = 0 } cufftResult;
typedef enum { CUFFT_C2C = 0x29 } cufftType;
typedef float2 cufftComplex;
#define CUFFT_FORWARD -1
cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch);
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata, int direction);
cufftResult cufftDestroy(cufftHandle plan);
typedef struct cusparseContext* cusparseHandle_t;
typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;
cusparseStatus_t cusparseCreate(cusparseHandle_t* handle);
cusparseStatus_t cusparseDestroy(cusparseHandle_t handle);
}
#endif

#define CHECK(call, ok)                                                  \
  do {                                                                   \
    if ((call) != ok) {                                                  \
      fprintf(stderr, "%s failed at line %d\n", #call, __LINE__);        \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

__global__ void relu(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] > 0.f ? x[i] : 0.f;
}

int main() {
  const int M = 512, N = 256, K = 128;
  float *A, *B, *C;
  cudaMalloc(&A, M * K * sizeof(float));
  cudaMalloc(&B, K * N * sizeof(float));
  cudaMalloc(&C, M * N * sizeof(float));
  curandGenerator_t gen;
  CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_SUCCESS);
  CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234ULL), CURAND_STATUS_SUCCESS);
  CHECK(curandGenerateUniform(gen, A, M * K), CURAND_STATUS_SUCCESS);
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  if (handle == nullptr) { fprintf(stderr, "no cuBLAS handle\n"); return 1; }
  CHECK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  const float alpha = 1.f, beta = 0.f;
  cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
  if (st != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "sgemm: %s\n", cublasGetStatusString(st)); return 1; }
  cufftHandle plan;
  CHECK(cufftPlan1d(&plan, 1024, CUFFT_C2C, 1), CUFFT_SUCCESS);
  CHECK(cufftExecC2C(plan, (cufftComplex*)C, (cufftComplex*)C, CUFFT_FORWARD), CUFFT_SUCCESS);
  cusparseHandle_t sparse;
  CHECK(cusparseCreate(&sparse), CUSPARSE_STATUS_SUCCESS);
  relu<<<(M * N + 255) / 256, 256>>>(C, M * N);
  CHECK(cusparseDestroy(sparse), CUSPARSE_STATUS_SUCCESS);
  CHECK(cufftDestroy(plan), CUFFT_SUCCESS);
  CHECK(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS);
  CHECK(curandDestroyGenerator(gen), CURAND_STATUS_SUCCESS);
  printf("done\n");
  return 0;
}
