// A program with a main() that does not link: it calls a function no file defines.
void missing_helper(float* p);
__global__ void k(float* p) { p[threadIdx.x] = 0.f; }
int main() {
  float* p;
  cudaMalloc(&p, 1024);
  missing_helper(p);
  k<<<1, 256>>>(p);
  return 0;
}
