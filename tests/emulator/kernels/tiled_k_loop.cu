// Tiled K loops with a 64-bit (size_t) tile counter, the shape of register-tiled GEMMs that index
// with size_t (tests/emulator/test_trip_counts.py). Written for kernelscope's tests.
#define TK 16
#define TILE 64

// ptxas compares a size_t counter in two halves (ISETP ... then ISETP.EX on the high words);
// the fully unrolled inner loops replicate the shared loads 16 times, which is not an unroll
// factor of the K loop
__global__ void ktiles_sizet(size_t k, float const* A, float const* B, float* C) {
  __shared__ float As[TK][TILE];
  __shared__ float Bs[TK][TILE];
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  size_t const col = threadIdx.x % TILE;
  for (size_t t = 0; t < (k + TK - 1) / TK; ++t) {
    for (size_t l = 0; l < TK * TILE / 256; ++l) {
      size_t const idx = l * 256 + threadIdx.x;
      As[idx / TILE][idx % TILE] = A[t * TK * TILE + idx];
      Bs[idx / TILE][idx % TILE] = B[t * TK * TILE + idx];
    }
    __syncthreads();
#pragma unroll
    for (size_t i = 0; i < TK; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        acc[j] += As[i][col] * Bs[i][(col + 16 * j) % TILE];
    __syncthreads();
  }
  for (int j = 0; j < 4; ++j)
    C[blockIdx.x * blockDim.x * 4 + j * blockDim.x + threadIdx.x] = acc[j];
}

int main() {
  float *a, *b, *c;
  ktiles_sizet<<<64, 256>>>(4096, a, b, c);
  return 0;
}
