"""Modeled vs measured: `python benchmarks/accuracy/run.py` (no GPU needed).

Each entry is a real kernel with a time (or a bandwidth / FLOP rate converted to a time with the
published problem size) measured on a named GPU; README.md says where each figure was published
and where each source file comes from. Every kernel is analysed at depth="quick" (one emulation)
with its exact published launch, on the device it was measured on. The script prints:

* per kernel: predicted vs measured time, their ratio, and where the launch came from (a grid,
  block or loop trip count that fell to the model's default is flagged with "!");
* per optimisation series: Spearman rank correlation of predicted vs measured times, and the
  predicted vs measured speedup of each step;
* where an .ncu-rep with source lines exists: the per-line hotspot rank correlation between the
  modeled line shares and the report's measured stall samples;
* overall, per split and per device: geomean |log ratio| (as an error factor) and the fractions
  within 1.5x and 2x;
* the physical-limit invariant (issue #20): every kernel whose prediction breaks a limit of
  `analysis/emulator/limits.py:limit_violations` (FLOP/s above the device's peak for a precision,
  bytes/s above a level's bandwidth) or whose published work (a GEMM's 2·M·N·K) would run above the
  device's peak in the predicted time. Any such kernel is listed and the script exits with status 1:
  a prediction beyond the hardware is a bug in the model, never a figure to report.

The split is a fixed rule (SPLIT_RULE), chosen before the model's error on this set was looked
at: the 1st, 4th, 7th, ... series in CASES order are `test`, the rest `train`. No parameter of
the model is tuned here. `--markdown` also prints the table rows for docs/accuracy.md.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KERNELS = HERE / "kernels"
REPORTS = HERE / "reports"

SPLIT_RULE = "series 1, 4, 7, ... in CASES order are test (fixed before any error on this set was seen)"


def from_tflops(flop: float, tflops: float) -> float:
    """Seconds for `flop` operations at a published rate in TFLOP/s."""
    return flop / (tflops * 1e12)


def from_gbs(nbytes: float, gbs: float) -> float:
    """Seconds for `nbytes` at a published bandwidth in GB/s (1e9 B/s, as the sources compute it)."""
    return nbytes / (gbs * 1e9)


@dataclass(frozen=True)
class Case:
    name: str              # label in the table
    series: str            # optimisation series (its steps are compared by speedup, in CASES order)
    source: Path           # the .cu analysed (copied under kernels/, see README.md)
    kernel: str            # kernel base name: the key of its launch hint
    device: str            # device in analysis/data/arch_specs.toml; its arch is the compile target
    measured_s: float | None   # None: the median gpu__time_duration of `report`'s launches of this kernel
    figure: str            # the published figure, as published
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    instance: str | None = None    # substring of the demangled name that selects one template instance
    dynamic_smem: int = 0
    values: dict[str, int] = field(default_factory=dict)
    trip: int | None = None        # source iterations of the loops whose bound the model cannot fold (`trip=`)
    report: Path | None = None     # .ncu-rep with line info: per-line hotspot correlation
    # the published problem's arithmetic (FLOPs, roofline ceiling it runs on): the predicted time may not
    # be shorter than this work at the device's peak (the physical-limit invariant, issue #20)
    work: tuple[float, str] | None = None

    def analysis_key(self) -> tuple:
        """Cases with the same key share one analysis (they differ only in the template instance read)."""
        return (self.source, self.device, self.kernel, self.grid, self.block, self.dynamic_smem,
                tuple(sorted(self.values.items())), self.trip)


GEMM4096 = 2 * 4096**3
LEIMAO = KERNELS / "leimao-gemm"
LM_VALUES = {"m": 4096, "n": 4096, "k": 4096, "lda": 4096, "ldb": 4096, "ldc": 4096}
# Lei Mao's launches (kernels/leimao-gemm/*.cu, launch_gemm_kernel_*): (label, file, kernel, grid, block,
# BLOCK_TILE_SIZE_K). The kernels' K loop runs `num_thread_block_tiles = (k + BLOCK_TILE_SIZE_K - 1) /
# BLOCK_TILE_SIZE_K` times, a local `size_t const` the model does not fold from k, so it is given as a value.
LM_KERNELS = (
    ("V00", "00_non_coalesced_global_memory_access.cu", "gemm_v00", (128, 128, 1), (32, 32, 1), None),
    ("V01", "01_coalesced_global_memory_access.cu", "gemm_v01", (128, 128, 1), (32, 32, 1), None),
    ("V02", "02_2d_block_tiling.cu", "gemm_v02", (128, 128, 1), (32, 32, 1), 32),
    ("V02 vec", "02_2d_block_tiling_vectorized_memory_access.cu", "gemm_v02_vectorized", (128, 128, 1),
     (32, 32, 1), 32),
    ("V03", "03_2d_block_tiling_1d_thread_tiling.cu", "gemm_v03", (64, 64, 1), (512, 1, 1), 8),
    ("V03 vec", "03_2d_block_tiling_1d_thread_tiling_vectorized_memory_access.cu", "gemm_v03_vectorized",
     (64, 64, 1), (512, 1, 1), 8),
    ("V04", "04_2d_block_tiling_2d_thread_tiling.cu", "gemm_v04", (32, 32, 1), (256, 1, 1), 16),
    ("V04 vec", "04_2d_block_tiling_2d_thread_tiling_vectorized_memory_access.cu", "gemm_v04_vectorized",
     (32, 32, 1), (256, 1, 1), 16),
    ("V05", "05_2d_block_tiling_2d_thread_tiling_matrix_transpose.cu", "gemm_v05", (32, 32, 1), (256, 1, 1), 16),
    ("V05 vec", "05_2d_block_tiling_2d_thread_tiling_matrix_transpose_vectorized_memory_access.cu",
     "gemm_v05_vectorized", (32, 32, 1), (256, 1, 1), 16),
    ("V06", "06_2d_block_tiling_2d_warp_tiling_2d_thread_tiling_matrix_transpose.cu", "gemm_v06",
     (32, 32, 1), (256, 1, 1), 16),
    ("V06 vec", "06_2d_block_tiling_2d_warp_tiling_2d_thread_tiling_matrix_transpose_vectorized_memory_access.cu",
     "gemm_v06_vectorized", (32, 32, 1), (256, 1, 1), 16),
    ("V07", "07_2d_block_tiling_2d_warp_tiling_2d_thread_tiling_matrix_transpose_wmma.cu", "gemm_v07",
     (32, 32, 1), (256, 1, 1), 16),
    ("V07 vec", "07_2d_block_tiling_2d_warp_tiling_2d_thread_tiling_matrix_transpose_wmma_vectorized_memory_access.cu",
     "gemm_v07_vectorized", (32, 32, 1), (256, 1, 1), 16),
)
# README.md of leimao/CUDA-GEMM-Optimization at 22f2247 (FP32) and 36bef3c (FP16), TFLOP/s at 4096^3.
LM_FP32 = {"V00": 0.278129, "V01": 1.7218, "V02": 2.66157, "V02 vec": 1.90514, "V03": 8.91318, "V03 vec": 4.04796,
           "V04": 13.0247, "V04 vec": 15.027, "V05": 11.1448, "V05 vec": 19.6688, "V06": 11.0703, "V06 vec": 20.1649}
LM_FP16 = {"V00": 0.284095, "V01": 1.7316, "V02": 2.46677, "V02 vec": 1.93088, "V03": 8.67563, "V03 vec": 2.14047,
           "V04": 20.2746, "V04 vec": 22.9001, "V05": 18.3736, "V05 vec": 27.962, "V06": 14.7622, "V06 vec": 28.4588,
           "V07": 33.808, "V07 vec": 46.7866}


def leimao(series: str, precision: str, instance: str, rates: dict[str, float]) -> tuple[Case, ...]:
    return tuple(
        Case(f"{precision} {label}", series, LEIMAO / f, kernel, "RTX 3090", from_tflops(GEMM4096, rates[label]),
             f"{rates[label]} TFLOP/s", grid, block, instance=instance,
             values={**LM_VALUES, **({"num_thread_block_tiles": 4096 // bk} if bk else {})},
             work=(GEMM4096, "tensor_fp16" if label.startswith("V07") else precision))
        for label, f, kernel, grid, block, bk in LM_KERNELS if label in rates)


TC = KERNELS / "blackwell-tensorcore"
TC_VALUES = {"M": 4096, "N": 4096, "K": 4096}


def tc_cases(series: str, device: str, ms: dict[str, float]) -> tuple[Case, ...]:
    """waynehacking8/blackwell-tensorcore-kernels, results/bench.csv rows at M=N=K=4096 (ms per GEMM)."""
    # launch_* in kernels/blackwell-tensorcore/*.cu at M=N=K=4096: (file, kernel, instance, grid, block, dynamic
    # smem, values, trip). The K loops run numTiles / numSlabs = K / 32 = 128 times (locals the model does not fold
    # from K). The shared-memory fill loops `for (i = tid; i < CHUNKS; i += NTHREADS)` have a constant bound but
    # start at the thread index, which the model does not bound: `trip` gives their source iterations (CHUNKS, each
    # thread running CHUNKS / NTHREADS of them), the same for the A and the B loop of each kernel.
    mma = "gemm_mma_t<128, 128, 32, "
    launches = {
        "naive": (TC / "gemm_naive.cu", "gemm_naive", None, (256, 256, 1), (16, 16, 1), 0, {}, None),
        "tiled": (TC / "gemm_tiled.cu", "gemm_tiled", None, (128, 128, 1), (32, 32, 1), 0, {}, None),
        "wmma": (TC / "gemm_wmma.cu", "gemm_wmma_t", "gemm_wmma_t<128, 128, 3>", (32, 32, 1), (512, 1, 1), 49152,
                 {"numTiles": 128}, 512),
        "mma_base": (TC / "gemm_mma.cu", "gemm_mma_t", mma + "32, 32, 1, false, false>", (32, 32, 1), (512, 1, 1),
                     16384, {"numSlabs": 128}, 4096),
        "mma_swizzle": (TC / "gemm_mma.cu", "gemm_mma_t", mma + "32, 32, 1, false, true>", (32, 32, 1),
                        (512, 1, 1), 16384, {"numSlabs": 128}, 4096),
        "mma_vec": (TC / "gemm_mma.cu", "gemm_mma_t", mma + "32, 32, 1, true, true>", (32, 32, 1), (512, 1, 1),
                    16384, {"numSlabs": 128}, 512),
        "mma_pipe": (TC / "gemm_mma.cu", "gemm_mma_t", mma + "32, 32, 2, true, true>", (32, 32, 1), (512, 1, 1),
                     32768, {"numSlabs": 128}, 512),
        "mma_warptile": (TC / "gemm_mma.cu", "gemm_mma_t", mma + "64, 64, 2, true, true>", (32, 32, 1),
                         (128, 1, 1), 32768, {"numSlabs": 128}, 512),
    }
    out = []
    for label, t_ms in ms.items():
        src, kernel, inst, grid, block, smem, values, trip = launches[label]
        out.append(Case(label, series, src, kernel, device, t_ms * 1e-3, f"{t_ms} ms", grid, block,
                        instance=inst, dynamic_smem=smem, values={**TC_VALUES, **values}, trip=trip,
                        work=(GEMM4096, "fp32" if label in ("naive", "tiled") else "tensor_fp16")))
    return tuple(out)


MT = KERNELS / "matmul-tutorial"
MT_GEMM = 2 * 5376 * 5376 * 2048


def matmul_tutorial_cases(series: str, device: str, ms: dict[str, float]) -> tuple[Case, ...]:
    """KnowingNothing/MatmulTutorial, examples/matmul/this-sm80: each matmul-vNN.cu's header comment gives its
    time ("Running cost of CUDA kernel is ... ms": cudaEvent over 200 back-to-back launches after warm-up) at
    M = N = 5376, K = 2048 (FP16 in, FP32 accumulate, FP16 out). Launch from main.cu: grid (N / 128, M / 128),
    block (32, 2 x multi_threading, 2), dynamic shared memory max(4 stages x 128 x 32 x 2 x 2, 128 x 128 x 4)
    = 64 KiB; cmd.sh runs v08-v11 with `multi_threading 2`, the others with 1."""
    return tuple(
        Case(f"mt {v}", series, MT / f"matmul-{v}.cu", "matmul", device, t_ms * 1e-3, f"{t_ms} ms", (42, 42, 1),
             (32, 4 if v in ("v08", "v09", "v10", "v11") else 2, 2), dynamic_smem=65536,
             values={"M": 5376, "N": 5376, "K": 2048}, work=(MT_GEMM, "tensor_fp16"))
        for v, t_ms in ms.items())


MMA_MATMUL = KERNELS / "mma-matmul"


def mma_matmul_cases() -> tuple[Case, ...]:
    """spatters/mma-matmul's README table at 39d91be: FP16 in, FP32 accumulate, M = N = K = 4096 on an RTX 4090
    at locked clocks (2520 MHz graphics, the card's boost), `gpu__time_duration` under ncu. Launches from
    runner.cu's `run_mma_kernel`: block 16x16, grid ceilDiv(4096, tile) in x and y (tile 32, 64 or 128)."""
    # (label, file, kernel, block tile, measured µs); kernels 2.x and 3.x read B transposed (B_T), same shapes
    steps = (("mma 1.0 naive", "kernel_1.cu", "mma_matmul_1_0", 32, 4680),
             ("mma 1.1 2x tiling", "kernel_1.cu", "mma_matmul_1_1", 64, 2400),
             ("mma 2.0 permuted smem", "kernel_2.cu", "mma_matmul_2_0", 64, 1080),
             ("mma 2.1 register tweak", "kernel_2.cu", "mma_matmul_2_1", 64, 1030),
             ("mma 3.0 3-stage async", "kernel_3.cu", "mma_matmul_3_0", 64, 1000),
             ("mma 3.1 3-stage 4x tiling", "kernel_3.cu", "mma_matmul_3_1", 128, 895))
    return tuple(Case(label, "mma-matmul-rtx4090", MMA_MATMUL / f, kernel, "RTX 4090", us * 1e-6, f"{us} us",
                      (4096 // tile, 4096 // tile, 1), (16, 16, 1), values={"M": 4096, "N": 4096, "K": 4096},
                      work=(GEMM4096, "tensor_fp16"))
                 for label, f, kernel, tile, us in steps)


SUM = KERNELS / "fast-cu" / "sum.cu"
LLMC = KERNELS / "llm-c"
LAYERNORM_BYTES = 2 * 8 * 1024 * 768 * 4  # memory_ops in layernorm_forward.cu's main (B=8, T=1024, C=768)

CASES: tuple[Case, ...] = (
    # 1 (test) -- Turing
    Case("naive_gemm 1024^3", "gemm-gtx1660s", KERNELS / "naive_gemm.cu", "naive_gemm", "GTX 1660 SUPER",
         4.789792e-3, "4.790 ms (gpu__time_duration)", (32, 32, 1), (32, 32, 1),
         values={"M": 1024, "N": 1024, "K": 1024}, work=(2 * 1024**3, "fp32")),
    # 2, 3 -- Ampere GA102
    *leimao("leimao-sgemm-rtx3090", "fp32", "<float", LM_FP32),
    *leimao("leimao-hgemm-rtx3090", "fp16", "<__half", LM_FP16),
    # 4 (test) -- Blackwell GB202
    *tc_cases("tc-gemm-rtxpro6000", "RTX PRO 6000 Blackwell Max-Q",
              {"naive": 24.039, "tiled": 16.564, "wmma": 1.430, "mma_base": 2.168, "mma_swizzle": 1.724,
               "mma_vec": 0.771, "mma_pipe": 0.754, "mma_warptile": 0.569}),
    # 5 -- Hopper
    *tc_cases("tc-gemm-h100", "H100 SXM", {"naive": 25.617, "tiled": 15.198, "wmma": 2.334}),
    # 6 -- Ampere GA102
    Case("layernorm k3 bs32", "llmc-layernorm-rtx3090", LLMC / "layernorm-d5601d16" / "layernorm_forward.cu",
         "layernorm_forward_kernel3",
         "RTX 3090", from_gbs(LAYERNORM_BYTES, 689.11), "689.11 GB/s", (8192, 1, 1), (32, 1, 1),
         values={"N": 8192, "C": 768}),
    Case("layernorm k5 bs256", "llmc-layernorm-rtx3090", LLMC / "layernorm-d5601d16" / "layernorm_forward.cu",
         "layernorm_forward_kernel5",
         "RTX 3090", from_gbs(LAYERNORM_BYTES, 773.13), "773.13 GB/s", (8192, 1, 1), (256, 1, 1),
         values={"N": 8192, "C": 768}),
    # 7 (test) -- Hopper; N = 2^30 ints, 100 back-to-back launches averaged
    Case("sum kernel1", "fastcu-sum-h100", SUM, "sumKernel1", "H100 SXM", 1.32858e-3, "1.32858 ms",
         (104858, 1, 1), (512, 1, 1), values={"n": 1 << 30}),
    Case("sum kernel2", "fastcu-sum-h100", SUM, "sumKernel2", "H100 SXM", 1.32573e-3, "1.32573 ms",
         (16384, 1, 1), (1024, 1, 1), values={"n": 1 << 28}),
    Case("sum kernel3", "fastcu-sum-h100", SUM, "sumKernel3", "H100 SXM", 1.32556e-3, "1.32556 ms",
         (16384, 1, 1), (1024, 1, 1), values={"n": 1 << 28}),
    Case("sum kernel4", "fastcu-sum-h100", SUM, "sumKernel4", "H100 SXM", 1.32501e-3, "1.32501 ms",
         (16384, 1, 1), (1024, 1, 1), values={"n": 1 << 28}),
    # 8 -- Ampere GA104, measured by Nsight Compute with source lines
    Case("adamw_kernel2 smem", "llmc-adamw-rtx3060ti", LLMC / "adamw-b4819205" / "adamw.cu", "adamw_kernel2",
         "RTX 3060 Ti", None,
         "gpu__time_duration (median of 4 launches)", (2048, 1, 1), (512, 1, 1), dynamic_smem=8192,
         values={"num_parameters": 1048576}, report=REPORTS / "rtx3060ti-adamw.ncu-rep"),
    # 9 -- Turing TU102; 100 back-to-back launches averaged (llm.c PR #159)
    Case("adamw_kernel1", "llmc-adamw-rtx2080ti", LLMC / "adamw-97e61e2" / "adamw.cu", "adamw_kernel1",
         "RTX 2080 Ti", 0.0563e-3, "0.0563 ms", (2048, 1, 1), (512, 1, 1), values={"num_parameters": 1048576}),
    Case("adamw_kernel2", "llmc-adamw-rtx2080ti", LLMC / "adamw-97e61e2" / "adamw.cu", "adamw_kernel2",
         "RTX 2080 Ti", 0.0559e-3, "0.0559 ms", (2048, 1, 1), (512, 1, 1), values={"num_parameters": 1048576}),
    # 10 (test) -- Ada AD102; tensor-core mma.sync GEMMs, ncu at locked clocks
    *mma_matmul_cases(),
    # 11 -- Ampere GA102; cp.async pipelines with wmma / mma.sync / ldmatrix
    *matmul_tutorial_cases("matmultutorial-rtx3090", "RTX 3090",
                           {"v01": 5.69767, "v02": 2.22491, "v03": 2.44301, "v04": 2.30833, "v05": 2.20486,
                            "v06": 2.0786, "v07": 2.19174, "v08": 2.19216, "v09": 1.93622, "v10": 1.93203,
                            "v11": 1.99332, "v12": 2.08363, "v13": 2.14492}),
    # 12 -- Ampere GA100; the same files' A100 times
    *matmul_tutorial_cases("matmultutorial-a100pcie", "A100 PCIe 80GB",
                           {"v01": 3.58903, "v02": 1.15745, "v03": 1.33858, "v04": 1.48764, "v05": 1.47957,
                            "v06": 1.21901, "v07": 1.33306, "v08": 1.34029, "v09": 1.06895, "v10": 1.10695,
                            "v11": 1.3483, "v12": 0.893766, "v13": 0.83905}),
)


def series_order() -> list[str]:
    return list(dict.fromkeys(c.series for c in CASES))


def split_of(case: Case) -> str:
    return "test" if series_order().index(case.series) % 3 == 0 else "train"


# --- statistics -----------------------------------------------------------------------------------

def ranks(v: list[float]) -> list[float]:
    """Ranks with ties averaged (Spearman's definition)."""
    order = sorted(range(len(v)), key=v.__getitem__)
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return float("nan")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else float("nan")


def summary(label: str, rows: list[tuple[Case, float, float]]) -> str:
    if not rows:
        return f"{label}: no kernels"
    logs = [abs(math.log(p / m)) for _, p, m in rows]
    geo = math.exp(sum(logs) / len(logs))
    w15 = sum(x <= math.log(1.5) for x in logs) / len(logs)
    w2 = sum(x <= math.log(2.0) for x in logs) / len(logs)
    return f"{label}: n={len(rows)}, geomean error {geo:.2f}x, within 1.5x {w15:.0%}, within 2x {w2:.0%}"


def split_error(rows: list[tuple[Case, float, float]]) -> dict:
    logs = [abs(math.log(p / m)) for _, p, m in rows]
    return {"kernels": len(rows), "geomean": math.exp(sum(logs) / len(logs)),
            "within_2x": sum(x <= math.log(2.0) for x in logs) / len(logs)}


def record(rows: list[tuple[Case, float, float]]) -> None:
    """analysis/data/model_error.json: this run's figures, for `analysis/prediction_error.py`."""
    import datetime
    import json
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip() or "unknown"
    out = {"overall": split_error(rows), "test": split_error([r for r in rows if split_of(r[0]) == "test"]),
           "gpus": len({c.device for c, _, _ in rows}), "commit": commit,
           "date": datetime.date.today().isoformat()}
    path = REPO / "analysis" / "data" / "model_error.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"recorded in {path.relative_to(REPO)}")


# --- the model ------------------------------------------------------------------------------------

def arch_of(device: str) -> str:
    from kernelscope.analysis.machine.arch import load_arch_specs
    return load_arch_specs().device(device).arch


def analyze_case(case: Case):
    """One quick analysis of case.source with the case's launch as a settings hint."""
    from kernelscope.analysis.options import AnalysisOptions, LaunchHint
    from kernelscope.analysis.pipeline import analyze
    hint = LaunchHint(grid=case.grid, block=case.block, dynamic_smem=case.dynamic_smem or None,
                      values=case.values, trip_count=case.trip)
    opts = AnalysisOptions(arch=arch_of(case.device), device=case.device, launch_hints={case.kernel: hint})
    return analyze(case.source, opts, depth="quick")


def analyze_all(cases: list[Case], jobs: int) -> dict[tuple, object]:
    """Every distinct analysis once, `jobs` at a time (they are independent processes' worth of work)."""
    first = {c.analysis_key(): c for c in reversed(cases)}
    todo = list(first.values())
    if jobs <= 1:
        return {c.analysis_key(): analyze_case(c) for c in todo}
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return {c.analysis_key(): r for c, r in zip(todo, pool.map(analyze_case, todo))}


def kernel_report(case: Case, result):
    from kernelscope.analysis.measure.ncu_report import base_name
    found = [k for k in result.kernels if base_name(k.name) == case.kernel
             and (case.instance is None or case.instance in k.name)]
    if len(found) != 1:
        names = [k.name for k in result.kernels]
        raise SystemExit(f"{case.name}: {len(found)} kernels match {case.kernel} {case.instance or ''} in "
                         f"{case.source.name} (compiled: {names}; messages: {[m.message for m in result.messages][:3]})")
    return found[0]


def launch_provenance(k) -> tuple[str, bool]:
    """Where grid, block and trip counts came from, and whether any fell to the model's default."""
    by = {a.name: a for a in k.assumptions}
    parts, defaulted = [], False
    for name in ("grid", "block"):
        a = by.get(name)
        src = a.source if a else "?"
        defaulted |= src == "default"
        parts.append(f"{name} {a.value if a else '?'} [{src}]")
    trips = [a for a in k.assumptions if a.name.startswith("trip_count")]
    dflt = [a for a in trips if a.source == "default"]
    defaulted |= bool(dflt)
    srcs = sorted({a.source for a in trips})
    parts.append(f"{len(trips)} loop trip counts [{', '.join(srcs) or '-'}]"
                 + (f", {len(dflt)} DEFAULT ({', '.join(a.name for a in dflt)})" if dflt else ""))
    return "; ".join(parts), defaulted


def physical_violations(case: Case, result, k) -> tuple[str, ...]:
    """The limits the prediction breaks (issue #20 item 5): the modeled profile's own FLOP/s and
    bytes/s against the device's ceilings (`limit_violations`), and the published problem's work
    against the peak of the units it runs on, which catches trip counts too low for the modeled
    FLOPs themselves to show it."""
    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.emulator.limits import limit_violations
    from kernelscope.analysis.machine.roofline import roofline_model
    cat = load_arch_specs()
    ceilings = roofline_model(cat, cat.device(case.device))
    prof = result.profile.kernel(k.mangled) if result.profile is not None else None
    out = list(limit_violations(prof, ceilings)) if prof is not None else []
    if case.work is not None and k.predicted_duration_s:
        flop, ceiling = case.work
        peak = ceilings.peak(ceiling)
        rate = flop / k.predicted_duration_s
        if peak and rate > peak * 1.001:
            out.append(f"{case.name}: the published {flop:.3g} FLOPs in the predicted {fmt(k.predicted_duration_s)} "
                       f"is {rate / 1e12:.1f} TFLOP/s, above the {ceiling} peak {peak / 1e12:.1f}")
    return tuple(out)


# --- measured profiles ----------------------------------------------------------------------------

@lru_cache(maxsize=None)
def measured_profile(report: Path, source: Path):
    from kernelscope.analysis.measure.ncu_report import load_ncu_report
    return load_ncu_report(report, source=source)


def measured_launches(case: Case):
    from kernelscope.analysis.measure.ncu_report import base_name
    prof = measured_profile(case.report, case.source)
    return [k for k in prof.kernels if base_name(k.name) == case.kernel]


def measured_seconds(case: Case) -> float:
    if case.measured_s is not None:
        return case.measured_s
    times = sorted(k.duration_s for k in measured_launches(case))
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2


def line_correlation(case: Case, k) -> tuple[float, int, list[tuple[int, float, float]]]:
    """Spearman of modeled vs measured per-line sample shares over the lines of case.source either one samples."""
    measured: dict[int, float] = {}
    for launch in measured_launches(case):
        for ls in launch.lines:
            if Path(ls.file).name == case.source.name:
                measured[ls.line] = measured.get(ls.line, 0.0) + ls.total
    total = sum(measured.values()) or 1.0
    measured = {ln: v / total for ln, v in measured.items()}
    modeled = {lr.line: lr.share for lr in k.lines}
    lines = sorted(ln for ln in set(measured) | set(modeled) if measured.get(ln, 0) > 0 or modeled.get(ln, 0) > 0)
    rows = [(ln, modeled.get(ln, 0.0), measured.get(ln, 0.0)) for ln in lines]
    return spearman([r[1] for r in rows], [r[2] for r in rows]), len(rows), rows


# --- main -----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="also print the docs/accuracy.md table rows")
    ap.add_argument("--series", help="only the cases of this series (a quick check of one entry)")
    ap.add_argument("--jobs", type=int, default=2, help="analyses run in parallel (default 2)")
    ap.add_argument("--record", action="store_true",
                    help="write the figures to analysis/data/model_error.json (what editors show beside a predicted time)")
    args = ap.parse_args(argv)
    cases = [c for c in CASES if not args.series or c.series == args.series]

    t0 = time.perf_counter()
    rows: list[tuple[Case, float, float]] = []
    reports: dict[str, object] = {}  # by case name
    violations: list[str] = []
    print(f"split rule: {SPLIT_RULE}\n")
    results = analyze_all(cases, args.jobs)
    print(f"{'kernel':22} {'device':30} {'split':5} {'predicted':>12} {'measured':>12} {'ratio':>6}")
    for case in cases:
        k = kernel_report(case, results[case.analysis_key()])
        measured = measured_seconds(case)
        where, defaulted = launch_provenance(k)
        p = k.predicted_duration_s
        if p is None:
            print(f"{case.name:22} {case.device:30} {split_of(case):5} {'(no prediction)':>12}")
        else:
            rows.append((case, p, measured))
            reports[case.name] = k
            print(f"{case.name:22} {case.device:30} {split_of(case):5} {p * 1e3:10.4f}ms {measured * 1e3:10.4f}ms "
                  f"{p / measured:6.2f}")
        print(f"  {'!' if defaulted else ' '} launch: {where}")
        broken = physical_violations(case, results[case.analysis_key()], k)
        violations += broken
        for v in broken:
            print(f"  X PHYSICAL LIMIT: {v}")

    print("\nper series (steps in CASES order): Spearman of predicted vs measured times, and step speedups")
    for series in series_order():
        steps = [(c, p, m) for c, p, m in rows if c.series == series]
        if len(steps) < 2:
            continue
        rho = spearman([p for _, p, _ in steps], [m for _, _, m in steps])
        print(f"series {series} ({split_of(steps[0][0])}): n={len(steps)}, Spearman {rho:.2f}")
        for (c0, p0, m0), (c1, p1, m1) in zip(steps, steps[1:]):
            print(f"  {c0.name:>18} -> {c1.name:<18} predicted {p0 / p1:6.2f}x, measured {m0 / m1:6.2f}x")

    with_lines = [(c, reports[c.name]) for c, _, _ in rows if c.report is not None]
    if with_lines:
        print("\nper-line hotspot rank correlation (modeled line share vs measured stall samples)")
    for case, k in with_lines:
        rho, n, lrows = line_correlation(case, k)
        print(f"{case.name} ({case.report.name}): Spearman {rho:.2f} over {n} lines")
        for ln, mod, mea in sorted(lrows, key=lambda r: -r[2])[:6]:
            print(f"  line {ln:4}: measured {mea:6.1%}  modeled {mod:6.1%}")

    print()
    print(summary("all", rows))
    print(summary("train", [r for r in rows if split_of(r[0]) == "train"]))
    print(summary("test", [r for r in rows if split_of(r[0]) == "test"]))
    for device in dict.fromkeys(c.device for c, _, _ in rows):
        print("  " + summary(device, [r for r in rows if r[0].device == device]))
    print(f"\n{len(rows)} kernels analysed in {time.perf_counter() - t0:.0f} s")
    if violations:
        print(f"\nPHYSICAL-LIMIT INVARIANT BROKEN by {len(violations)} prediction(s) (a model bug, issue #20):")
        for v in violations:
            print(f"  {v}")
    else:
        print("physical-limit invariant: no prediction above the device's peaks or bandwidths")

    if args.record and not args.series:
        record(rows)
    if args.markdown:
        print("\n| kernel | series | GPU | published | predicted | measured | ratio | split |\n"
              "|---|---|---|---|---|---|---|---|")
        for c, p, m in rows:
            print(f"| {c.name} | {c.series} | {c.device} | {c.figure} | {fmt(p)} | {fmt(m)} | {p / m:.2f} | "
                  f"{split_of(c)} |")
    return 1 if violations else 0


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


if __name__ == "__main__":
    sys.exit(main())
