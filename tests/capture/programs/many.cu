// A loop of launches beyond the recording cap, and one that runs past the time limit.
#include <cstdlib>
#include <unistd.h>
__global__ void step(float* p, int i) { p[threadIdx.x] += i; }
int main(int argc, char** argv) {
  float* p;
  cudaMalloc(&p, 256 * sizeof(float));
  for (int i = 0; i < 1000; ++i) step<<<1, 256>>>(p, i);
  if (argc > 1) for (;;) pause();  // a program that never ends by itself
  return 0;
}
