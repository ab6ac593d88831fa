"""The independent check on Jokeren/GPA-Benchmark (README.md beside this file): for each
optimization GPA advised and its authors applied and measured (cases.json), does kernelscope's
advice for the original kernel name it, at what rank, and with what estimate?

    python benchmarks/heldout/gpa_benchmark/check.py     # needs src/ fetched (README.md)

Each program is analysed as the editor would analyse it (default settings, sm_90, the H100 SXM;
CUDA 13 compiles nothing older than sm_75, so not the V100 they were measured on): launches come
from the source, and where they depend on input files, the model assumes them and says so. So the
check is of which remedy the model finds, not of its figures: an estimate on an H100 is not a
V100's speedup."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelscope.analysis.frontend.kernel_names import base_name
from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.results import AnalysisResult

HERE = Path(__file__).resolve().parent


def main() -> int:
    src = HERE / "src"
    if not (src / "rodinia").is_dir():
        print("src/ is not here: fetch Jokeren/GPA-Benchmark first (README.md)", file=sys.stderr)
        return 2
    table = json.loads((HERE / "cases.json").read_text())
    toolchain = locate_toolchain(None)
    results: dict[str, AnalysisResult] = {}
    named = top3 = compared = 0
    print(f"{'kernel':28} {'GPA optimization':28} {'measured':>8}  kernelscope")
    for case in table["cases"]:
        path = src / case["file"]
        if case["file"] not in results:
            results[case["file"]] = analyze(path, AnalysisOptions(), toolchain=toolchain)
        r = results[case["file"]]
        kernel = next((k for k in r.kernels if base_name(k.name) == case["kernel"]), None)
        wanted = set(table["optimizers"][case["optimization"]])
        head = f"{case['kernel'][:28]:28} {case['optimization'][:28]:28} {case['measured']:7.2f}x"
        if kernel is None:
            print(f"{head}  not analysed ({'does not compile' if not r.compiled else 'no such kernel'})")
            continue
        compared += 1
        mine = [a for a in r.advice if a.kernel == kernel.mangled]
        rank = next((n for n, a in enumerate(mine, 1) if wanted & {a.optimizer, *a.also}), None)
        if rank is None:
            shown = ", ".join(f"{a.optimizer} {a.speedup:.2f}x" for a in mine[:3]) or "no advice"
            print(f"{head}  not named (top: {shown})")
            continue
        a = mine[rank - 1]
        named += 1
        top3 += rank <= 3
        rests = f", {a.rests_on}" if a.rests_on else ""
        print(f"{head}  #{rank} of {len(mine)}: {a.optimizer} est. {a.speedup:.2f}x{rests}")
    print(f"\n{len(table['cases'])} cases, {compared} analysed: GPA's optimization named in {named}, "
          f"among the kernel's first three items in {top3}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
