// Kernels whose memory shapes the per-lane datapath must get right (tests/emulator/test_lanes.py).
// Written for kernelscope: the textbook forms of each access pattern.

// The textbook naive SGEMM: consecutive lanes take consecutive rows x, so A[x * K + i] puts
// each lane K floats apart (uncoalesced) while B[i * N + y] is one row read by all lanes.
__global__ void sgemm_textbook(int M, int N, int K, float alpha, const float *A, const float *B,
                               float beta, float *C) {
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < M && y < N) {
        float tmp = 0.0f;
        for (int i = 0; i < K; ++i) {
            tmp += A[x * K + i] * B[i * N + y];
        }
        C[x * N + y] = alpha * tmp + beta * C[x * N + y];
    }
}

__global__ void copy_rows(float *out, const float *in, int n) {
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    out[y * n + x] = in[y * n + x];
}

__global__ void transpose_naive(float *out, const float *in, int n) {
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    out[x * n + y] = in[y * n + x];
}

__global__ void strided_store(float *out, const float *in, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i * stride] = in[i];
}

// A column of a 32 x 32 tile: every lane in bank (ty * 32 + tx) % 32 ... without padding all
// lanes of a warp hit one bank; with one word of padding per row, 32 different banks.
__global__ void column_unpadded(float *out, const float *in) {
    __shared__ float tile[32][32];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
    __syncthreads();
    out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void column_padded(float *out, const float *in) {
    __shared__ float tile[32][33];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
    __syncthreads();
    out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

// A gather: the address of x depends on the loaded index.
__global__ void gather(float *out, const float *x, const int *idx, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[idx[i]];
}

// 64-bit index arithmetic: a size_t row offset far beyond 4 GiB of elements' worth of bits.
__global__ void wide_index(float *out, const float *in, size_t pitch) {
    size_t row = blockIdx.y;
    size_t col = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[row * pitch + col * 2] = in[row * pitch + col];
}

// A loop bounded by a local computed from an argument: its trips come from executing its own
// condition with the launch's K, not from folding the source.
__global__ void tiles_loop(float *out, const float *in, int K) {
    int numTiles = max((K + 63) >> 6, 1);
    float acc = 0.0f;
#pragma unroll 1
    for (int t = 0; t < numTiles; ++t) {
        acc += in[t * 64 + threadIdx.x];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Two versions of a row loop split on an argument (nvcc's `nx > 0` split): the launch's nx
// decides which one runs.
__global__ void row_sum(float *out, const float *a, int nx) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < nx; ++j) s += a[row * nx + j];
    out[row] = s;
}

// A loop bounded by a count computed in double precision, `ceil((double)n / 512)`: I2F.F64,
// DMUL and F2I.F64.CEIL before the loop's compare.
__global__ void chunks_ceil(float *out, const float *in, int n) {
    int chunks = (int)ceil((double)n / 512.0);
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < chunks; ++k) {
        int j = k * 512 + threadIdx.x;
        if (j < n) s += in[j];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// The same count in a loop ptxas unrolls by four: its main loop counts the remainder up to zero
// by four (`ISETP.NE`), 25 trips for 100 chunks, not a power of two.
__global__ void chunks_unrolled(float *out, const float *in, int n) {
    int chunks = (int)ceil((double)n / 512.0);
    float s = 0.0f;
    for (int k = 0; k < chunks; ++k) s += in[k * 512 + threadIdx.x];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Eight guards live across a loop: more than the seven predicate registers, so ptxas packs them
// into a register with P2R and tests the bits again (or unpacks them with R2P) inside the loop.
__global__ void guarded_sum(float* out, const float* in, int n, int a0, int a1, int a2, int a3, int a4,
                            int a5, int a6, int a7) {
    unsigned t = threadIdx.x;
    bool p[8] = {t < a0, t < a1, t < a2, t < a3, t < a4, t < a5, t < a6, t < a7};
    float acc = 0.f;
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
            if (p[j]) acc += in[(i * 8 + j) * 32 + t];
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}

// a double division by a value that is not a power of two: MUFU.RCP64H's seed, DFMA's Newton
// steps, and a check of the quotient's range before a call to the slow path
__global__ void chunks_thirds(const float* in, float* out, int n) {
    int chunks = (int)ceil((double)n / 3.0);
    float s = 0.0f;
    for (int k = 0; k < chunks; ++k) s += in[k * 256 + threadIdx.x];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
