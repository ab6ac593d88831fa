"""Issue 34, item 4: the launch-shape optimizers say exactly what to change, for any block shape
(GPA's block and thread increase, Eq. 6-10). Real nvcc output, the whole quick pipeline."""

from __future__ import annotations

from kernelscope.analysis.advisor.optimizers.parallel import scaled, shape, warps_text
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

_TWO_D = """
__global__ void add2d(const float* a, float* b, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    b[y * w + x] += a[y * w + x];
}
__global__ void rows(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < 64; ++k) s += a[i + k * n];
    b[i] = s;
}
int main() {
    float *a, *b;
    add2d<<<dim3(256, 256), dim3(8, 4)>>>(a, b, 2048);
    rows<<<32, 512>>>(a, b, 16384);
}
"""


def _analysed(toolchain, tmp_path):
    path = tmp_path / "shapes.cu"
    path.write_text(_TWO_D)
    return analyze(path, AnalysisOptions(), toolchain=toolchain, depth="quick")


def test_a_two_dimensional_block_limited_by_blocks_grows_along_x(toolchain, tmp_path):
    r = _analysed(toolchain, tmp_path)
    (a,) = [a for a in r.advice if a.optimizer == "thread_increase" and a.kernel_name.startswith("add2d")]
    # 1 warp per block, 32 blocks per SM: half the warp slots; (16, 4) fills them
    assert "blockDim (8, 4) -> (16, 4)" in a.message and "32 blocks (32 warps)" in a.message, a.message
    assert a.fix is None  # a 2-D blockDim is no single literal to edit


def test_block_increase_splits_blocks_keeping_the_threads(toolchain, tmp_path):
    r = _analysed(toolchain, tmp_path)
    (a,) = [a for a in r.advice if a.optimizer == "block_increase" and a.kernel_name.startswith("rows")]
    # 32 blocks of 16 warps for 132 SMs: 4x the blocks of 4 warps each (one per scheduler)
    assert "blockDim 512 -> 128 with 4× the blocks (32 -> 128)" in a.message, a.message
    assert a.estimate.inputs["T_now_s"] == next(k for k in r.kernels if k.mangled == a.kernel).predicted_duration_s


def test_shapes_and_warps_are_said_as_they_are():
    assert shape((16, 16, 1)) == "(16, 16)" and shape((256, 1, 1)) == "256" and shape((8, 8, 4)) == "(8, 8, 4)"
    assert scaled((16, 16, 1), 2) == (32, 16, 1) and scaled((1024, 1, 1), 2) == (1024, 1, 1)
    assert scaled((512, 1, 1), 1 / 4) == (128, 1, 1) and scaled((16, 16, 1), 1 / 2) == (16, 8, 1)
    assert warps_text(1, 2) == "1 block (2 warps)" and warps_text(4, 8) == "4 blocks (32 warps)"


_TAIL = """
__global__ void saxpy(const float* x, float* y, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];
}
int main() {
    float *x, *y;
    saxpy<<<290, 768>>>(x, y, 2.0f);
}
"""


def test_a_tail_wave_gets_the_block_shape_that_fills_it(toolchain, tmp_path):
    """290 blocks of 768 threads, 2 per SM on 132 SMs: 1.10 waves, the second one 10 % full. Blocks of
    384 threads fit 5 per SM: 580 blocks in 0.88 of a wave."""
    path = tmp_path / "tail.cu"
    path.write_text(_TAIL)
    r = analyze(path, AnalysisOptions(), toolchain=toolchain, depth="quick")
    (a,) = [a for a in r.advice if a.optimizer == "wave_tail"]
    assert "1.10 waves" in a.message and "blockDim 768 -> 384 and the grid 290 -> 580 blocks" in a.message, a.message
    assert a.importance_basis != "of samples" and 1.05 < a.speedup <= 1.5  # no re-model: capped



_SMALL = """
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
__global__ void compute(const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[8];
    for (int j = 0; j < 8; ++j) v[j] = x[i] + j;
    for (int k = 0; k < 64; ++k)
        for (int j = 0; j < 8; ++j) v[j] = v[j] * 0.999f + 0.5f;
    y[i] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}
int main() {
    float *x, *y;
    scale<<<16, 256>>>(x, 4096);
    compute<<<16, 256>>>(x, y);
}
"""


def test_a_split_is_estimated_by_running_the_split_launch(toolchain, tmp_path):
    path = tmp_path / "small.cu"
    path.write_text(_SMALL)
    r = analyze(path, AnalysisOptions(), toolchain=toolchain, depth="full")
    by_kernel = {k.name.split("(")[0]: k for k in r.kernels}
    items = {a.kernel_name.split("(")[0]: a for a in r.advice if a.optimizer == "block_increase"}
    # one element per thread, a load and a store apart: the 16 blocks split into 32 of 128 threads
    # run no faster in the model (a warp's latency, not the SM's throughput, sets the time), and a
    # thread that does not loop has no work to spread over more threads: no item
    assert "scale" in by_kernel and "scale" not in items, items.get("scale")
    # eight independent FMA chains per thread keep the FP32 pipe busy: the split's 32 SMs do it sooner
    a = items["compute"]
    assert "blockDim 256 -> 128 with 2× the blocks (16 -> 32)" in a.message, a.message
    assert a.estimate.formula.startswith("emulator what-if (block 128)") and a.estimate.speedup > 1.2
    assert a.estimate.inputs["T_now_s"] == by_kernel["compute"].predicted_duration_s
