// Launches header_k_loop.cuh's kernel (tests/emulator/test_trip_counts.py). Written for kernelscope's tests.
#include "header_k_loop.cuh"

struct Tile64 {
    static constexpr int TILE = 64;
};

int main() {
    float *a, *b, *c;
    cfg_gemm<Tile64><<<dim3(32, 32), dim3(16, 4)>>>(a, b, c, 2048, 2048, 2048);
    return 0;
}
