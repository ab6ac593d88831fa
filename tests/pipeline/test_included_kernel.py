"""A kernel defined in an included `.cu` (Rodinia's `#include "needle_kernel.cu"`): its advice names
that file's lines, so it says which file, carries no edit of the analysed one, and is no diagnostic of
it (Advice.file). Real nvcc output, the real pipeline."""

from __future__ import annotations

import json

from kernelscope.analysis.advisor.fixes import attach_fixes
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.reports.sarif import render_sarif
from kernelscope.analysis.reports.text import render_text

# a double constant in float math: double_precision_constant's item, with a fix, on the kernel's line 5
KERNEL = """__global__ void scale(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = y[i] * 0.5 + 1.0;
}
"""
MAIN = """// the kernels
#include "kernels.cu"

int main()
{
    float* y;
    cudaMalloc(&y, (1 << 22) * sizeof(float));
    scale<<<(1 << 22) / 256, 256>>>(y, 1 << 22);
    return 0;
}
"""


def test_advice_of_an_included_kernel_names_its_file(tmp_path, toolchain):
    (tmp_path / "kernels.cu").write_text(KERNEL)
    main = tmp_path / "main.cu"
    main.write_text(MAIN)
    r = analyze(main, AnalysisOptions(), toolchain=toolchain, depth="quick")
    assert r.advice, "the double constant is advised"
    for a in r.advice:
        assert a.file is not None and a.file.endswith("kernels.cu") and a.fix is None and a.columns is None
    assert all(f.fix is None for f in attach_fixes(r.advice, MAIN))  # no edit of main.cu from kernels.cu's lines
    text = render_text(r)
    assert "kernels.cu:5: " in text, text
    results = json.loads(render_sarif(r))["runs"][0]["results"]
    assert {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1]
            for x in results} == {"kernels.cu"}
    # analysed itself, the same kernel's advice is that file's own
    own = analyze(tmp_path / "kernels.cu", AnalysisOptions(), toolchain=toolchain, depth="quick")
    assert own.advice and all(a.file is None for a in own.advice)
