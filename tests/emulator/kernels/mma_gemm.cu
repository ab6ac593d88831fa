// A warp-tiled mma.sync GEMM (issue 33), written for kernelscope: C = A * B^T, FP16 in, FP32 out, block
// tile 128x128x32, 4 warps of 64x64, cp.async double buffering, ldmatrix.x4 fragments. Its K loop starts
// after ~150 instructions of address set-up.
#include <cuda_fp16.h>
#include <stdint.h>
#define BM 128
#define BN 128
#define BK 32
#define PAD 8
__device__ __forceinline__ void cp16(void* s, const void* g) {
    unsigned sa = (unsigned)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sa), "l"(g));
}
__device__ __forceinline__ void ldm4(unsigned* r, const void* s) {
    unsigned sa = (unsigned)__cvta_generic_to_shared(s);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(sa));
}
__global__ void __launch_bounds__(128) tc_gemm(const half* A, const half* B, float* C, int M, int N, int K) {
    __shared__ __align__(16) half As[2][BM][BK + PAD];
    __shared__ __align__(16) half Bs[2][BN][BK + PAD];
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int wm = (warp / 2) * 64, wn = (warp % 2) * 64;
    const half* Ab = A + (size_t)blockIdx.y * BM * K;
    const half* Bb = B + (size_t)blockIdx.x * BN * K;
    float acc[4][8][4] = {};
    int numTiles = K / BK;
    // each tile: 128 rows x 32 halves = 512 chunks of 16 B per operand, 4 per thread
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int c = tid + i * 128, r = c / 4, col = (c % 4) * 8;
        cp16(&As[0][r][col], Ab + (size_t)r * K + col);
        cp16(&Bs[0][r][col], Bb + (size_t)r * K + col);
    }
    asm volatile("cp.async.commit_group;");
    for (int t = 0; t < numTiles; ++t) {
        int cur = t & 1;
        if (t + 1 < numTiles) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                int c = tid + i * 128, r = c / 4, col = (c % 4) * 8;
                cp16(&As[cur ^ 1][r][col], Ab + (size_t)r * K + (t + 1) * BK + col);
                cp16(&Bs[cur ^ 1][r][col], Bb + (size_t)r * K + (t + 1) * BK + col);
            }
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;");
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[4][4], b[8][2];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
                ldm4(a[mi], &As[cur][wm + mi * 16 + (lane % 16)][kk + (lane / 16) * 8]);
#pragma unroll
            for (int nj = 0; nj < 8; nj += 2) {
                unsigned r[4];
                ldm4(r, &Bs[cur][wn + nj * 8 + (lane % 8) + (lane / 16) * 8][kk + ((lane / 8) % 2) * 8]);
                b[nj][0] = r[0]; b[nj][1] = r[1]; b[nj + 1][0] = r[2]; b[nj + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int nj = 0; nj < 8; ++nj)
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                                 : "+f"(acc[mi][nj][0]), "+f"(acc[mi][nj][1]), "+f"(acc[mi][nj][2]), "+f"(acc[mi][nj][3])
                                 : "r"(a[mi][0]), "r"(a[mi][1]), "r"(a[mi][2]), "r"(a[mi][3]), "r"(b[nj][0]), "r"(b[nj][1]));
        }
        __syncthreads();
    }
    int row0 = blockIdx.y * BM + wm + lane / 4, col0 = blockIdx.x * BN + wn + (lane % 4) * 2;
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int nj = 0; nj < 8; ++nj) {
            float* c = C + (size_t)(row0 + mi * 16) * N + col0 + nj * 8;
            c[0] = acc[mi][nj][0]; c[1] = acc[mi][nj][1];
            c[8 * N] = acc[mi][nj][2]; c[8 * N + 1] = acc[mi][nj][3];
        }
}
