"""GPA §IV blamer on hand-built SASS fragments."""

from __future__ import annotations

import pytest

from kernelscope.analysis.advisor.blame import (ARITHMETIC, GLOBAL, LOCAL, SHARED, SYNC, WAR, apportion, blame_instructions,
                                        covers, instruction_predecessors)
from kernelscope.analysis.profile import PCSample, StallReason as R

from .sassfrag import cc, ins, samples

LS = R.long_scoreboard


def test_barrier_register_dependency_without_register_use():
    """GPA Fig. 3: BRA does not read R0 but waits on B0, which the LDG set."""
    code = [
        ins(0, "LDG", ("R0",), ("R2", "R3"), space="global", control=cc(wb=0)),
        ins(1, "IADD3", ("R5",), ("R6", "R7")),
        ins(2, "BRA", (), (), pred="P1", target=0, control=cc(wait=(0,))),
        ins(3, "EXIT"),
    ]
    res = blame_instructions(code, samples(i0={R.selected: 1}, i2={LS: 10}))
    (e,) = res.edges
    assert (e.def_index, e.use_index, e.operands, e.category) == (0, 2, ("B0",), GLOBAL)
    assert e.samples == pytest.approx(10)
    assert e.distance == 2


def fig4(extra_filler: bool = False):
    """GPA Fig. 4a: IMAD R0; @!P0 LDC R0; @P0 LDG R0; IADD R1 = R0 + R5 (stalled)."""
    return [
        ins(0, "IMAD", ("R0",), ("R8", "R9")),
        ins(1, "LDC", ("R0",), (), pred="!P0", space="constant"),
        ins(2, "LDG", ("R0",), ("R2", "R3"), pred="P0", space="global"),
        ins(3, "IADD3", ("R1",), ("R0", "R5")),
    ]


def test_predicated_definition_coverage():
    """The search passes the @P0 LDG, stops at @!P0 LDC ({P0, !P0} = _); the IMAD is never reached."""
    res = blame_instructions(fig4(), samples(i1={R.selected: 2}, i2={R.selected: 1}, i3={LS: 12}))
    assert sorted(e.def_index for e in res.edges) == [1, 2]
    assert not any(p.def_index == 0 for p in res.pruned)


def test_predicate_union_rule():
    assert covers(frozenset({"P0", "!P0"}), "_")
    assert covers(frozenset({"_"}), "P3")
    assert covers(frozenset({"P0"}), "P0")
    assert not covers(frozenset({"P0"}), "_")
    assert not covers(frozenset({"!P0"}), "P0")


def test_predicated_use_is_covered_by_same_predicate():
    code = [ins(0, "LDG", ("R0",), ("R2",), space="global"), ins(1, "LDG", ("R0",), ("R2",), pred="P0", space="global"),
            ins(2, "IADD3", ("R1",), ("R0",), pred="P0")]
    res = blame_instructions(code, samples(i2={LS: 4}))
    assert [e.def_index for e in res.edges] == [1]


def test_opcode_pruning_memory_stall_never_blames_arithmetic():
    """Without the LDC the search reaches the IMAD, which cannot cause a long-scoreboard stall."""
    code = [ins(0, "IMAD", ("R0",), ("R8", "R9")), ins(1, "NOP"),
            ins(2, "LDG", ("R0",), ("R2", "R3"), pred="P0", space="global"), ins(3, "IADD3", ("R1",), ("R0", "R5"))]
    res = blame_instructions(code, samples(i3={LS: 6}))
    assert [e.def_index for e in res.edges] == [2]
    assert [(p.def_index, p.rule) for p in res.pruned] == [(0, "opcode")]


def test_opcode_pruning_keeps_arithmetic_for_wait_stalls():
    code = [ins(0, "LDG", ("R4",), ("R2",), space="global"), ins(1, "FFMA", ("R0",), ("R4", "R5", "R6")),
            ins(2, "FMUL", ("R1",), ("R0", "R4"))]
    res = blame_instructions(code, samples(i2={R.wait: 3}))
    assert [(e.def_index, e.category) for e in res.edges] == [(1, ARITHMETIC)]
    assert [(p.def_index, p.rule) for p in res.pruned] == [(0, "opcode")]


def test_dominator_pruning():
    """An unpredicated read of R0 between the load and the stalled use would have stalled first."""
    code = [ins(0, "LDG", ("R0",), ("R2",), space="global"), ins(1, "IADD3", ("R3",), ("R0",)),
            ins(2, "FADD", ("R4",), ("R0", "R0"))]
    res = blame_instructions(code, samples(i2={LS: 5}))
    assert res.edges == ()
    assert [(p.def_index, p.use_index, p.rule) for p in res.pruned] == [(0, 2, "dominator")]
    assert res.self_blame[0].unexplained


def test_predicated_reader_does_not_dominate():
    code = [ins(0, "LDG", ("R0",), ("R2",), space="global"), ins(1, "IADD3", ("R3",), ("R0",), pred="P1"),
            ins(2, "FADD", ("R4",), ("R0", "R0"))]
    res = blame_instructions(code, samples(i2={LS: 5}))
    assert [e.def_index for e in res.edges] == [0]


def test_dominator_only_on_some_paths_keeps_edge():
    """The reader sits on one arm of a branch only: some path avoids it, so the edge stays."""
    code = [
        ins(0, "LDG", ("R0",), ("R2",), space="global"),
        ins(1, "BRA", (), (), pred="P0", target=3),
        ins(2, "IADD3", ("R3",), ("R0",)),
        ins(3, "FADD", ("R4",), ("R0",)),
    ]
    res = blame_instructions(code, samples(i3={LS: 5}))
    assert [e.def_index for e in res.edges] == [0]


def test_latency_pruning():
    filler = [ins(k, "IADD3", (f"R{20 + k}",), ("R10",)) for k in range(1, 21)]
    code = [ins(0, "FADD", ("R0",), ("R8", "R9")), *filler, ins(21, "FMUL", ("R1",), ("R0", "R0"))]
    res = blame_instructions(code, samples(i21={R.wait: 7}))
    assert res.edges == ()
    assert [(p.def_index, p.rule) for p in res.pruned] == [(0, "latency")]
    near = [ins(0, "FADD", ("R0",), ("R8", "R9")), *filler[:3], ins(4, "FMUL", ("R1",), ("R0", "R0"))]
    assert [e.distance for e in blame_instructions(near, samples(i4={R.wait: 7})).edges] == [4]


def test_eq1_apportioning_fig4d():
    """LDC has twice the LDG's issued samples and twice its path: each gets half (Fig. 4d)."""
    res = blame_instructions(fig4(), samples(i1={R.selected: 2}, i2={R.selected: 1}, i3={LS: 12}))
    by_def = {e.def_index: e for e in res.edges}
    assert by_def[2].path_length == 1 and by_def[1].path_length == 2
    assert by_def[1].samples == pytest.approx(6) and by_def[2].samples == pytest.approx(6)
    assert sum(e.samples for e in res.edges) == pytest.approx(12)


def test_eq1_by_hand():
    # R_issue = (3/4, 1/4), R_path ∝ (1/2, 1/1) = (1/3, 2/3): weights 1/4, 1/6 -> 0.6, 0.4 of 10
    assert apportion(10, [3, 1], [2, 1]) == pytest.approx([6, 4])
    assert apportion(10, [0, 0], [1, 4]) == pytest.approx([8, 2])  # no issue samples: path ratio only


def test_classification():
    code = [
        ins(0, "LDL", ("R0",), ("R1",), space="local", control=cc(wb=0)),
        ins(1, "LDS", ("R4",), ("R6",), space="shared", control=cc(wb=1)),
        ins(2, "STG", (), ("R2", "R3", "R7"), space="global", control=cc(rb=2)),
        ins(3, "FADD", ("R8",), ("R0",), control=cc(wait=(0,))),
        ins(4, "FADD", ("R9",), ("R4",), control=cc(wait=(1,))),
        ins(5, "MOV", ("R7",), ("R10",), control=cc(wait=(2,))),
    ]
    res = blame_instructions(code, samples(i3={LS: 1}, i4={R.short_scoreboard: 1}, i5={LS: 1}))
    cats = {(e.def_index, e.use_index): e.category for e in res.edges}
    assert cats == {(0, 3): LOCAL, (1, 4): SHARED, (2, 5): WAR}


def test_barrier_stall_blames_sync_and_throttles_stay():
    code = [ins(0, "STS", (), ("R1", "R2"), space="shared"), ins(1, "BAR", (), (), modifiers=("SYNC",)),
            ins(2, "LDS", ("R3",), ("R1",), space="shared"), ins(3, "LDG", ("R5",), ("R6",), space="global")]
    res = blame_instructions(code, samples(i1={R.barrier: 4}, i2={R.barrier: 6}, i3={R.lg_throttle: 9}))
    assert [(e.def_index, e.use_index, e.category, e.samples) for e in res.edges] == [(1, 2, SYNC, 6)]
    assert {(s.index, s.reason) for s in res.self_blame} == {(1, R.barrier), (3, R.lg_throttle)}


def test_loop_carried_dependency_across_back_edge():
    code = [
        ins(0, "MOV", ("R0",), ("R9",)),
        ins(1, "FADD", ("R2",), ("R0", "R3"), pred="P0"),  # loop header: reads R0 from the latch's load
        ins(2, "IADD3", ("R4",), ("R4",)),
        ins(3, "LDG", ("R0",), ("R6",), space="global"),
        ins(4, "BRA", (), (), pred="P1", target=1),
        ins(5, "EXIT"),
    ]
    assert instruction_predecessors(code)[1] == (0, 4)
    res = blame_instructions(code, samples(i1={LS: 8}))
    assert [(e.def_index, e.distance) for e in res.edges] == [(3, 2)]  # LDG -> BRA -> header


def test_conservation_of_samples():
    res = blame_instructions(fig4(), samples(i1={R.selected: 2}, i2={R.selected: 1}, i3={LS: 12, R.not_selected: 3}))
    assert sum(e.samples for e in res.edges) + sum(s.samples for s in res.self_blame) == pytest.approx(15)
    assert res.total_samples == pytest.approx(18) and res.active_samples == pytest.approx(3)


def _reference_slice(instrs, preds, use, operand, max_dist, budget):
    """GPA §IV's backward slice as plainly as it reads: depth first over simple paths, the last
    predecessor first, every step counted; a search cut at `budget` keeps the defs found by then.
    Returns ({def: (min distance, max distance, on an unshadowed path)}, truncated, steps)."""
    from kernelscope.analysis.advisor.blame import _guard, _vdefs, _vuses

    use_guard, found, steps = _guard(instrs[use].predicate), {}, 0

    path = {use}

    def visit(x, d, covered, shadowed):
        nonlocal steps
        steps += 1
        if steps > budget:
            return True
        if d > max_dist or x in path:
            return False
        if operand in _vdefs(instrs[x]):
            lo, hi, un = found.get(x, (d, d, False))
            found[x] = (min(lo, d), max(hi, d), un or not shadowed)
            covered = covered | {_guard(instrs[x].predicate)}
            if covers(covered, use_guard):
                return False
        elif instrs[x].predicate is None and operand in _vuses(instrs[x]):
            shadowed = True
        path.add(x)
        cut = any(visit(p, d + 1, covered, shadowed) for p in reversed(preds[x]))
        path.discard(x)
        return cut

    cut = any(visit(p, 1, frozenset(), False) for p in reversed(preds[use]))
    return found, cut, budget if cut else steps


@pytest.mark.parametrize("budget", [40, 700, 20000])
def test_slices_of_a_real_kernel_are_the_plain_depth_first_search_cut_at_the_budget(toolchain, tmp_path, budget):
    """Every register and barrier a real kernel's instructions read, sliced as GPA defines it: the
    blamer's defs, distances and pruning rules, and its step count and cuts (which the file's
    budget charges), are those of the plain search, with and without cuts mid-search."""
    import sys
    from pathlib import Path

    from kernelscope.analysis.advisor.blame import LATENCY_BOUND, _vuses, latency_class

    from .realkernel import analyse

    src = (Path(__file__).resolve().parents[2] / "benchmarks" / "shapes" / "shuffle_softmax.cu").read_text()
    (fn,) = analyse(src, toolchain, tmp_path, emulate=False).program.kernels
    instrs = fn.sass.instructions
    preds = fn.cfg.instruction_predecessors()
    stalled = {i.pc: PCSample(function=fn.mangled, pc=i.pc, samples={LS: 1.0}) for i in instrs if _vuses(i)}
    res = blame_instructions(instrs, stalled, function=fn.mangled, cfg=fn.cfg, budget=budget)

    max_dist = max(64, max(LATENCY_BOUND[latency_class(i)] for i in instrs) + 1)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * max_dist + 200))
    want, steps, cut = set(), 0, 0
    for j, i in enumerate(instrs):
        for op in sorted(_vuses(i)) if i.pc in stalled else ():
            found, t, n = _reference_slice(instrs, preds, j, op, max_dist, budget)
            steps, cut = steps + n, cut + t
            want |= {(x, j, lo) for x, (lo, _, _) in found.items()}
    assert (res.slice_steps, res.truncated_searches) == (steps, cut)
    if budget < 1000:
        assert cut > 0  # searches cut mid-way: what they keep depends on the order
    got = {(e.def_index, e.use_index, e.distance) for e in res.edges}
    assert got <= want
    assert {(e.def_index, e.use_index) for e in res.edges} | {(p.def_index, p.use_index) for p in res.pruned} \
        == {(x, j) for x, j, _ in want}
