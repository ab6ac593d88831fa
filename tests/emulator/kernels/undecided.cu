// Control flow the lanes cannot decide (tests/emulator/test_undecided.py): a loop bounded by
// loaded row offsets (CSR), and a branch on a double.

// kernelscope: grid=64 block=256
__global__ void csr_rows(const int* rowptr, const float* val, float* y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = rowptr[r]; j < rowptr[r + 1]; ++j)
        s += val[j];
    y[r] = s;
}

// a double computed from loaded data decides the early exit
// kernelscope: grid=64 block=256
__global__ void threshold(const float* x, float* y, double cut)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((double)x[i] * cut > 1.0) {
        float s = 0.0f;
        for (int k = 0; k < 64; ++k)
            s += x[i + k * 1024];
        y[i] = s;
    }
}

// a double computed from an argument the launch does not give decides it: the argument is named
// kernelscope: grid=64 block=256
__global__ void threshold_arg(const float* x, float* y, double cut)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((double)threadIdx.x * cut > 1.0) {
        float s = 0.0f;
        for (int k = 0; k < 64; ++k)
            s += x[i + k * 1024];
        y[i] = s;
    }
}
