// What hierarchy.cu and tensor_pipe.cu share: the error check, per-warp cycle counts and the best
// cudaEvent time of a launch.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));        \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

// The slowest warp's cycles: `launch(cycles)` runs a kernel that writes each warp's clock64
// interval at cycles[warp], for `warps` warps.
template <typename Launch>
static long long slowest_warp(int warps, Launch launch) {
    long long* cyc;
    CK(cudaMalloc(&cyc, sizeof(long long) * warps));
    launch(cyc);
    CK(cudaGetLastError());
    std::vector<long long> h(warps);
    CK(cudaMemcpy(h.data(), cyc, sizeof(long long) * warps, cudaMemcpyDeviceToHost));
    CK(cudaFree(cyc));
    return *std::max_element(h.begin(), h.end());
}

// The shortest cudaEvent time of `reps` runs of `launch()`, in ms.
template <typename Launch>
static float best_ms(int reps, Launch launch) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float best = 1e30f;
    for (int k = 0; k < reps; ++k) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, ms);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return best;
}
