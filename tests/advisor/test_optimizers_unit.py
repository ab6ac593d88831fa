"""Optimizers on a parsed source and hand-built SASS (the real-kernel tests are in test_optimizers_real.py)."""

from __future__ import annotations

import pytest

from kernelscope.analysis.advisor.ranking import run_optimizers
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.advisor.blame import blame_instructions
from kernelscope.analysis.advisor.optimizers import REGISTRY, MatchContext
from kernelscope.analysis.advisor.optimizers.latency import LoopUnrolling
from kernelscope.analysis.advisor.optimizers.parallel import BlockIncrease, ThreadIncrease
from kernelscope.analysis.advisor.optimizers.static import DoublePrecisionConstant, MissingRestrict
from kernelscope.analysis.profile import StallReason as R
from kernelscope.analysis.results import StaticFact
from kernelscope.analysis.frontend.source import parse_source

from .sassfrag import FN, ins, profile, samples

SRC = """\
__global__ void scale(float* out, float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k)
        acc += in[i + k] * 2.0;
    out[i] = acc;
}
"""


def loop_code():
    """Line 5 loop header, line 6 body: LDG then its immediate use, and a backward branch."""
    return (
        ins(0, "S2R", ("R0",), (), line=3),
        ins(1, "LDG", ("R4",), ("R2", "R3"), space="global", line=6),
        ins(2, "F2F", ("R6", "R7"), ("R4",), line=6, modifiers=("F64", "F32")),
        ins(3, "DMUL", ("R6", "R7"), ("R6", "R7"), line=6),
        ins(4, "F2F", ("R8",), ("R6", "R7"), line=6, modifiers=("F32", "F64")),
        ins(5, "FADD", ("R9",), ("R9", "R8"), line=6),
        ins(6, "BRA", (), (), pred="P0", target=1, line=5),
        ins(7, "STG", (), ("R10", "R11", "R9"), space="global", line=7),
        ins(8, "EXIT", line=8),
    )


def ctx_for(pcs, *, launch_block=(256, 1, 1), grid=(4096, 1, 1), facts=(), src=SRC, code=None):
    code = code or loop_code()
    cat = load_arch_specs()
    prof = profile(pcs, grid=grid, block=launch_block)
    return MatchContext(kernel=FN, kernel_name="scale(float*, float*, int)", instructions=code,
                        source=parse_source(src), source_lines=tuple(src.splitlines()), profile=prof,
                        blame=blame_instructions(code, pcs), facts=tuple(facts), arch=cat.arch("sm_90"),
                        device=cat.device("H100 SXM"))


def hot_loop_samples():
    return samples(i1={R.selected: 4}, i2={R.long_scoreboard: 60, R.selected: 2}, i3={R.wait: 10, R.selected: 2},
                   i4={R.wait: 10, R.selected: 2}, i5={R.selected: 4}, i6={R.selected: 2}, i7={R.selected: 4})


def test_loop_unrolling_inserts_pragma_before_loop():
    (a,) = LoopUnrolling().match(ctx_for(hot_loop_samples()))
    assert a.lines[0] == 5 and a.estimate.speedup > 1 and "Eq. 5" in a.estimate.formula
    (edit,) = a.fix.edits
    assert (edit.line, edit.col, edit.new_text) == (5, 0, "    #pragma unroll 4\n")
    assert a.hotspots[0].def_line == 6 and a.hotspots[0].distance == 1
    assert "modeled" in a.message


def test_loop_unrolling_absent_when_pragma_present():
    src = SRC.replace("    for (int k", "    #pragma unroll 4\n    for (int k")
    code = tuple(i.model_copy(update={"location": i.location.model_copy(update={"line": i.line + (1 if i.line >= 5 else 0)})})
                 for i in loop_code())
    assert LoopUnrolling().match(ctx_for(hot_loop_samples(), src=src, code=code)) == []


def test_double_constant_fix_is_suffix_at_exact_column():
    fact = StaticFact(kind="fp64_conversion", line=6, column=27, end_column=30, detail="F2F.F64.F32 and back",
                      cause="2.0", count=3)
    (a,) = DoublePrecisionConstant().match(ctx_for(hot_loop_samples(), facts=[fact]))
    (edit,) = a.fix.edits
    assert SRC.splitlines()[5][27:30] == "2.0"
    assert (edit.line, edit.col, edit.end_col, edit.new_text) == (6, 30, 30, "f")
    assert a.columns == (27, 30) and a.estimate.speedup > 1


def _stores_in_the_loop():
    """loop_code with the store moved into the loop: each iteration's load follows the previous
    iteration's store, which the pointers may alias."""
    code = list(loop_code())
    store = code.pop(7).model_copy(update={"index": 6, "pc": 6 * 16})
    branch = code.pop(6).model_copy(update={"index": 7, "pc": 7 * 16})
    return tuple(code[:6] + [store, branch] + code[6:])


def test_restrict_needs_a_load_after_a_store():
    # the loop's loads all precede the store after it: the same SASS with __restrict__, no advice
    assert MissingRestrict().match(ctx_for(hot_loop_samples())) == []


def test_restrict_fix_adds_const_only_to_read_only_pointer():
    (a,) = MissingRestrict().match(ctx_for(hot_loop_samples(), code=_stores_in_the_loop()))
    texts = sorted((e.line, e.col, e.new_text) for e in a.fix.edits)
    line1 = SRC.splitlines()[0]
    assert (1, line1.index("float* in"), "const ") in texts
    assert (1, line1.index("* out") + 1, " __restrict__") in texts and (1, line1.index("* in") + 1, " __restrict__") in texts
    assert not any(e.new_text == "const " and e.col == line1.index("float* out") for e in a.fix.edits)


def test_block_increase_positive_and_negative():
    (a,) = BlockIncrease().match(ctx_for(hot_loop_samples(), grid=(16, 1, 1)))
    assert a.estimate.speedup > 1 and "132 SMs" in a.message
    assert BlockIncrease().match(ctx_for(hot_loop_samples(), grid=(4096, 1, 1))) == []


def test_thread_increase_positive_and_negative():
    (a,) = ThreadIncrease().match(ctx_for(hot_loop_samples(), launch_block=(32, 1, 1)))
    assert a.estimate.speedup > 1 and "Eq. 10" in a.estimate.formula
    assert ThreadIncrease().match(ctx_for(hot_loop_samples(), launch_block=(256, 1, 1))) == []


def test_every_optimizer_runs_on_the_context():
    ctx = ctx_for(hot_loop_samples(), grid=(16, 1, 1))
    advice = run_optimizers(ctx, REGISTRY)
    names = {a.optimizer for a in advice}
    assert {"loop_unrolling", "code_reordering", "block_increase"} <= names
    for a in advice:
        assert a.estimate.speedup >= 1 and a.estimate.speedup == pytest.approx(a.estimate.speedup)
        assert a.provenance == "modeled"


# The modeled profile has no instruction-fetch stalls and static_facts does not yet report
# uncoalesced accesses or bank conflicts, so these three are checked on hand-built inputs here.

def test_function_split_positive_and_negative():
    from kernelscope.analysis.advisor.optimizers.stall import FunctionSplit
    pcs = hot_loop_samples()
    fetch = samples(i5={R.no_instruction: 40, R.selected: 4})
    (a,) = FunctionSplit().match(ctx_for({**pcs, **fetch}))
    assert a.estimate.speedup > 1 and 6 in a.lines
    assert FunctionSplit().match(ctx_for(pcs)) == []


@pytest.mark.parametrize("kind,opt", [("uncoalesced_access", "coalesced_access"), ("bank_conflict", "bank_conflicts")])
def test_fact_driven_optimizers(kind, opt):
    from kernelscope.analysis.advisor.optimizers.static import CoalescedAccess, SharedBankConflicts
    cls = {"coalesced_access": CoalescedAccess, "bank_conflicts": SharedBankConflicts}[opt]
    code = list(loop_code())
    if opt == "bank_conflicts":
        code[1] = ins(1, "LDS", ("R4",), ("R2",), space="shared", line=6)
    fact = StaticFact(kind=kind, line=6, detail="stride of 32 elements between lanes")
    (a,) = cls().match(ctx_for(hot_loop_samples(), facts=[fact], code=tuple(code)))
    assert a.lines == (6,) and a.estimate.speedup > 1
    assert cls().match(ctx_for(hot_loop_samples(), code=tuple(code))) == []
