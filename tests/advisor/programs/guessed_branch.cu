// The same sinf/cosf loop twice: `trig_always` runs it for every thread, `trig_on_data` only
// where the loaded value is above 0.5, which the model cannot compute (the input is data): it
// falls through into the loop, a guess, and its advice on the loop says it rests on that guess.
__global__ void trig_always(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < 40; k++) v = sinf(v) * cosf(v) + 0.1f;
  y[i] = v;
}

__global__ void trig_on_data(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  if (v > 0.5f) {
    for (int k = 0; k < 40; k++) v = sinf(v) * cosf(v) + 0.1f;
  }
  y[i] = v;
}

int main() {
  trig_always<<<2048, 256>>>(0, 0, 1 << 19);
  trig_on_data<<<2048, 256>>>(0, 0, 1 << 19);
  return 0;
}
