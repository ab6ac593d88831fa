"""Analysis time against the trip count, per loop shape, as a ratio to a bare `nvcc -cubin`.

    python benchmarks/scaling.py [--repeat 1]

For each kernel of tests/emulator/kernels/bounded_shapes.cu, a file holding only that kernel (and
the function it calls) with a loop bound of 10^2, 10^4 and 10^6 (n-body: n = 1k, 16k, 128k; the 3-deep nest: n³ of
about those, and again with each of its loops at those trip counts) is analysed by the full CLI (`kernelscope analyze --json`, quick stage and second
stage) and compiled by bare `nvcc -cubin`, in the same run: each file analysed once untimed (its
prelaunch record, as a user's later runs have), then `--repeat` rounds over the trip counts,
medians per file. Targets (issue 13): analysis ≤ 5×
nvcc, and flat: the largest trip count within 1.2× of the smallest. Then the sampled emulation
against an unsampled one at the small trip counts (≤ 5 % in time and in the largest per-line
share difference).

    python benchmarks/scaling.py --part shapes [--repeat 1]

Whole files of the shapes that cost most (issue 35), each a ratio of the full CLI to a bare
`nvcc -cubin` of the same file in the same round: the files of benchmarks/shapes/ (a recursive
octree walk, a persistent work-queue kernel, a thrust host file, heavy templates, a warp-shuffle
softmax), a generated 5,000-line solver file, and files of 500, 1,000 and 2,000 one-line kernels,
whose analysis must grow linearly (seconds per kernel at 2,000 within 1.25x of those at 500).
Target: every shape <= 5x nvcc.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import byte_compile
from kernelscope.analysis.context import AnalysisContext

REPO = Path(__file__).resolve().parent.parent
SHAPES = REPO / "tests" / "emulator" / "kernels" / "bounded_shapes.cu"
#: kernel -> (launch arguments with {n}, trip counts)
LAUNCH = {
    "nbody": ("(float4*)0, (float3*)0, {n}", (1_024, 16_384, 131_072)),
    "recursive_in_loop": ("(int*)0, {n}", (100, 10_000, 1_000_000)),
    "until_break": ("(const float*)0, (float*)0, {n}", (100, 10_000, 1_000_000)),
    "nest3": ("(float*)0, {n}", (5, 22, 100)),
    # the same nest read the other way: each of its three loops runs n = 10^2, 10^4, 10^6 trips
    "nest3 per loop": ("(float*)0, {n}", (100, 10_000, 1_000_000)),
    "grid_stride": ("(const float*)0, (float*)0, {n}", (100 * 16384, 10_000 * 16384, 131_000 * 16384)),  # int n: 131,000 trips at most
    "loop_in_callee": ("(const float*)0, (float*)0, {n}", (100, 10_000, 1_000_000)),
}


def _time(argv: list[str], env=None) -> float:
    return _timed(argv, env)[0]


def _timed(argv: list[str], env=None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, of the command and every process it waited
    for: nvcc's, the analysis's workers): on this shared 2-core machine a busy minute stretches
    the wall-clock time of both sides, CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


#: the __noinline__ functions each kernel calls (defined just before it in the shapes file)
CALLEES = {"nbody": ("pair_force",), "recursive_in_loop": ("depth_sum",), "loop_in_callee": ("callee_loop",)}


def _definitions(kernel: str) -> str:
    """The kernel's definition and its callees' from the shapes file: one kernel per file, so the
    ratio is one kernel's analysis against nvcc (the file's definitions are separated by blank lines)."""
    names = (kernel, *CALLEES.get(kernel, ()))
    chunks = SHAPES.read_text().split("int main()")[0].split("\n\n")
    keep = [c for c in chunks if any(f" {name}(" in c.split("{")[0] for name in names)]
    return "\n\n".join(keep) + "\n\n"


def _file(tmp: Path, label: str, n: int) -> Path:
    kernel = label.split()[0]  # "nest3 per loop" is nest3 at other trip counts
    body = _definitions(kernel)
    args = LAUNCH[label][0].format(n=n)
    f = tmp / f"{kernel}_{n}.cu"
    f.write_text(f"{body}int main() {{\n  {kernel}<<<64, 256>>>({args});\n  return 0;\n}}\n")
    return f


def _errors() -> None:
    sys.path.insert(0, str(REPO / "tests" / "emulator"))
    from _build import build_example

    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.emulator.model import DEFAULT_SETTINGS, emulate_detailed
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.frontend.source import parse_source
    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    dev = cat.default_device(arch)
    program = build_example(SHAPES, locate_toolchain())
    source = parse_source(SHAPES.read_text())
    full_settings = DEFAULT_SETTINGS.model_copy(update={"sample_loops": False})
    print(f"\n{'kernel':20} {'n':>5} {'time err':>9} {'line share err':>15} {'issues s/u':>14}")
    for k in program.kernels:
        name = k.name.split("(")[0]
        for n in (64, 256):
            opts = AnalysisOptions(launch_hints={name: {"values": {"n": n}}})
            s = emulate_detailed(AnalysisContext.of(arch, dev, opts, source, program=program), k)
            u = emulate_detailed(AnalysisContext.of(arch, dev, opts, source, program=program), k, settings=full_settings)
            if u.issues > 2_000_000:
                continue

            def shares(e):
                tot = sum(sum(ln.samples.values()) for ln in e.profile.lines) or 1.0
                return {ln.line: sum(ln.samples.values()) / tot for ln in e.profile.lines}

            a, b = shares(s), shares(u)
            line_err = max(abs(a.get(x, 0.0) - b.get(x, 0.0)) for x in set(a) | set(b))
            t_err = s.prediction.seconds / u.prediction.seconds - 1
            print(f"{name:20} {n:5} {t_err:+9.1%} {line_err:15.1%} {s.issues:>7}/{u.issues:<7}")


FILE_SHAPES = REPO / "benchmarks" / "shapes"
KERNEL_COUNTS = (500, 1_000, 2_000)


def _many_kernels(tmp: Path, n: int) -> Path:
    f = tmp / f"kernels_{n}.cu"
    f.write_text("".join(f"__global__ void k{i}(float *x, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; "
                         f"if (i < n) x[i] = x[i] * {i}.0f + 1.0f; }}\n" for i in range(n)))
    return f


def _long_file(tmp: Path, lines: int = 5_000) -> Path:
    """A solver file of `lines` lines: per module, two device helpers, a stencil kernel and its
    host driver, as a large hand-written simulation code has them."""
    out, m = ["#include <cstdio>", "#include <vector>", ""], 0
    while len(out) < lines:
        out += [f"__device__ float flux{m}(float a, float b) {{",
                f"    float d = b - a;",
                f"    return d > 0.0f ? d * {m % 7 + 1}.5f : d * 0.5f;",
                "}", "",
                f"__device__ float limit{m}(float x) {{",
                "    return fminf(fmaxf(x, -1.0f), 1.0f);",
                "}", "",
                f"__global__ void stencil{m}(const float *u, float *v, int nx, int ny) {{",
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;",
                "    int j = blockIdx.y * blockDim.y + threadIdx.y;",
                "    if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;",
                "    float c = u[j * nx + i];",
                f"    float f = flux{m}(u[j * nx + i - 1], c) - flux{m}(c, u[j * nx + i + 1]);",
                f"    float g = flux{m}(u[(j - 1) * nx + i], c) - flux{m}(c, u[(j + 1) * nx + i]);",
                f"    v[j * nx + i] = c + limit{m}(f + g) * 0.25f;",
                "}", "",
                f"static void run{m}(float *u, float *v, int nx, int ny, int steps) {{",
                "    dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8);",
                "    for (int s = 0; s < steps; ++s) {",
                f"        stencil{m}<<<grid, block>>>(u, v, nx, ny);",
                "        float *t = u; u = v; v = t;",
                "    }",
                f"    std::printf(\"module {m}: %d steps\\n\", steps);",
                "}", ""]
        m += 1
    out += ["int main() {", "    std::vector<float> h(1024 * 1024);", "    float *u = nullptr, *v = nullptr;",
            *[f"    run{i}(u, v, 1024, 1024, 10);" for i in range(m)], "    return h.empty();", "}", ""]
    f = tmp / f"solver_{lines}.cu"
    f.write_text("\n".join(out))
    return f


def _shapes(repeat: int) -> int:
    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    tc = locate_toolchain()
    cli = [sys.executable, "-m", "kernelscope.cli", "analyze", "--json"]
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        cli_env = {**os.environ, "XDG_CACHE_HOME": str(t / "cache")}
        files = [*sorted(FILE_SHAPES.glob("*.cu")), _long_file(t), *(_many_kernels(t, n) for n in KERNEL_COUNTS)]
        cuts = {}
        for f in files:  # each file's first analysis (no prelaunch record yet) is not timed; what it cut
            cuts[f.stem] = _budget_cuts(subprocess.run(cli + [str(f)], capture_output=True, text=True, env=cli_env,
                                                       check=False).stdout)
        print(f"{'file':28} {'nvcc s':>7} {'analyze s':>9} {'ratio':>6} {'nvcc cpu':>8} {'analyze cpu':>11} "
              f"{'cpu ratio':>9}  what the budget cut (kernels)")
        nv_t: list[list[tuple[float, float]]] = [[] for _ in files]
        full_t: list[list[tuple[float, float]]] = [[] for _ in files]
        for _ in range(repeat):
            for i, f in enumerate(files):
                nv_t[i].append(_timed([str(tc.nvcc), "-arch=sm_90", "-cubin", "-o", str(t / "x.cubin"), str(f)], tc.env))
                full_t[i].append(_timed(cli + [str(f)], cli_env))
        seconds, cpu_seconds = {}, {}
        worst_cpu = 0.0
        for f, nvs, fulls in zip(files, nv_t, full_t):
            nv, full = statistics.median(w for w, _ in nvs), statistics.median(w for w, _ in fulls)
            nv_cpu, full_cpu = statistics.median(c for _, c in nvs), statistics.median(c for _, c in fulls)
            seconds[f.stem], cpu_seconds[f.stem] = full, full_cpu
            worst, worst_cpu = max(worst, full / nv), max(worst_cpu, full_cpu / nv_cpu)
            print(f"{f.stem:28} {nv:7.2f} {full:9.2f} {full / nv:6.2f} {nv_cpu:8.2f} {full_cpu:11.2f} "
                  f"{full_cpu / nv_cpu:9.2f}  {cuts[f.stem]}")
    per = [seconds[f"kernels_{n}"] / n for n in KERNEL_COUNTS]
    per_cpu = [cpu_seconds[f"kernels_{n}"] / n for n in KERNEL_COUNTS]
    print(f"\nworst analyze/nvcc {worst:.2f} (target <= 5; CPU time {worst_cpu:.2f}); seconds per kernel at "
          f"{', '.join(map(str, KERNEL_COUNTS))} kernels: {', '.join(f'{x * 1e3:.2f} ms' for x in per)}, "
          f"growth {per[-1] / per[0]:.2f} (linear: <= 1.25; by CPU time "
          f"{', '.join(f'{x * 1e3:.2f} ms' for x in per_cpu)}, growth {per_cpu[-1] / per_cpu[0]:.2f}); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def _budget_cuts(stdout: str) -> str:
    """The kernels of an `analyze --json` result by what the file's budget cut (their `budget`
    assumption's value: second stage reduced or skipped, not emulated, ...), of all its kernels."""
    try:
        kernels = json.loads(stdout)["kernels"]
    except (ValueError, KeyError):
        return "no result"
    by: dict[str, int] = {}
    for k in kernels:
        for a in k["assumptions"]:
            if a["name"] == "budget":
                by[a["value"]] = by.get(a["value"], 0) + 1
    return ", ".join(f"{v} {n}" for v, n in sorted(by.items())) + f" (of {len(kernels)})" if by else \
        f"nothing (of {len(kernels)})"


def _long_kernels(tmp: Path, kernels: int, unroll: int) -> Path:
    """`kernels` kernels of `unroll` fully unrolled multiply-adds each: SASS instructions without
    more functions or more source."""
    f = tmp / f"long_{kernels}x{unroll}.cu"
    f.write_text("".join(f"__global__ void l{i}(const float *a, float *b, int n) {{\n"
                         "    int t = blockIdx.x * blockDim.x + threadIdx.x;\n    float s = 0.0f;\n"
                         f"#pragma unroll\n    for (int j = 0; j < {unroll}; ++j) s = s * a[t + j * n] + {i}.5f;\n"
                         "    b[t] = s;\n}\n" for i in range(kernels)))
    return f


def _nvcc_size(repeat: int) -> int:
    """nvcc's own time against the file's size measures that the analysis's budget reads
    (`emulator/budget.FileSize`: functions and SASS instructions of the cubin, bytes of source),
    on generated files only, and the least-squares fit whose coefficients `budget.nvcc_seconds` holds."""
    import numpy as np

    from kernelscope.analysis.emulator.budget import FileSize, nvcc_seconds
    from kernelscope.analysis.frontend.compile import compile_cuda
    from kernelscope.analysis.frontend.sass import disassemble
    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    tc = locate_toolchain()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        files = [*(_many_kernels(t, n) for n in (1, 50, 200, 500, 1_000)),
                 *(_long_file(t, n) for n in (500, 1_500, 3_000, 5_000)),
                 *(_long_kernels(t, k, u) for k, u in ((1, 256), (4, 512), (16, 256), (8, 1_024)))]
        print(f"{'file':24} {'functions':>9} {'instructions':>12} {'source B':>9} {'nvcc s':>7} {'model s':>7}")
        for f in files:
            res = compile_cuda(f, arch="sm_90", user_flags=(), toolchain=tc, workdir=t)
            module = disassemble(res.cubin_path, tc.nvdisasm)
            size = FileSize.of(module, f.read_bytes())
            bare = [str(tc.nvcc), "-arch=sm_90", "-cubin", "-o", str(t / "x.cubin"), str(f)]
            nv = min(_time(bare, tc.env) for _ in range(repeat))
            rows.append((size, nv))
            print(f"{f.stem:24} {size.functions:9} {size.instructions:12} {size.source_bytes:9} {nv:7.2f} "
                  f"{nvcc_seconds(size):7.2f}")
    a = np.array([[1.0, s.functions, s.instructions, s.source_bytes] for s, _ in rows])
    y = np.array([nv for _, nv in rows])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    worst = max(max(nvcc_seconds(s) / nv, nv / nvcc_seconds(s)) for s, nv in rows)
    print(f"\nfit: {coef[0]:.3f} s + {coef[1] * 1e3:.3f} ms/function + {coef[2] * 1e6:.2f} us/instruction + "
          f"{coef[3] * 1e9:.1f} ns/source byte; budget.nvcc_seconds's worst error over these files {worst:.2f}x; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--part", choices=("loops", "shapes", "nvcc"), default="loops",
                    help="loops: trip counts per loop shape (issue 13); shapes: whole files of costly shapes (issue 35); "
                         "nvcc: nvcc's time against the size measures of the analysis's budget")
    args = ap.parse_args()
    byte_compile()  # as installed (benchmarks/installed.py)
    if args.part == "shapes":
        return _shapes(args.repeat)
    if args.part == "nvcc":
        return _nvcc_size(max(3, args.repeat))
    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    tc = locate_toolchain()
    cli = [sys.executable, "-m", "kernelscope.cli", "analyze", "--json"]
    print(f"{'kernel':20} {'n':>9} {'nvcc s':>7} {'analyze s':>9} {'ratio':>6}")
    worst, flat = 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        # the CLI's records of nvcc invocations (analysis/frontend/prelaunch.py) in this run's own
        # cache: with --repeat above 1, the later runs of a file start nvcc early, as a user's do
        cli_env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        # a first nvcc and a first analysis pay for cold caches (disk, Python imports): not a trip count's cost
        warm = _file(Path(tmp), "grid_stride", 100)
        _time([str(tc.nvcc), "-arch=sm_90", "-cubin", "-o", str(Path(tmp) / "x.cubin"), str(warm)], tc.env)
        _time(cli + [str(warm)], cli_env)
        for kernel, (_, trips) in LAUNCH.items():
            files = [_file(Path(tmp), kernel, n) for n in trips]
            for f in files:  # each file's first analysis (no prelaunch record yet) is not timed
                _time(cli + [str(f)], cli_env)
            # the repeats go round the trip counts, so that a slow minute of this shared machine
            # falls on all of them rather than on one (it moved one shape's flatness by 0.2)
            nv_t: list[list[float]] = [[] for _ in trips]
            full_t: list[list[float]] = [[] for _ in trips]
            for _ in range(args.repeat):
                for i, f in enumerate(files):
                    bare = [str(tc.nvcc), "-arch=sm_90", "-cubin", "-o", str(Path(tmp) / "x.cubin"), str(f)]
                    nv_t[i].append(_time(bare, tc.env))
                    full_t[i].append(_time(cli + [str(f)], cli_env))
            ratios, seconds = [], []
            for n, nvs, fulls in zip(trips, nv_t, full_t):
                nv, full = statistics.median(nvs), statistics.median(fulls)
                ratios.append(full / nv)
                seconds.append(full)
                print(f"{kernel:20} {n:9} {nv:7.2f} {full:9.2f} {full / nv:6.2f}")
            # flatness on the analysis's own seconds: nvcc's run-to-run noise is not the trip count's
            worst, flat = max(worst, *ratios), max(flat, seconds[-1] / seconds[0])
            print(f"{'':20} {'':9} largest / smallest trip: {seconds[-1] / seconds[0]:.2f}")
    print(f"\nworst analyze/nvcc {worst:.2f} (target <= 5); worst largest/smallest trip, analysis seconds "
          f"{flat:.2f} (target <= 1.2); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    _errors()
    return 0


if __name__ == "__main__":
    sys.exit(main())
