// A guard decided by a warp vote (tests/emulator/test_lanes.py): `VOTE.ALL P1, P0` reads P0, so the
// compare that sets P0 is one the walk must run.
__global__ void vote_guard(int* out, int limit)
{
    const int tx = threadIdx.x;
    if (__all_sync(0xffffffffu, tx >= limit))
        out[blockIdx.x * blockDim.x + tx] = 1;
}
