// A ring of shared-memory stages chosen by a 64-bit counter modulo 3, through a local array of
// generic pointers (the way a multi-stage pipeline often picks its buffer). ptxas divides the
// 64-bit counter with carry-chained 64 x 64-bit multiplies (UIMAD.WIDE.U32 with a carry-out, then
// .X with the carry-in; sm_90, sm_100 and sm_120 alike); the walk has to carry them to know which
// stage a load reads (tests/emulator/test_local_generic.py).
#define STAGE 256

__global__ void stage_ring(const float* __restrict__ in, float* __restrict__ out, unsigned long long stages)
{
    extern __shared__ float buf[];
    float* ring[3] = {buf, buf + STAGE, buf + 2 * STAGE};
    float acc = 0.0f;
    for (unsigned long long t = 0; t < stages; ++t) {
        float* cur = ring[t % 3];
        cur[threadIdx.x] = in[t * STAGE + threadIdx.x];
        __syncthreads();
        acc += cur[(threadIdx.x + 1) % STAGE];
    }
    out[blockIdx.x * STAGE + threadIdx.x] = acc;
}
