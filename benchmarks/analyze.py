"""Wall time of `kernelscope analyze` against a bare `nvcc -cubin` of the same file, in one run.

    python benchmarks/analyze.py [--repeat 3] [FILE.cu ...]

For each file: the median of `--repeat` rounds of (a) bare nvcc -cubin, (b) the full CLI,
(c) the CLI with --no-emulate (static path only), each round the three in turn, and the
per-stage split reported by the pipeline itself. Target: median (b)/(a) <= 3 (issue #18); docs/performance.md explains what
dominates. The machine's load average is printed: the ratios are only comparable within a run.
Beside the wall-clock ratio, the full run's CPU seconds (user + system, nvcc's and the second
stage's workers' included) over nvcc's: a busy minute of a shared machine stretches wall time much
more than CPU time. On an idle machine the CPU ratio is above the wall one (nvcc runs under the
imports, the second stage over the cores).

The CLI starts nvcc from the invocation its last run on the file recorded (analysis/frontend/
prelaunch.py), in a cache directory of the benchmark's own: (b) and (c) are runs after a first
one, which is timed on its own as "first" (no record yet, as on a file analysed for the first time).
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

REPO = Path(__file__).resolve().parent.parent


def _time(argv: list[str], env=None) -> tuple[float, subprocess.CompletedProcess, float]:
    """Wall seconds, the process, and its CPU seconds (user + system, with every process it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, proc, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    byte_compile()  # as installed (benchmarks/installed.py)
    files = args.files or sorted((REPO / "examples").glob("*.cu"))

    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    tc = locate_toolchain()
    cli = [sys.executable, "-m", "kernelscope.cli", "analyze", "--json"]
    print(f"toolchain: {tc.origin} nvcc {tc.version}; {args.repeat} runs each, medians in seconds\n")
    print(f"{'file':28} {'nvcc':>6} {'first':>6} {'ratio':>6} {'full':>6} {'ratio':>6} {'static':>7} {'ratio':>6}"
          f" {'cpu ratio':>9}   stages of the full run")
    ratios, first_ratios, static_ratios, cpu_ratios = [], [], [], []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}  # the CLI's prelaunch records: this run's own
        for f in files:
            first = _time(cli + [str(f)], env)[0]
            _time(cli + ["--no-emulate", str(f)], env)
            # rounds of (bare nvcc, full, static): the baseline is measured beside what it divides,
            # not before it (this shared machine's speed drifts within a file's runs)
            nvs, full_runs, statics = [], [], []
            with tempfile.TemporaryDirectory() as tmp:
                bare = [str(tc.nvcc), "-arch=sm_90", "-cubin", "-o", str(Path(tmp) / "x.cubin"), str(f)]
                for _ in range(args.repeat):
                    nvs.append(_time(bare, tc.env))
                    full_runs.append(_time(cli + [str(f)], env))
                    statics.append(_time(cli + ["--no-emulate", str(f)], env)[0])
            nv = statistics.median(t for t, _, _ in nvs)
            full = statistics.median(t for t, _, _ in full_runs)
            cpu = statistics.median(c for _, _, c in full_runs) / statistics.median(c for _, _, c in nvs)
            static = statistics.median(statics)
            stages = json.loads(full_runs[-1][1].stdout).get("timings", {})
            split = " ".join(f"{k} {v:.2f}" for k, v in stages.items())
            ratios.append(full / nv)
            first_ratios.append(first / nv)
            static_ratios.append(static / nv)
            cpu_ratios.append(cpu)
            print(f"{f.name:28} {nv:6.2f} {first:6.2f} {first / nv:6.2f} {full:6.2f} {full / nv:6.2f} "
                  f"{static:7.2f} {static / nv:6.2f} {cpu:9.2f}   {split}")
    print(f"\nmedian ratio full/nvcc {statistics.median(ratios):.2f} (target <= 3; a file's first run "
          f"{statistics.median(first_ratios):.2f}), static/nvcc {statistics.median(static_ratios):.2f}, "
          f"full/nvcc by CPU time {statistics.median(cpu_ratios):.2f}; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
