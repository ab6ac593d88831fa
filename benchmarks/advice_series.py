"""Does the advice name the next step of a published optimisation series? (issue 34, item 5)

For each step k of a public series already in the repository, the kernel of step k is analysed
(quick, the published launch where benchmarks/accuracy gives one) and its top 3 advice items (the
advisor's ranking) are checked against the change step k+1 made. A change is named by the
optimizers that propose it, or by a remedy a message names (memory_transaction_reduction names
one remedy: 128-bit requests, coalescing, wider shared requests or registers).

The changes are read from the series' own code and write-ups, written once below, never tuned to
what the advisor says. Steps whose change is none of the advisor's remedies stay in the count
(a miss). The held-out repositories of the project are not used. The series marked `held_out` were
set aside before the advisor was tuned on the others and are reported apart, each set by when it was
set aside: FIRST before issue 34's first tuning, SECOND (series fetched for it, benchmarks/series/)
before its second, THIRD (fetched before its third, benchmarks/series/README.md) run once, at its end.
FIRST and SECOND have been run and looked at since (spent): the third tuning looks at them too.

The third set's sources are public code kept out of the repository: its steps are listed (repository,
path, commit, licence in benchmarks/series/README.md) and run where the files are in
benchmarks/series/third/; a step whose file is absent is said and left out of the count.

    python benchmarks/advice_series.py         # prints one line per step and the figure
    python benchmarks/advice_series.py tuned   # only the series tuned on at the first two tunings
    python benchmarks/advice_series.py tuning  # every set but the third (what the third tuning looks at)
    python benchmarks/advice_series.py --help  # any other argument: this text, nothing run
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks" / "accuracy"))
REAL = REPO / "tests" / "data" / "real"


@dataclass(frozen=True)
class Change:
    """What a step changed, as the advice would name it."""

    what: str
    optimizers: frozenset[str]
    words: tuple[str, ...] = ()  # message phrases that name the change (one remedy of a general item)

    def named_by(self, a) -> bool:
        return bool({a.optimizer, *a.also} & self.optimizers) or any(w in a.message for w in self.words)


COALESCE = Change("coalesce global accesses", frozenset({"coalesced_access"}), ("neighbouring lanes access",))
TILE = Change("shared-memory tiling", frozenset({"shared_memory_tiling"}))
VECTORIZE = Change("128-bit loads/stores", frozenset({"vectorize_loads"}), ("128-bit (float4",))
REGISTERS = Change("thread tiling (values reused from registers)", frozenset({"register_reuse", "register_tiling"}),
                   ("keep values that are reused in registers", "reusing what is loaded"))
SHARED_WIDE = Change("wider / conflict-free shared accesses", frozenset({"bank_conflicts"}),
                     ("shared-memory requests", "LDS.128"))
TENSOR = Change("tensor cores (lower precision)", frozenset({"reduce_precision", "tensor_cores"}))
DIVERGENCE = Change("no divergent branch / bank conflicts / add during load",
                    frozenset({"divergent_branch", "bank_conflicts", "thread_increase", "block_increase"}))
UNROLL = Change("unroll (the last warp, then completely)", frozenset({"loop_unrolling", "warp_balance"}))
MORE_WORK = Change("fewer blocks, more elements per thread",
                   frozenset({"block_increase", "thread_increase", "thread_coarsening"}),
                   ("fewer blocks", "more elements per thread"))
SHUFFLE = Change("warp shuffles instead of shared memory + syncs", frozenset({"warp_balance", "warp_shuffle"}))
BIGGER_BLOCK = Change("a block per row instead of a warp", frozenset({"thread_increase", "occupancy_limit"}))
COALESCE_TILE = Change("coalesce through a shared tile", frozenset({"coalesced_access", "shared_memory_tiling"}),
                       ("neighbouring lanes access",))
PAD_TILE = Change("pad the tile (bank conflicts)", frozenset({"bank_conflicts"}))
# The second held-out set's changes, written from each series' code and its own words (benchmarks/series/README.md)
SOA_FLOAT4 = Change("structure of arrays of float4 (coalesced, 128-bit)", frozenset({"coalesced_access", "vectorize_loads"}),
                    ("neighbouring lanes access", "128-bit (float4"))
FTZ = Change("flush denormals to zero (-ftz=true, no code change)", frozenset({"fast_math"}), ("-ftz",))
UNROLL_INNER = Change("#pragma unroll on the inner loop", frozenset({"loop_unrolling"}))
OVER_THE_ROW = Change("parallelise over the row too (more threads, each with less work)", frozenset({"block_increase"}),
                      ("more threads in the grid",))
SEQUENTIAL = Change("sequential addressing (no divergent warps, no bank conflicts)",
                    frozenset({"divergent_branch", "bank_conflicts"}))
GRID_STRIDE = Change("a grid-stride loop: as many blocks as fit at once, each thread adding many elements",
                     frozenset({"thread_coarsening"}), ("fewer blocks", "more elements per thread"))
LOADS_IN_FLIGHT = Change("four independent loads per trip (the loop unrolled by hand)", frozenset({"loop_unrolling"}))
# The third held-out set's changes, written from each series' code and its own words before the advisor ran on it
# (benchmarks/series/README.md, "Held out at the third tuning")
GRID_OF_BLOCKS = Change("a grid of blocks, one element per thread, instead of one block looping", frozenset({"block_increase"}),
                        ("more threads in the grid",))
NO_DIVERGENCE = Change("a strided index instead of tid % (2s) (no divergent warps)", frozenset({"divergent_branch"}))
NO_CONFLICTS = Change("sequential addressing (no bank conflicts)", frozenset({"bank_conflicts"}))
ADD_DURING_LOAD = Change("half the blocks, each thread adding two elements as it loads", frozenset({"thread_coarsening"}),
                         ("fewer blocks", "more elements per thread"))
LOAD_ONCE = Change("each value loaded once into a register (no re-reads after the stores)",
                   frozenset({"restrict_pointers"}))
WARP_PER_ROW_ATOMICS = Change("a warp per row (neighbouring lanes, neighbouring columns) and the atomics into shared "
                              "memory first", frozenset({"coalesced_access", "contended_atomics"}),
                              ("neighbouring lanes access",))
MORE_BLOCKS_PER_COLUMN = Change("a block per output column instead of a warp (more threads in the grid)",
                                frozenset({"block_increase"}), ("more threads in the grid",))


@dataclass(frozen=True)
class Step:
    series: str
    label: str  # step k
    source: Path
    kernel: str  # base name of step k's kernel
    then: Change  # what step k+1 changed
    case: str | None = None  # benchmarks/accuracy/run.py case name: its launch as a hint
    held_out: str = ""  # FIRST, SECOND or THIRD: kept aside before the advisor was tuned on the others, reported apart
    flags: tuple[str, ...] = ()  # the series' own nvcc flags for step k
    launch: tuple[int, int, int] | None = None  # (grid, block, dynamic smem) from the series' main in another file


TUNED, FIRST, SECOND = "", "held out at the first tuning", "held out at the second tuning"
THIRD = "held out at the third tuning"


LM = REPO / "benchmarks" / "accuracy" / "kernels" / "leimao-gemm"
HOW = REAL / "how-to-optimize-in-gpu"
NBODY = REPO / "tests" / "data" / "public-kernels" / "mini-nbody"
NB_FLAGS = (f"-I{NBODY}", "-DSHMOO")  # cuda/shmoo-cuda-nbody-*.sh
LLMC = REPO / "benchmarks" / "series" / "llm-c"
LCP = REPO / "benchmarks" / "series" / "learn-cuda-programming"
# Learn-CUDA-Programming's reduction.cpp: 2^24 floats, 256 threads, n_threads * 4 bytes of shared memory; from
# 06 on, min(blocks per SM * SMs, blocks needed) blocks: 8 blocks of 256 threads * 132 SMs on the H100 modeled
REDUCE_05, REDUCE_06 = (1 << 24) // 256, 8 * 132
THIRD_DIR = REPO / "benchmarks" / "series" / "third"  # public code kept out of the repository (README)
PJL = THIRD_DIR / "paddlejitlab-cudatutorial"
LLMC3 = THIRD_DIR / "llm-c"
STEPS: tuple[Step, ...] = (
    # leimao/CUDA-GEMM-Optimization (MIT), FP32: 00 -> 01 -> 02 -> 03 -> 04 -> 05 -> 06 -> 07
    Step("leimao-gemm", "V00", LM / "00_non_coalesced_global_memory_access.cu", "gemm_v00", COALESCE, "V00"),
    Step("leimao-gemm", "V01", LM / "01_coalesced_global_memory_access.cu", "gemm_v01", TILE, "V01"),
    Step("leimao-gemm", "V02", LM / "02_2d_block_tiling.cu", "gemm_v02", REGISTERS, "V02"),
    Step("leimao-gemm", "V03", LM / "03_2d_block_tiling_1d_thread_tiling.cu", "gemm_v03", REGISTERS, "V03"),
    Step("leimao-gemm", "V04", LM / "04_2d_block_tiling_2d_thread_tiling.cu", "gemm_v04", SHARED_WIDE, "V04"),
    Step("leimao-gemm", "V05", LM / "05_2d_block_tiling_2d_thread_tiling_matrix_transpose.cu", "gemm_v05",
         SHARED_WIDE, "V05"),
    Step("leimao-gemm", "V06", LM / "06_2d_block_tiling_2d_warp_tiling_2d_thread_tiling_matrix_transpose.cu",
         "gemm_v06", TENSOR, "V06"),
    # ... and each version's "_vectorized_memory_access" sibling
    Step("leimao-gemm vec", "V02", LM / "02_2d_block_tiling.cu", "gemm_v02", VECTORIZE, "V02"),
    # how-to-optimize-in-gpu (Apache-2.0) reductions in the repository: v0 -> v3 -> v5 -> v6 -> v7
    Step("how-to-optimize reduce", "v0", HOW / "reduce_v0_baseline.cu", "reduce0", DIVERGENCE),
    Step("how-to-optimize reduce", "v3", HOW / "reduce_v3_add_during_load.cu", "reduce3", UNROLL),
    Step("how-to-optimize reduce", "v5", HOW / "reduce_v5_completely_unroll.cu", "reduce5", MORE_WORK),
    Step("how-to-optimize reduce", "v6", HOW / "reduce_v6_multi_add.cu", "reduce6", SHUFFLE),
    # how-to-optimize-in-gpu elementwise add: scalar -> float2 -> float4
    Step("how-to-optimize elementwise", "add", HOW / "elementwise_add.cu", "add", VECTORIZE),
    # NVIDIA code-samples transpose (BSD-3): naive -> coalesced (tile) -> no bank conflicts
    Step("transpose", "naive", REAL / "code-samples" / "transpose.cu", "transposeNaive", COALESCE_TILE),
    Step("transpose", "coalesced", REAL / "code-samples" / "transpose.cu", "transposeCoalesced", PAD_TILE),
    # llm.c layernorm_forward: kernel3 (a warp per row) -> kernel5 (a block per row)
    Step("llm.c layernorm", "k3", REPO / "benchmarks" / "accuracy" / "kernels" / "llm-c" / "layernorm-d5601d16"
         / "layernorm_forward.cu", "layernorm_forward_kernel3", BIGGER_BLOCK, "layernorm k3 bs32", held_out=FIRST),
    # blackwell-tensorcore-kernels (MIT): naive -> tiled -> wmma
    Step("tc-gemm", "naive", REPO / "benchmarks" / "accuracy" / "kernels" / "blackwell-tensorcore" / "gemm_naive.cu",
         "gemm_naive", TILE, held_out=FIRST),
    Step("tc-gemm", "tiled", REPO / "benchmarks" / "accuracy" / "kernels" / "blackwell-tensorcore" / "gemm_tiled.cu",
         "gemm_tiled", TENSOR, held_out=FIRST),
    # --- held out at the second tuning: fetched and written here before the advisor was changed again ---
    # harrism/mini-nbody (Apache-2.0), README: orig -> soa -> soa + ftz -> block -> unroll
    Step("mini-nbody", "orig", NBODY / "cuda" / "nbody-orig.cu", "bodyForce", SOA_FLOAT4, held_out=SECOND,
         flags=NB_FLAGS),
    Step("mini-nbody", "soa", NBODY / "cuda" / "nbody-soa.cu", "bodyForce", FTZ, held_out=SECOND, flags=NB_FLAGS),
    Step("mini-nbody", "soa ftz", NBODY / "cuda" / "nbody-soa.cu", "bodyForce", TILE, held_out=SECOND,
         flags=(*NB_FLAGS, "-ftz=true")),
    Step("mini-nbody", "block", NBODY / "cuda" / "nbody-block.cu", "bodyForce", UNROLL_INNER, held_out=SECOND,
         flags=(*NB_FLAGS, "-ftz=true")),
    # karpathy/llm.c (MIT) dev/cuda/softmax_forward.cu: versions 1 -> 2 -> 3 -> 4, and online 5 -> 6
    Step("llm.c softmax", "k1", LLMC / "softmax_forward.cu", "softmax_forward_kernel1", OVER_THE_ROW, held_out=SECOND),
    Step("llm.c softmax", "k2", LLMC / "softmax_forward.cu", "softmax_forward_kernel2", SHUFFLE, held_out=SECOND),
    Step("llm.c softmax", "k3", LLMC / "softmax_forward.cu", "softmax_forward_kernel3", BIGGER_BLOCK, held_out=SECOND),
    Step("llm.c softmax", "online1", LLMC / "softmax_forward.cu", "softmax_forward_online_kernel1", OVER_THE_ROW,
         held_out=SECOND),
    # llm.c encoder_forward.cu: 1 -> 2 (over all of B,T,C) -> 3 (float4 reads/writes)
    Step("llm.c encoder", "k1", LLMC / "encoder_forward.cu", "encoder_forward_kernel1", OVER_THE_ROW, held_out=SECOND),
    Step("llm.c encoder", "k2", LLMC / "encoder_forward.cu", "encoder_forward_kernel2", VECTORIZE, held_out=SECOND),
    # llm.c gelu_forward.cu and residual_forward.cu: 1 -> 2 (Packed128: 128-bit reads and writes)
    Step("llm.c gelu", "k1", LLMC / "gelu_forward.cu", "gelu_forward_kernel1", VECTORIZE, held_out=SECOND),
    Step("llm.c residual", "k1", LLMC / "residual_forward.cu", "residual_forward_kernel1", VECTORIZE, held_out=SECOND),
    # PacktPublishing/Learn-CUDA-Programming (MIT): chapter 2's AoS -> SoA and transposes, chapter 3's reductions
    Step("Learn-CUDA aos/soa", "aos", LCP / "chapter02" / "aos.cu", "complicatedCalculation", COALESCE,
         held_out=SECOND),
    Step("Learn-CUDA transpose", "naive", LCP / "chapter02" / "matrix_transpose.cu", "matrix_transpose_naive",
         COALESCE_TILE, held_out=SECOND),
    Step("Learn-CUDA transpose", "shared", LCP / "chapter02" / "matrix_transpose.cu", "matrix_transpose_shared",
         PAD_TILE, held_out=SECOND),
    Step("Learn-CUDA reduction", "interleaved", LCP / "05_warp_divergence" / "reduction_kernel_interleaving.cu",
         "reduction_kernel_1", SEQUENTIAL, held_out=SECOND, launch=(REDUCE_05, 256, 1024)),
    Step("Learn-CUDA reduction", "sequential", LCP / "05_warp_divergence" / "reduction_kernel_sequential.cu",
         "reduction_kernel_2", GRID_STRIDE, held_out=SECOND, launch=(REDUCE_05, 256, 1024)),
    Step("Learn-CUDA reduction", "grid-stride", LCP / "06_limiter_balancing" / "reduction_kernel.cu",
         "reduction_kernel", LOADS_IN_FLIGHT, held_out=SECOND, launch=(REDUCE_06, 256, 1024)),
    Step("Learn-CUDA reduction", "4 loads", LCP / "06_limiter_balancing" / "reduction_kernel_opt.cu",
         "reduction_kernel", SHUFFLE, held_out=SECOND, launch=(REDUCE_06, 256, 1024)),
    # --- held out at the third tuning: fetched and written here before the advisor was changed a third time ---
    # PaddleJitLab/CUDATutorial (Apache-2.0): 04 one block -> a grid; 08/09 reduce naive -> interleaved addressing ->
    # bank-conflict free -> idle threads free -> unroll the last warp
    Step("CUDATutorial vector add", "one block", PJL / "vector_add_thread.cu", "add_kernel", GRID_OF_BLOCKS,
         held_out=THIRD),
    Step("CUDATutorial reduce", "naive", PJL / "reduce_naive.cu", "reduce_naive_kernel", NO_DIVERGENCE, held_out=THIRD),
    Step("CUDATutorial reduce", "interleaved", PJL / "reduce_interleaved_addressing.cu", "reduce_naive_kernel",
         NO_CONFLICTS, held_out=THIRD),
    Step("CUDATutorial reduce", "no conflicts", PJL / "reduce_bank_conflict_free.cu",
         "reduce_bank_conflict_free_kernel", ADD_DURING_LOAD, held_out=THIRD),
    Step("CUDATutorial reduce", "idle free", PJL / "reduce_idle_threads_free.cu", "reduce_idle_thread_free", UNROLL,
         held_out=THIRD),
    # karpathy/llm.c (MIT) dev/cuda: adamw 1 -> 2, layernorm_backward 1 -> 2, gelu_backward 1 -> 2,
    # matmul_backward_bias 1 -> 2 -> 3 -> 4
    Step("llm.c adamw", "k1", LLMC3 / "adamw.cu", "adamw_kernel1", LOAD_ONCE, held_out=THIRD),
    Step("llm.c layernorm_backward", "k1", LLMC3 / "layernorm_backward.cu", "layernorm_backward_kernel1",
         WARP_PER_ROW_ATOMICS, held_out=THIRD),
    Step("llm.c gelu_backward", "k1", LLMC3 / "gelu_backward.cu", "gelu_backward1", VECTORIZE, held_out=THIRD),
    Step("llm.c matmul_backward_bias", "k1", LLMC3 / "matmul_backward_bias.cu", "matmul_backward_bias_kernel1",
         SHUFFLE, held_out=THIRD),
    Step("llm.c matmul_backward_bias", "k2", LLMC3 / "matmul_backward_bias.cu", "matmul_backward_bias_kernel2",
         MORE_BLOCKS_PER_COLUMN, held_out=THIRD),
    Step("llm.c matmul_backward_bias", "k3", LLMC3 / "matmul_backward_bias.cu", "matmul_backward_bias_kernel3",
         COALESCE, held_out=THIRD),
)


def _flags(path: Path) -> tuple[str, ...]:
    if not path.is_relative_to(REAL):
        return ()
    table = json.loads((REAL / "build_flags.json").read_text())
    given = [*table.get("*", []), *table.get(str(path.relative_to(REAL)), [])]
    return tuple(f.replace("{real}", str(REAL)) for f in given if f.startswith(("-I", "-D")))


def analyse(step: Step):
    """(the result, the mangled name of step k's kernel: the case's template instance where there is one)"""
    if step.case is not None:
        import run

        case = next(c for c in run.CASES if c.name in (step.case, f"fp32 {step.case}"))  # leimao: the FP32 series
        result = run.analyze_case(case)
        return result, run.kernel_report(case, result).mangled
    from kernelscope.analysis.measure.ncu_report import base_name

    hint = (step.kernel, step.launch) if step.launch else None
    result = _quick(step.source, (*_flags(step.source), *step.flags), hint)
    return result, next(k.mangled for k in result.kernels if base_name(k.name) == step.kernel)


@functools.lru_cache(maxsize=None)
def _quick(source: Path, flags: tuple[str, ...], hint: tuple[str, tuple[int, int, int]] | None):
    """One quick analysis per file, flags and launch: a series' steps often share a file"""
    from kernelscope.analysis.options import AnalysisOptions, LaunchHint
    from kernelscope.analysis.pipeline import analyze

    hints = {}
    if hint is not None:
        grid, block, smem = hint[1]
        hints[hint[0]] = LaunchHint(grid=grid, block=block, dynamic_smem=smem or None)
    return analyze(source, AnalysisOptions(flags=flags, launch_hints=hints), depth="quick")


def ranked(result, mangled: str):
    return [a for a in result.advice if a.kernel == mangled]  # result.advice is in rank order


def main(argv: list[str] | None = None) -> int:
    only = set(argv if argv is not None else sys.argv[1:])  # "tuned" or "tuning": the sets a tuning may look at
    if only - {"tuned", "tuning"}:
        # anything else (`--help` included) runs nothing: a mistyped mode must not run the third set
        print(__doc__)
        return 2
    # per set: steps, named in the top 3, at any rank, first; and, since a list of 3 or fewer items makes
    # "top 3" mean "any rank", the steps with more than 3 items and their top-3 hits; and the top-3 hits
    # whose item is at the 1.5x cap beside another capped item of the top 3 (a rank decided in a tie)
    tally = {held: [0] * 7 for held in (TUNED, FIRST, SECOND, THIRD)}
    from kernelscope.analysis.advisor.optimizers.base import MAX_UNMODELED

    for step in STEPS:
        if ("tuned" in only and step.held_out) or ("tuning" in only and step.held_out == THIRD):
            continue
        if not step.source.exists():
            print(f"absent {step.series} {step.label}: {step.source.relative_to(REPO)} (benchmarks/series/README.md)")
            continue
        items = ranked(*analyse(step))
        rank = next((n for n, a in enumerate(items, 1) if step.then.named_by(a)), None)
        hit = rank is not None and rank <= 3
        capped = [a for a in items[:3] if a.speedup >= MAX_UNMODELED - 1e-9]
        t = tally[step.held_out]
        t[0] += 1
        t[1] += hit
        t[2] += rank is not None
        t[3] += rank == 1
        t[4] += len(items) > 3
        t[5] += hit and len(items) > 3
        t[6] += hit and items[rank - 1] in capped and len(capped) > 1
        names = ", ".join(f"{a.optimizer} {a.speedup:.2f}×" for a in items[:3]) or "no advice"
        series = step.series + (f" ({step.held_out})" if step.held_out else "")
        print(f"{'HIT ' if hit else 'miss'} {series:52} {step.label:11} next: {step.then.what:45} "
              f"rank {rank or '-'} of {len(items)}; top 3: {names}", flush=True)
    print()
    for held, what in ((TUNED, "series tuned on"), (FIRST, "series held out at the first tuning"),
                       (SECOND, "series held out at the second tuning"), (THIRD, "series held out at the third tuning")):
        n, top3, anywhere, first, long, long_top3, tied = tally[held]
        print(f"{what}: {top3} of {n} steps ({100 * top3 / max(1, n):.0f} %): the top 3 name the next step; "
              f"{anywhere} name it at any rank, {first} first; {long_top3} of the {long} steps with more than 3 "
              f"items in the top 3; {tied} of the top-3 hits ranked among items at the {MAX_UNMODELED}× cap")
    n, top3 = sum(t[0] for t in tally.values()), sum(t[1] for t in tally.values())
    print(f"all: {top3} of {n} steps ({100 * top3 / n:.0f} %), {sum(t[3] for t in tally.values())} first")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
