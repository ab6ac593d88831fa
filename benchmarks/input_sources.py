"""Where the model's launch inputs come from over the real programs of tests/data/real/: per
kernel (each compiled template instance counted), the source of its grid and of its block
(captured, launch_site = folded, settings, annotation, default), analysed without launch capture
(an untrusted workspace) and with it. Programs build with tests/data/real/build_flags.json.

    python benchmarks/input_sources.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "real"
SOURCES = ("captured", "launch_site", "settings", "annotation", "default")
FLAGS = json.loads((REAL / "build_flags.json").read_text())


def options_for(src: Path) -> AnalysisOptions:
    name = src.relative_to(REAL).as_posix()
    return AnalysisOptions(flags=tuple(f.format(real=REAL) for f in (*FLAGS["*"], *FLAGS.get(name, ()))))


def launch_sources(src: Path, options: AnalysisOptions) -> list[tuple[str, str]]:
    """(source of the grid, source of the block) of each kernel of the file."""
    out = []
    for k in analyze(src, options, depth="quick").kernels:
        got = {a.name: a.source for a in k.assumptions}
        out.append((got.get("grid", "none"), got.get("block", "none")))
    return out


def main() -> int:
    files = sorted(REAL.rglob("*.cu"))
    counts = {key: Counter() for key in ("grid", "grid+capture", "block", "block+capture")}
    projects = {f.relative_to(REAL).parts[0] for f in files}
    for src in files:
        base = options_for(src)
        for grid, block in launch_sources(src, base):
            counts["grid"][grid] += 1
            counts["block"][block] += 1
        for grid, block in launch_sources(src, with_capture(src, base).options):
            counts["grid+capture"][grid] += 1
            counts["block+capture"][block] += 1
    print(f"{len(files)} programs from {len(projects)} projects; kernels as compiled "
          "(template instances counted separately)")
    print(f"{'source':<14}{'grid':>8}{'grid+capture':>15}{'block':>8}{'block+capture':>16}")
    for s in (*SOURCES, "none"):
        if any(c[s] for c in counts.values()):
            print(f"{s:<14}{counts['grid'][s]:>8}{counts['grid+capture'][s]:>15}"
                  f"{counts['block'][s]:>8}{counts['block+capture'][s]:>16}")
    print(f"{'total':<14}{sum(counts['grid'].values()):>8}{sum(counts['grid+capture'].values()):>15}"
          f"{sum(counts['block'].values()):>8}{sum(counts['block+capture'].values()):>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
