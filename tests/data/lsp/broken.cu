// kernelscope LSP fixture: does not compile (undeclared identifier on line 5).
__global__ void broken(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = undeclared_value * 2.0f;
}
