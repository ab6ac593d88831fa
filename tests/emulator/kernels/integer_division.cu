// A loop bounded by a quotient of two kernel arguments: ptxas divides with a float reciprocal
// and two Newton/correction steps (I2F.RP, MUFU.RCP, IMAD.HI with a 64-bit addend), and the
// lanes must execute it exactly for the trip count to come out (tests/emulator/test_integer_division.py).
__global__ void per_chunk(const float* x, float* out, int n, int chunk)
{
    int steps = n / chunk;
    float s = 0.0f;
    for (int k = 0; k < steps; ++k)
        s += x[k];
    out[threadIdx.x] = s;
}
