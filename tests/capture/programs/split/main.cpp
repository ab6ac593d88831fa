// main() of the split program: no CUDA in this file; it calls scale_kernels.cu's run_scale.
// ELEMENTS comes from the build (compile_commands.json in the test) when it gives one.
#include <cstdio>
#include <vector>
#ifndef ELEMENTS
#define ELEMENTS 5000
#endif
extern "C" bool run_scale(float* host, int n, float factor);
void compute_gold(float* reference, int n, float factor);
int main() {
  std::vector<float> data(ELEMENTS, 1.0f), reference(ELEMENTS, 1.0f);
  if (!run_scale(data.data(), ELEMENTS, 2.5f)) return 1;
  compute_gold(reference.data(), ELEMENTS, 2.5f);
  printf("%s\n", data[0] == reference[0] ? "PASS" : "FAIL");
  return 0;
}
