// What the model predicts for hierarchy.cu's instruction-fetch sweep with one warp: each body size
// launched once at <<<1, 32>>> with the measured run's repetitions (compare.py reads both).
#include "ifetch.cuh"

int main() {
    long long* cycles;
    float* sink;
    cudaMalloc(&cycles, sizeof(long long));
    cudaMalloc(&sink, sizeof(float));
    ifetch<256><<<1, 32>>>(16384, 1.0001f, 0.5f, cycles, sink);
    ifetch<512><<<1, 32>>>(8192, 1.0001f, 0.5f, cycles, sink);
    ifetch<1024><<<1, 32>>>(4096, 1.0001f, 0.5f, cycles, sink);
    ifetch<2048><<<1, 32>>>(2048, 1.0001f, 0.5f, cycles, sink);
    ifetch<4096><<<1, 32>>>(1024, 1.0001f, 0.5f, cycles, sink);
    ifetch<8192><<<1, 32>>>(512, 1.0001f, 0.5f, cycles, sink);
    ifetch<16384><<<1, 32>>>(256, 1.0001f, 0.5f, cycles, sink);
    cudaDeviceSynchronize();
    return 0;
}
