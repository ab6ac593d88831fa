"""Latency of verifying each code action against a plain analysis of the same file, one run.

    python benchmarks/verify.py [FILE.cu ...]

For each file: one `analyze` (the baseline the server already has cached), then `verify` of
every advice with a mechanical fix, reusing that baseline — so each verification costs one
compile + disassembly + one emulation per kernel of the shadow copy (a quick analysis). Prints per
action: status, verified vs estimated speedup, seconds, and seconds / analysis seconds (what an
editor user waits for "Verify" compared with the full analysis on save); below 1, since the
what-if and sensitivity sweeps are not re-run.
A second pass shows the cache (in memory) answering without a compiler. Last, the estimate
against the re-model of every mechanical fix (issue 15's target: geomean disagreement <= 1.25x,
none over 1.5x; a template fix, re-modeled with its placeholders unfilled, is left out).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--fast-math", action="store_true")
    args = ap.parse_args()
    files = args.files or sorted((REPO / "examples").glob("*.cu"))

    from kernelscope.analysis.advisor.fixes import attach_fixes
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.pipeline import analyze
    from kernelscope.analysis.frontend.toolchain import locate_toolchain
    from kernelscope.analysis.advisor.verify import VerificationCache
    from kernelscope.analysis.application import verify_fix as verify

    tc = locate_toolchain()
    options = AnalysisOptions()
    cache = VerificationCache()
    print(f"toolchain: {tc.origin} nvcc {tc.version}; one run each, seconds\n")
    print(f"{'file':26} {'advice':28} {'fix':21} {'status':17} {'verified':>8} {'est.':>6} {'verify':>7} {'analyze':>8} {'ratio':>6}")
    ratios, cached = [], []
    disagreement: list[tuple[str, float]] = []  # (what, max(est/re-model, re-model/est)) per mechanical fix
    for f in files:
        f = f.resolve()
        t = time.perf_counter()
        base = analyze(f, options, toolchain=tc)
        t_analyze = time.perf_counter() - t
        fixed = [a for a in attach_fixes(base.advice, f.read_text(errors="replace"), fast_math=args.fast_math) if a.fix]
        if not fixed:
            print(f"{f.name:26} {'(no advice with a fix)':28} {'':21} {'':17} {'':>8} {'':>6} {'':>7} {t_analyze:8.2f}")
        for a in fixed:
            t = time.perf_counter()
            v = verify(f, a, options, toolchain=tc, baseline=base, cache=cache, fast_math=args.fast_math)
            dt = time.perf_counter() - t
            ratios.append(dt / t_analyze)
            t = time.perf_counter()
            verify(f, a, options, toolchain=tc, baseline=base, cache=cache, fast_math=args.fast_math)
            cached.append(time.perf_counter() - t)
            vs = f"{v.verified_speedup:.2f}x" if v.verified_speedup else "-"
            if v.verified_speedup and not a.fix.is_snippet:
                r = a.estimate.speedup / v.verified_speedup
                disagreement.append((f"{f.name} {a.optimizer}", max(r, 1 / r)))
            print(f"{f.name:26} {a.optimizer[:28]:28} {a.fix.kind:21} {v.status:17} {vs:>8} "
                  f"{a.estimate.speedup:5.2f}x {dt:7.2f} {t_analyze:8.2f} {dt / t_analyze:6.2f}")
    if ratios:
        print(f"\nmedian verify/analyze {statistics.median(ratios):.2f} over {len(ratios)} actions; "
              f"cached re-verify median {statistics.median(cached) * 1e3:.1f} ms")
    if disagreement:
        # issue 15: the estimator against the re-model of its own fix (templates, whose re-model is of
        # the unfilled placeholders, are left out)
        geo = math.exp(sum(math.log(d) for _, d in disagreement) / len(disagreement))
        over = [f"{w} ({d:.2f}x)" for w, d in disagreement if d > 1.5]
        print(f"estimate vs re-model over {len(disagreement)} mechanical fixes: geomean disagreement {geo:.2f}x "
              f"(target <= 1.25), {len(over)} over 1.5x{': ' + ', '.join(over) if over else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
