"""Launch-shape advice on a block read from the program's own block-size sweep, and on a grid with fewer
warps than the GPU has warp schedulers (issue 34 items 4 and 5).

* A main() that launches every `block_sizes[j]` (llm.c's dev/cuda programs) is modeled at the sweep's
  first block: the larger blocks are configurations the program already launches, so "use larger
  blocks" is withheld there; the same kernel launched with a block written once gets it.
* A thread per row that loops over the row (softmax kernel1, encoder kernel1 of llm.c): 8192 rows are
  256 warps for the 528 schedulers of an H100 whatever the block, and the advice is more threads in the
  grid, each with less work, bounded by the schedulers the warps would fill. A grid with a warp per
  scheduler, or threads with no loop to split, get no such item.
"""

from __future__ import annotations

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

KERNEL = """#define C 1024
__global__ void rowsum(const float* in, float* out, int n, int c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int j = 0; j < c; j++) s += in[i * c + j];
        out[i] = s;
    }
}
"""

SWEPT = KERNEL + """
void launch(const float* in, float* out, int n, int block_size)
{
    int grid = (n + block_size - 1) / block_size;
    rowsum<<<grid, block_size>>>(in, out, n, C);
}

int main()
{
    int n = %d;
    float *in, *out;
    cudaMalloc(&in, n * C * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    int block_sizes[] = {32, 64, 128, 256, 512, 1024};
    for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
        int block_size = block_sizes[j];
        launch(in, out, n, block_size);
    }
    return 0;
}
"""

FIXED = KERNEL + """
int main()
{
    int n = 8192;
    float *in, *out;
    cudaMalloc(&in, n * C * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    rowsum<<<n / 32, 32>>>(in, out, n, C);
    return 0;
}
"""

COPY = """__global__ void copy(const float* in, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

int main()
{
    float *in, *out;
    cudaMalloc(&in, 8192 * sizeof(float));
    cudaMalloc(&out, 8192 * sizeof(float));
    copy<<<8192 / 32, 32>>>(in, out);
    return 0;
}
"""


def _analyse(source: str, toolchain, tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(source)
    result = analyze(path, AnalysisOptions(arch="sm_90"), toolchain=toolchain, depth="quick")
    (kernel,) = result.kernels
    profile = next(p for p in result.profile.kernels if p.kernel == kernel.mangled)
    return profile, [a for a in result.advice if a.kernel == kernel.mangled]


def _idle_schedulers(items):
    return [a for a in items if a.optimizer == "block_increase" and "more threads in the grid" in a.message]


def test_a_swept_block_gets_no_larger_block_but_more_threads_in_the_grid(toolchain, tmp_path):
    profile, items = _analyse(SWEPT % 8192, toolchain, tmp_path)
    block = next(a for a in profile.provenance.assumptions if a.name == "block")
    assert profile.launch.threads_per_block == 32 and "sweeps this launch" in block.detail  # the premise
    assert not [a for a in items if a.optimizer == "thread_increase"], [a.message for a in items]
    (a,) = _idle_schedulers(items)
    warps = profile.launch.blocks * profile.launch.threads_per_block // 32
    assert a.estimate.inputs["W_grid"] == warps == 256
    schedulers = a.estimate.inputs["schedulers"]
    assert schedulers > warps and f"{int(schedulers) - warps} schedulers get no warp" in a.message
    assert 1.0 < a.speedup <= min(schedulers / warps, 1.5) + 1e-9  # the bound, capped until re-modeled
    assert a.estimate.inputs["T_now_s"] == profile.duration_s
    assert a.importance == 1 - warps / schedulers and a.importance_basis == "of the warp schedulers idle"


def test_a_block_written_once_still_gets_larger_blocks(toolchain, tmp_path):
    profile, items = _analyse(FIXED, toolchain, tmp_path)
    assert profile.launch.threads_per_block == 32
    assert [a for a in items if a.optimizer == "thread_increase"], [a.message for a in items]
    assert _idle_schedulers(items)  # 256 warps whatever the block


def test_a_grid_with_a_warp_per_scheduler_gets_no_more_threads(toolchain, tmp_path):
    _, items = _analyse(SWEPT % (1 << 16), toolchain, tmp_path)  # 2048 warps
    assert not _idle_schedulers(items), [a.message for a in items]


def test_threads_without_a_loop_have_no_work_to_split(toolchain, tmp_path):
    profile, items = _analyse(COPY, toolchain, tmp_path)
    assert profile.launch.blocks * profile.launch.threads_per_block // 32 == 256  # as few warps as the rows
    assert not _idle_schedulers(items), [a.message for a in items]
