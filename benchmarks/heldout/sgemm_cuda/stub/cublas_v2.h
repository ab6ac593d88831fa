// Empty stand-in: SGEMM_CUDA's kernel headers include <cublas_v2.h> but use nothing from it; the pip
// CUDA wheels kernelscope runs on have no cuBLAS headers. The GPU build uses the real one.
#pragma once
