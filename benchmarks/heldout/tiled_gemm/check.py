"""The independent check on Pupking/01_tiled_gemm (README.md beside this file): the model's time for
each step of its six-kernel FP32 GEMM walk and of its trait-templated extensions on the RTX 3050
Laptop they were measured on, against the times its README publishes (published.json).

    python benchmarks/heldout/tiled_gemm/check.py     # needs src/ fetched (README.md)

Each file launches its kernel from a launcher that takes the problem from main.cu's command line, so
nothing in the file states the launch: it is given as a settings hint (`launch_hints`, as a user's
settings would give it) with the grid and block the launcher computes at M = N = K = 2048, and M, N,
K as values (the trait kernels also take the launcher's tile counts). The compile flags are the
repository's (CMakeLists.txt: -O3, sm_86). trait_based_kernels.cu instantiates 21 kernels, so the
whole-file budget is raised (nvcc_multiple 100) for every one the check compares to be emulated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelscope.analysis.frontend.kernel_names import base_name
from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.options import AnalysisBudget, AnalysisOptions, LaunchHint
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
    pairs: dict[str, list[tuple[float, float]]] = {}
    for file in dict.fromkeys(c["file"] for c in published["kernels"]):
        cases = [c for c in published["kernels"] if c["file"] == file]
        # one case: the hint by the kernel's base name; several instances of one template in a file:
        # each by its full name (the launch hints' two keys)
        hints = {c.get("name", c["kernel"]): LaunchHint(grid=tuple(c["grid"]), block=tuple(c["block"]),
                                                        dynamic_smem=c["dynamic_smem"] or None,
                                                        values={**SIZE, **c.get("values", {})}) for c in cases}
        opts = AnalysisOptions(arch="sm_86", device=published["device"], flags=("-O3", f"-I{HERE / 'stub'}"),
                               launch_hints=hints, budget=AnalysisBudget(nvcc_multiple=100.0))
        r = analyze(HERE / "src" / file, opts, toolchain=toolchain, depth="quick")
        for case in cases:
            found = [k for k in r.kernels if base_name(k.name) == case["kernel"]
                     and (case["instance"] is None or case["instance"] in k.name) and k.predicted_duration_s]
            if len(found) != 1:
                table.skip(case["label"], f"{len(found)} kernels with a prediction match "
                                          f"({[m.message[:80] for m in r.messages][:2]})")
                continue
            table.add(case["label"], case["ms"], found[0], "grid")
            family = "walk" if file[:2].isdigit() else "traits"
            pairs.setdefault(family, []).append((found[0].predicted_duration_s, case["ms"]))
    status = table.close()
    for family, xy in pairs.items():  # each table of the README is one optimisation walk: are its steps ranked?
        if len(xy) > 1:
            print(f"{family}: Spearman of predicted vs published times over {len(xy)} kernels: "
                  f"{spearman(*map(list, zip(*xy))):.2f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
