// A persistent kernel: a grid of one block per SM pulls work items from a global queue with an
// atomic counter until it is empty, processing each with a data-dependent inner loop.
__device__ unsigned int next_item;

__global__ void persistent_worker(const int *offsets, const float *values, float *out, unsigned int items) {
    __shared__ unsigned int item;
    for (;;) {
        if (threadIdx.x == 0) item = atomicAdd(&next_item, 1);
        __syncthreads();
        unsigned int it = item;
        __syncthreads();
        if (it >= items) break;
        int begin = offsets[it], end = offsets[it + 1];
        float acc = 0.0f;
        for (int j = begin + threadIdx.x; j < end; j += blockDim.x) acc += values[j] * values[j];
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if ((threadIdx.x & 31) == 0) atomicAdd(&out[it], acc);
    }
}

int main() {
    persistent_worker<<<132, 256>>>(nullptr, nullptr, nullptr, 1u << 16);
    return 0;
}
