// sinf, cosf and tanf of loaded values in a loop: each reduces |x| < 105615 inline (Cody-Waite),
// and larger |x| inline too, by the Payne-Hanek reduction over 2/pi's bits through a local array,
// behind `FSETP.GE.AND Pn, PT, |x|, 105615, PT` and a branch around it. The data branch
// `x > 0.5f` is an ordinary undecidable branch: the guard rule's default applies to it.
__global__ void float_trig(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  if (v > 0.5f) {
    for (int k = 0; k < 40; k++) v = sinf(v) * cosf(v) + tanf(0.25f * v);
  }
  y[i] = v;
}

int main() {
  float_trig<<<2048, 256>>>(0, 0, 1 << 19);
  return 0;
}
