"""Issue 34, item 2: one fix, one item. Items that share an edit or change the same instructions are
one item naming all their lines; a double math function is advised only where a call of one is.
Real nvcc output, the whole quick pipeline."""

from __future__ import annotations

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

_SOURCE = """
__global__ void scale(float* x, const float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i];
        float a = v * 2.0;
        float b = a + 2.0 * v;        // LITERAL
        x[i] = a * b + sqrt(v) * 2.0;  // CALL
    }
}
int main() { float *x, *y; scale<<<1024, 256>>>(x, y, 1 << 18); }
"""


def test_one_item_per_fix(toolchain, tmp_path):
    path = tmp_path / "scale.cu"
    path.write_text(_SOURCE)
    r = analyze(path, AnalysisOptions(), toolchain=toolchain, depth="quick")
    lines = _SOURCE.splitlines()
    literal = next(n for n, t in enumerate(lines, 1) if "// LITERAL" in t)
    call = next(n for n, t in enumerate(lines, 1) if "// CALL" in t)
    items = [a for a in r.advice if a.kernel_name.startswith("scale")]
    # sqrt(v) * 2.0: the float-math fix and the literal's change one FP64 chain, so they are one item
    # whose fix makes both edits
    (on_call,) = [a for a in items if a.fix is not None and call in a.lines]
    assert {e.new_text for e in on_call.fix.edits} == {"sqrtf", "f"}, on_call.fix
    assert set(on_call.also) | {on_call.optimizer} == {"double_math_function", "double_precision_constant"}
    # no math call on the literal's line: no double_math_function there
    assert not [a for a in items if a.optimizer == "double_math_function" and a.lines == (literal,)]
    # the FP64 arithmetic those fixes remove is not advised again as strength reduction
    assert not [a for a in items if a.optimizer == "strength_reduction" and {literal, call} & set(a.lines)]
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            shared = a.fix is not None and b.fix is not None and set(a.fix.edits) & set(b.fix.edits)
            assert not shared and not (a.changes and a.changes == b.changes), (a.optimizer, b.optimizer)
