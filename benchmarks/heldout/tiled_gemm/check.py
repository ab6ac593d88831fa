"""The independent check on Pupking/01_tiled_gemm (README.md beside this file): the model's time for
each step of its six-kernel FP32 GEMM walk on the RTX 3050 Laptop it was measured on, against the
times its README publishes (published.json).

    python benchmarks/heldout/tiled_gemm/check.py     # needs src/ fetched (README.md)

Each file launches its kernel from a launcher that takes the problem from main.cu's command line, so
nothing in the file states the launch: it is given as a settings hint (`launch_hints`, as a user's
settings would give it) with the grid and block the launcher computes at M = N = K = 2048, and M, N,
K as values. The compile flags are the repository's (CMakeLists.txt: -O3, sm_86)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelscope.analysis.frontend.kernel_names import base_name
from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.options import AnalysisOptions, LaunchHint
from kernelscope.analysis.pipeline import analyze

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1] / "accuracy"))
from ratios import Table  # noqa: E402  (benchmarks/heldout/ratios.py)
from run import spearman  # noqa: E402  (the accuracy benchmark's rank correlation, one definition)

SIZE = {"M": 2048, "N": 2048, "K": 2048}


def main() -> int:
    if not (HERE / "src" / "05_bank_pad_vec.cu").is_file():
        print("src/ is not here: fetch Pupking/01_tiled_gemm's kernel files first (README.md)", file=sys.stderr)
        return 2
    published = json.loads((HERE / "published.json").read_text())
    toolchain = locate_toolchain(None)
    table = Table(16, "published")
    pairs: list[tuple[float, float]] = []
    for case in published["kernels"]:
        hint = LaunchHint(grid=tuple(case["grid"]), block=tuple(case["block"]), values=SIZE)
        opts = AnalysisOptions(arch="sm_86", device=published["device"], flags=("-O3", f"-I{HERE / 'stub'}"),
                               launch_hints={case["kernel"]: hint})
        r = analyze(HERE / "src" / case["file"], opts, toolchain=toolchain, depth="quick")
        found = [k for k in r.kernels if base_name(k.name) == case["kernel"]
                 and (case["instance"] is None or case["instance"] in k.name) and k.predicted_duration_s]
        if len(found) != 1:
            table.skip(case["label"], f"{len(found)} kernels with a prediction match ({[k.name[:60] for k in r.kernels]}; "
                                      f"{[m.message[:80] for m in r.messages][:2]})")
            continue
        table.add(case["label"], case["ms"], found[0], "grid")
        pairs.append((found[0].predicted_duration_s, case["ms"]))
    status = table.close()
    if len(pairs) > 1:  # the six files are one optimisation walk: does the model rank its steps?
        print(f"Spearman of predicted vs published times: {spearman(*map(list, zip(*pairs))):.2f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
