// cp.async probes (issue 33), written for kernelscope: each iteration copies a 16-byte chunk per
// thread from global to shared memory with cp.async, waits for it, and reads it back. `wait_all`
// waits for every group (cp.async.wait_group 0); `wait_one_behind` keeps one group in flight
// (double buffering), so it waits for the copy issued one iteration earlier.
#include <stdint.h>
__device__ __forceinline__ void copy16(void* s, const void* g) {
    unsigned sa = (unsigned)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sa), "l"(g));
}
__global__ void wait_all(const int4* in, int* out, int iters) {
    __shared__ int4 buf[128];
    int acc = 0;
    for (int it = 0; it < iters; ++it) {
        copy16(&buf[threadIdx.x], in + (size_t)it * 128 * gridDim.x + blockIdx.x * 128 + threadIdx.x);
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        acc += buf[threadIdx.x].x;
    }
    out[blockIdx.x * 128 + threadIdx.x] = acc;
}
__global__ void wait_one_behind(const int4* in, int* out, int iters) {
    __shared__ int4 buf[2][128];
    int acc = 0;
    copy16(&buf[0][threadIdx.x], in + blockIdx.x * 128 + threadIdx.x);
    asm volatile("cp.async.commit_group;");
    for (int it = 0; it < iters; ++it) {
        copy16(&buf[(it + 1) & 1][threadIdx.x], in + (size_t)(it + 1) * 128 * gridDim.x + blockIdx.x * 128 + threadIdx.x);
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        acc += buf[it & 1][threadIdx.x].x;
    }
    out[blockIdx.x * 128 + threadIdx.x] = acc;
}
