// Private arrays indexed at run time (tests/emulator/test_local_generic.py): the index is computed
// in a loop, so the array stays in local memory; what the lanes' indices are decides how many
// lines of the interleaved frame one warp's access touches. The indices come from the thread's
// position, not from data: the walk computes them, the address analysis does not prove them
// uniform (a shift and a mask of threadIdx.x).

#define BINS 32

// every lane of a warp counts into the same bin (the warp's number, moved on each trip), in bins
// of type Bin: one line per access
template <typename Bin>
__device__ __forceinline__ void count_by_warp(unsigned int *bins, int n)
{
    Bin hist[BINS];
    for (int b = 0; b < BINS; ++b)
        hist[b] = 0;
    for (int i = 0; i < n; ++i)
        hist[((threadIdx.x >> 5) + i) & (BINS - 1)] += 1;
    for (int b = 0; b < BINS; ++b)
        atomicAdd(&bins[b], hist[b]);
}

__global__ void warp_index(unsigned int *bins, int n)
{
    count_by_warp<unsigned int>(bins, n);
}

// lanes count into 8 different bins (lane mod 8, moved on each trip): 8 lines per access
__global__ void lane_index(unsigned int *bins, int n)
{
    unsigned int hist[BINS];
    for (int b = 0; b < BINS; ++b)
        hist[b] = 0;
    for (int i = 0; i < n; ++i)
        hist[((threadIdx.x & 7) + i) & (BINS - 1)] += 1;
    for (int b = 0; b < BINS; ++b)
        atomicAdd(&bins[b], hist[b]);
}

// warp_index with 2-byte bins: a lane's bin lies in its own 32-bit word of the frame, so one
// warp's access spans a 128 B line (four sectors), not the 64 B its bytes would fill
__global__ void short_bins(unsigned int *bins, int n)
{
    count_by_warp<unsigned short>(bins, n);
}
