// kernelscope LSP fixture: an nvcc warning (unused variable, line 4) to follow through edits,
// after non-ASCII text on the same line so that columns differ between UTF-8 and UTF-16.
__global__ void twice(float *y, int n) {
  /* é😀 */ int unused = 3;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 2.0f;
}
