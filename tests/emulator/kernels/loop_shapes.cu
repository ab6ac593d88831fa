// One kernel per loop shape, launched from main() with literal values so that the launch site
// folds (tests/emulator/test_trip_counts.py). Written for kernelscope's tests.
__global__ void count_up(float* x, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i)
    s += x[i] * 2.0f;
  x[threadIdx.x] = s;
}

__global__ void count_le(float* x, int n) {
  float s = 0;
  for (int i = 1; i <= n; ++i)
    s += x[i] * 2.0f;
  x[threadIdx.x] = s;
}

__global__ void count_down(float* x, int n) {
  float s = 0;
  for (int i = n - 1; i >= 0; --i)
    s += x[i] * 2.0f;
  x[threadIdx.x] = s;
}

__global__ void stride_k(float* x, int n) {
  float s = 0;
  for (int i = 0; i < n; i += 3)
    s += x[i] * 2.0f;
  x[threadIdx.x] = s;
}

__global__ void bound_blockdim(float* x) {
  float s = 0;
  for (int i = 0; i < blockDim.x; ++i)
    s += x[i] * 2.0f;
  x[threadIdx.x] = s;
}

__global__ void grid_stride(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    x[i] = x[i] * 2.0f + 1.0f;
}

// a grid-stride loop unrolled 4 times: four body copies with predicated EXITs between them, one
// counter update per copy (IMAD.IADD Rc, Rstride, 0x1, Rc), one trip covering 4 strides
__global__ void grid_stride_unroll4(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
#pragma unroll 4
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

// an int index bounded by a long (llm.c's adamw kernels): the compare is 64-bit (the index
// sign-extended by SHF.R.S32.HI), and the body shifts the index into a 64-bit byte offset
__global__ void grid_stride_long(float* x, const float* y, long n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    x[i] = x[i] * 2.0f + y[i];
}

__global__ void grid_stride_2d(float* x, int w, int h) {
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += blockDim.y * gridDim.y)
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < w; c += blockDim.x * gridDim.x)
      x[y * w + c] = x[y * w + c] * 2.0f + 1.0f;
}

__global__ void arg_stride(float* x, int n, int stride) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = x[i] * 2.0f + 1.0f;
}

__global__ void halving(float* x) {
  __shared__ float sh[1024];
  sh[threadIdx.x] = x[threadIdx.x];
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
  }
  x[threadIdx.x] = sh[0];
}

__global__ void doubling(float* x) {
  __shared__ float sh[1024];
  sh[threadIdx.x] = x[threadIdx.x];
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    __syncthreads();
    if (threadIdx.x % (2 * s) == 0) sh[threadIdx.x] += sh[threadIdx.x + s];
  }
  x[threadIdx.x] = sh[0];
}

// strides of launch dimensions other than blockDim * gridDim: the block's rows (blockDim.y
// alone), one block per row of 256 (gridDim.x alone), a 2-D block's threads (blockDim.x * blockDim.y)
__global__ void block_stride_y(float* x) {
  for (int j = threadIdx.y; j < 64; j += blockDim.y)
    x[j * 64 + blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f;
}

__global__ void grid_dim_stride(const float* a, float* out) {
  float s = 0.f;
  for (int b = blockIdx.x; b < 4096; b += gridDim.x)
    s += a[b * 256 + threadIdx.x];
  out[blockIdx.x * 256 + threadIdx.x] = s;
}

__global__ void block_2d_stride(const float* a, float* out, int n) {
  float s = 0.f;
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < n; i += blockDim.x * blockDim.y)
    s += a[i];
  out[blockIdx.x * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x] = s;
}

int main() {
  float* x = 0;
  count_up<<<8, 128>>>(x, 1000);
  count_le<<<8, 128>>>(x, 1000);
  count_down<<<8, 128>>>(x, 1000);
  stride_k<<<8, 128>>>(x, 1000);
  bound_blockdim<<<8, 128>>>(x);
  grid_stride<<<8, 128>>>(x, 100000);
  grid_stride_unroll4<<<8, 128>>>(100000, 2.0f, x, x);
  grid_stride_long<<<8, 128>>>(x, x, 100000L);
  grid_stride_2d<<<dim3(8, 4), dim3(32, 4)>>>(x, 512, 256);
  arg_stride<<<8, 128>>>(x, 100000, 4096);
  halving<<<8, 256>>>(x);
  doubling<<<8, 256>>>(x);
  block_stride_y<<<dim3(2, 4), dim3(32, 8)>>>(x);
  grid_dim_stride<<<128, 256>>>(x, x);
  block_2d_stride<<<8, dim3(32, 8)>>>(x, x, 10000);
  return 0;
}
