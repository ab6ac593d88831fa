"""Call-site blame (issue 15): a non-inlined callee's samples are charged to the calls that reach it,
so the caller's loop is hot and advice about the call lands on the call. Real nvcc output."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.advisor.call_sites import call_sites
from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REPO = Path(__file__).resolve().parents[2]
SHAPES = REPO / "tests" / "emulator" / "kernels" / "bounded_shapes.cu"


@pytest.fixture(scope="module")
def noinline(toolchain):
    return analyze(REPO / "examples" / "noinline_call.cu", AnalysisOptions(), toolchain=toolchain, depth="quick")


def test_the_calls_carry_their_callee_and_the_samples_add_up(toolchain):
    from kernelscope.analysis.emulator.model import emulate
    from kernelscope.analysis.machine.arch import load_arch_specs
    import sys
    sys.path.insert(0, str(REPO / "tests" / "emulator"))
    from _build import build_example

    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    program = build_example(REPO / "examples" / "noinline_call.cu", toolchain)
    (k,) = program.kernels
    profile = emulate(AnalysisContext.of(arch, cat.default_device(arch), AnalysisOptions(), program.source, program=program), k)
    sites = call_sites(program, k, profile)
    assert len(sites) == 64 and {s.callee for s in sites} == {"smooth_step(float, float, float)"}
    (sub,) = k.sass.subroutines
    in_callee = sum(p.total for p in profile.pcs if p.function == k.mangled and p.pc >= sub.pc)
    assert sum(s.total for s in sites) == pytest.approx(in_callee, rel=1e-9)


def test_the_call_line_shows_what_it_calls(noinline):
    (k,) = noinline.kernels
    call_line = next(lr for lr in k.lines if lr.callee_share > 0)
    assert call_line.line == 32  # `v = smooth_step(0.0f, 1.0f, v);`
    assert call_line.callee_share > 0.2
    assert sum(lr.share for lr in k.lines) == pytest.approx(1.0, abs=1e-6)  # shares stay exclusive


def test_inlining_advice_lands_on_the_call_and_weighs_its_overhead(noinline):
    (a,) = [x for x in noinline.advice if x.optimizer == "function_inlining"]
    assert a.lines == (32,)
    assert a.estimate.formula.startswith("GPA Eq. 2") and "GPA Eq. 2 over the calls' overhead" in a.message
    # GPA Eq. 2 says 2.04x (re-modeled with __forceinline__: 2.25x); unverified, it is shown capped (issue 34)
    assert a.importance > 0.3 and a.estimate.inputs["uncapped"] > 1.5 and a.estimate.speedup == 1.5


def test_a_loop_calling_a_noinline_function_is_hot_at_its_call(toolchain):
    """n-body's j loop calls pair_force: the loop line is hot once its callee counts."""
    r = analyze(SHAPES, AnalysisOptions(), toolchain=toolchain, depth="quick")
    k = next(x for x in r.kernels if x.name.startswith("nbody("))
    hot = max(k.lines, key=lambda lr: lr.share + lr.callee_share)
    assert hot.line == 17 and hot.callee_share > 0.2  # `float3 f = pair_force(me, pos[j]);`


def test_a_double_literal_is_charged_the_double_pow_it_calls(toolchain):
    r = analyze(REPO / "examples" / "stencil_double_const.cu", AnalysisOptions(), toolchain=toolchain, depth="quick")
    (a,) = [x for x in r.advice if x.optimizer == "double_precision_constant"]
    # pow(dx, 2.0) calls the double pow; 2.0f calls the inlined float one (re-modeled: 1.64x)
    assert a.importance > 0.25 and a.estimate.speedup > 1.4
    fast = [x for x in r.advice if x.optimizer == "fast_math"]
    assert all(x.importance < 0.1 for x in fast)  # -use_fast_math does not speed up the double pow


_INLINED = """
__device__ float gather(const float* a, int i, int n) {
    float s = 0.0f;
    for (int k = 0; k < 256; ++k)
        s += a[(i + k * 977) % n];  // LOOP
    return s;
}

__global__ void caller(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = gather(a, i, n);  // CALL
}

int main() {
    float *a, *out;
    caller<<<4096, 256>>>(a, out, 1 << 20);
}
"""


def test_an_inlined_callee_keeps_its_cost_on_its_own_lines(toolchain, tmp_path):
    """Issue 34: the callee's loop (inlined) is charged to its own line, not to the call line, and
    advice on the call line claims no more than that line's own share."""
    path = tmp_path / "inlined.cu"
    path.write_text(_INLINED)
    r = analyze(path, AnalysisOptions(), toolchain=toolchain, depth="quick")
    lines = _INLINED.splitlines()
    loop = next(n for n, t in enumerate(lines, 1) if "// LOOP" in t)
    call = next(n for n, t in enumerate(lines, 1) if "// CALL" in t)
    prof = r.profile.kernels[0]
    share = {ls.line: ls.total / prof.total_samples for ls in prof.lines}
    assert share[loop] > 0.5 > share.get(call, 0.0)
    on_loop = [a for a in r.advice if loop in a.lines and a.importance_basis == "of samples"]
    assert on_loop, [(a.optimizer, a.lines) for a in r.advice]
    for a in r.advice:
        if a.importance_basis == "of samples" and set(a.lines) <= {call}:
            assert a.importance <= share.get(call, 0.0) + 1e-9, (a.optimizer, a.importance)
