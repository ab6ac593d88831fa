// Control flow the lanes cannot decide (tests/emulator/test_undecided.py): a loop bounded by
// loaded row offsets (CSR), a branch on a double, and a branch only the grid's first warp takes.

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

// one thread of the grid runs a serial loop: the walked warps (the middle block's) skip it, the
// grid's first warp does not; the loop stays in the model (as the guard rule has it), and the
// result says that every warp is modeled running it
// kernelscope: grid=64 block=256 n=4096
__global__ void serial_head(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 2.0f * x[i];
    if (i == 0) {
        for (int k = 0; k < n; ++k)
            s += x[k];
    }
    y[i] = s;
}

// a guard on the thread's index in its block: every block's warp 0 takes it alike, nothing to name
// kernelscope: grid=64 block=256
__global__ void block_head(const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[i];
    if (threadIdx.x == 0)
        y[blockIdx.x] += 1.0f;
}

// the other way round: sinf of the thread's index takes the Payne-Hanek reduction for |x| >=
// 105615, in most of the grid (the middle block's warps) but not in its first warp (i < 256); the
// side with the work is the slow path, which the grid runs (code-samples/async.cu's kernel)
// kernelscope: grid=16384 block=256
__global__ void big_angles(float* a)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    float x = (float)i;
    a[i] = sinf(x) + cosf(x);
}
