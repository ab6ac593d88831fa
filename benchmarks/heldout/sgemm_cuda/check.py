"""The independent check on siboehm/SGEMM_CUDA (README.md beside this file): the model's time for
each kernel of sgemm_check.cu on the H100 SXM against the time measured on an H100 (measured_h100.json).

    python benchmarks/heldout/sgemm_cuda/check.py     # needs src/ fetched (README.md)

The whole-file budget is raised for this run (nvcc_multiple 100) so that every kernel is emulated:
at the default 4x nvcc the last four kernels of the file are not (the result says so), which is the
product's behaviour, not a prediction to compare."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.options import AnalysisBudget, AnalysisOptions
from kernelscope.analysis.pipeline import analyze

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ratios import Table  # noqa: E402  (benchmarks/heldout/ratios.py)


def main() -> int:
    if not (HERE / "src" / "kernels.cuh").is_file():
        print("src/ is not here: fetch siboehm/SGEMM_CUDA's src/kernels* first (README.md)", file=sys.stderr)
        return 2
    measured = json.loads((HERE / "measured_h100.json").read_text())["kernels"]
    opts = AnalysisOptions(arch="sm_90", device="H100 SXM", flags=(f"-I{HERE / 'stub'}",),
                           budget=AnalysisBudget(nvcc_multiple=100.0))
    r = analyze(HERE / "sgemm_check.cu", opts, toolchain=locate_toolchain(None), depth="quick")
    table = Table(28, "measured")
    for k in sorted(r.kernels, key=lambda k: -measured.get(k.name.split("(")[0].split("<")[0].removeprefix("void "),
                                                              {}).get("gpu__time_duration_ms", 0)):
        base = k.name.split("(")[0].split("<")[0].removeprefix("void ")
        m = measured.get(base, {}).get("gpu__time_duration_ms")
        p = k.predicted_duration_s
        if not m or not p:
            table.skip(base, f"measured {m}, predicted {p}")
            continue
        table.add(base, m, k, "grid")
    return table.close()


if __name__ == "__main__":
    sys.exit(main())
