"""Modeled vs measured: `python benchmarks/accuracy/run.py` (no GPU needed).

Each entry is a real kernel with a measured duration on a named GPU (see README.md for where
each figure was published). The kernel is analysed with its exact launch (launch_hints) on the
measured device; the script prints predicted vs measured, the ratio, per-series Spearman and
step speedups, and overall geomean |log ratio| and the fractions within 1.5x and 2x, per split.
Analyses run at depth="quick" (one emulation per kernel) to keep the run to seconds.
"""
from __future__ import annotations

import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "tests" / "data" / "ncu-reports"
KERNELS = Path(__file__).resolve().parent / "kernels"


@dataclass(frozen=True)
class Case:
    name: str          # label in the table
    series: str        # optimisation series (steps compared by speedup)
    split: str         # "train" or "test" (fixed; see README.md)
    kernel: str        # kernel base name
    arch: str
    device: str        # device in analysis/data/arch_specs.toml
    measured_s: float
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    source: Path | None = None      # a .cu in kernels/; None: the source embedded in `report`
    report: str | None = None       # .ncu-rep the measured figure comes from
    values: dict[str, int] = field(default_factory=dict)
    dynamic_smem: int = 0


# Measured durations read from the reports with analysis.measure.ncu_report (gpu__time_duration).
CASES: tuple[Case, ...] = (
    Case("naive_gemm 1024^3", "gemm-gtx1660s", "test", "naive_gemm", "sm_75", "GTX 1660 SUPER",
         4.789792e-3, (32, 32, 1), (32, 32, 1), source=KERNELS / "naive_gemm.cu",
         report="gtx1660s-naive-gemm.ncu-rep", values={"M": 1024, "N": 1024, "K": 1024}),
)


def embedded_source(report: Path, work: Path) -> Path:
    """Write the .cu files the report embeds (it was compiled with -lineinfo) and return the kernel's."""
    from kernelscope.analysis.measure.ncu_report import _embedded_sources, actions, open_report
    ctx = open_report(report)
    cu = None
    for act in actions(ctx, report):
        for name, text in _embedded_sources(act).items():
            p = work / Path(name).name
            p.write_text(text)
            if p.suffix == ".cu":
                cu = p
    if cu is None:
        raise SystemExit(f"{report.name} embeds no .cu source")
    return cu


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        for i, j in enumerate(order):
            r[j] = float(i)
        return r
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx)); sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else float("nan")


def predict(case: Case, work: Path) -> float | None:
    from kernelscope.analysis.options import AnalysisOptions, LaunchHint
    from kernelscope.analysis.pipeline import analyze
    src = case.source or embedded_source(REPORTS / case.report, work)
    hint = LaunchHint(grid=case.grid, block=case.block, dynamic_smem=case.dynamic_smem or None, values=case.values)
    opts = AnalysisOptions(arch=case.arch, device=case.device, launch_hints={case.kernel: hint})
    result = analyze(src, opts, depth="quick")
    for k in result.kernels:
        if k.name == case.kernel or k.name.startswith(case.kernel):
            return k.predicted_duration_s
    return None


def summary(label: str, rows: list[tuple[Case, float, float]]) -> None:
    if not rows:
        print(f"{label}: no kernels"); return
    logs = [abs(math.log(p / m)) for _, p, m in rows]
    geo = math.exp(sum(logs) / len(logs))
    w15 = sum(l <= math.log(1.5) for l in logs) / len(logs)
    w2 = sum(l <= math.log(2.0) for l in logs) / len(logs)
    print(f"{label}: n={len(rows)} geomean error {geo:.2f}x, within 1.5x {w15:.0%}, within 2x {w2:.0%}")


def main() -> int:
    rows: list[tuple[Case, float, float]] = []
    print(f"{'kernel':24} {'device':16} {'split':5} {'predicted':>11} {'measured':>11} {'ratio':>7}")
    with tempfile.TemporaryDirectory(prefix="ks-accuracy-") as tmp:
        for case in CASES:
            p = predict(case, Path(tmp))
            if p is None:
                print(f"{case.name:24} {case.device:16} {case.split:5} {'(no prediction)':>11}"); continue
            rows.append((case, p, case.measured_s))
            print(f"{case.name:24} {case.device:16} {case.split:5} {p*1e3:9.3f}ms {case.measured_s*1e3:9.3f}ms {p/case.measured_s:7.2f}")
    print()
    for series in sorted({c.series for c, _, _ in rows}):
        steps = [(c, p, m) for c, p, m in rows if c.series == series]
        if len(steps) < 2:
            continue
        rho = spearman([p for _, p, _ in steps], [m for _, _, m in steps])
        print(f"series {series}: Spearman {rho:.2f}")
        for (c0, p0, m0), (c1, p1, m1) in zip(steps, steps[1:]):
            print(f"  {c0.name} -> {c1.name}: predicted speedup {p0/p1:.2f}x, measured {m0/m1:.2f}x")
    summary("all", rows)
    summary("train", [r for r in rows if r[0].split == "train"])
    summary("test", [r for r in rows if r[0].split == "test"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
