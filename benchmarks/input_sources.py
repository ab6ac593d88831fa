"""Where the model's launch inputs come from over the real programs of tests/data/real/:
per kernel, the source of its grid (captured, launch_site = folded, settings, annotation,
default), analysed without launch capture (an untrusted workspace) and with it.

    python benchmarks/input_sources.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "real"
SOURCES = ("captured", "launch_site", "settings", "annotation", "default")


def grid_sources(src: Path, options: AnalysisOptions) -> list[str]:
    result = analyze(src, options, depth="quick")
    return [next((a.source for a in k.assumptions if a.name == "grid"), "none") for k in result.kernels]


def main() -> int:
    files = sorted(p for p in REAL.rglob("*.cu"))
    base = AnalysisOptions(flags=("-I", str(REAL / "cuda-samples" / "Common")))
    static, captured = Counter(), Counter()
    for src in files:
        static.update(grid_sources(src, base))
        captured.update(grid_sources(src, with_capture(src, base).options))
    print(f"{len(files)} programs; kernels as compiled (template instances counted separately)")
    print(f"{'source of the grid':<20}{'no capture':>12}{'with capture':>14}")
    for s in (*SOURCES, "none"):
        if static[s] or captured[s]:
            print(f"{s:<20}{static[s]:>12}{captured[s]:>14}")
    print(f"{'total':<20}{sum(static.values()):>12}{sum(captured.values()):>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
