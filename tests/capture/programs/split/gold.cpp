// The host reference the split program checks against (cuda-samples' *_gold.cpp).
void compute_gold(float* reference, int n, float factor) {
  for (int i = 0; i < n; ++i) reference[i] *= factor;
}
