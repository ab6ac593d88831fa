// A kernel file that main.cu #includes after defining what it uses (ELEMS_PER_THREAD): on its
// own it does not compile; in main.cu's translation unit it does.
__global__ void unrolled_add(float *x, const float *y, int n) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * ELEMS_PER_THREAD;
    for (int k = 0; k < ELEMS_PER_THREAD; ++k)
        if (base + k < n) x[base + k] += y[base + k];
}
