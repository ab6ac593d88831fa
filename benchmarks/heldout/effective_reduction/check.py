"""The independent check on simveit/effective_reduction (README.md beside this file): the model's
time for each reduction kernel on the H100 SXM against the time its author published for an H100
(published.json: the bandwidth table of the repository's README).

    python benchmarks/heldout/effective_reduction/check.py     # needs src/ fetched (README.md)

Each program is analysed as a user's editor would analyse it, with the Makefile's device flags and
the default settings: launches folded from the source, no capture (each main() fills 2^30 ints with
rand() before its first launch, which capture's time limit stops)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ratios import Table  # noqa: E402  (benchmarks/heldout/ratios.py)
#: the Makefile's NVCC_FLAGS that reach device code (its -Xcompiler flags are the host compiler's)
FLAGS = ("-std=c++17", "-O3", "-DNDEBUG", "--use_fast_math", "--expt-relaxed-constexpr", "--expt-extended-lambda")


def main() -> int:
    if not (HERE / "src" / "kernel_0.cu").is_file():
        print("src/ is not here: fetch simveit/effective_reduction's kernel_*.cu first (README.md)", file=sys.stderr)
        return 2
    published = json.loads((HERE / "published.json").read_text())
    toolchain = locate_toolchain(None)
    opts = AnalysisOptions(arch="sm_90", device="H100 SXM", flags=FLAGS)
    table = Table(10, "published")
    for name, gb_s in published["bandwidth_gb_s"].items():
        measured_ms = published["bytes"] / (gb_s * 1e9) * 1e3
        r = analyze(HERE / "src" / f"{name}.cu", opts, toolchain=toolchain, depth="quick")
        k = next((k for k in r.kernels if k.name.removeprefix("void ").startswith(name + "<")), None)
        if k is None or not k.predicted_duration_s:
            # kernel_5 is cub::DeviceReduce::Sum: its kernels are launched inside cub's headers, with
            # a tuning policy's launch the source does not state; the model assumes one (and says so)
            table.skip(name, f"no kernel of this name with a prediction ({', '.join(k.name[:40] for k in r.kernels)})")
        else:
            table.add(name, measured_ms, k, "block")
    return table.close()


if __name__ == "__main__":
    sys.exit(main())
