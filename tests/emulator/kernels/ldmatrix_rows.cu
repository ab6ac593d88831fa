// ldmatrix reads one 16-byte row per address, from the first 8 lanes per matrix only
// (PTX ISA, ldmatrix: .x1 uses threads 0-7's addresses, .x2 threads 0-15, .x4 all 32).
// Each kernel gives every lane an address; the lanes past 8 x N point at rows 512 B further on,
// into the same banks as the rows that are read, so that counting them would show a conflict the
// hardware never sees. tests/emulator/test_lanes.py::test_ldmatrix_rows.
#include <cstdint>

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The 64x64 tile every kernel reads, filled and synchronised.
__device__ __forceinline__ unsigned short* filled_tile() {
  __shared__ __align__(16) unsigned short tile[64 * 64];
  for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) tile[i] = i;
  __syncthreads();
  return tile;
}

// x1, rows `stride` halves apart: 16 B apart, one 128 B wavefront; 64 B apart, rows 0, 2, 4 and 6
// start in bank 0: four wavefronts.
__global__ void ldsm_x1(unsigned* out, int stride) {
  unsigned short* tile = filled_tile();
  unsigned lane = threadIdx.x % 32;
  unsigned a = smem_addr(&tile[(lane % 8) * stride + (lane / 8) * 1024]);
  unsigned r0;
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a));
  out[threadIdx.x] = r0;
}

// x2, two matrices of rows 16 B apart: two wavefronts.
__global__ void ldsm_x2(unsigned* out) {
  unsigned short* tile = filled_tile();
  unsigned lane = threadIdx.x % 32;
  unsigned a = smem_addr(&tile[(lane % 16) * 8 + (lane / 16) * 256]);
  unsigned r0, r1;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
  out[threadIdx.x] = r0 + r1;
}

// x4, 32 rows 16 B apart: four wavefronts (every lane's address is read).
__global__ void ldsm_x4(unsigned* out) {
  unsigned short* tile = filled_tile();
  unsigned lane = threadIdx.x % 32;
  unsigned a = smem_addr(&tile[lane * 8]);
  unsigned r0, r1, r2, r3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
  out[threadIdx.x] = r0 + r1 + r2 + r3;
}
