"""CFG, dominators and natural loops on real nvcc output and on hand-written listings."""

from __future__ import annotations

import pytest

from kernelscope.analysis.frontend.cfg import EdgeKind, build_cfg
from kernelscope.analysis.frontend.sass import parse_nvdisasm
from _listing import text_listing
from frontend.test_sass import build

LOOPS = r"""
__global__ void one(float* a, int n) {
    float s = 0;
    #pragma unroll 1
    for (int j = 0; j < n; ++j) {
        s += a[j] * a[j];
    }
    a[threadIdx.x] = s;
}
__global__ void two(float* a, int n, int m) {
    float s = 0;
    #pragma unroll 1
    for (int j = 0; j < n; ++j) {
        #pragma unroll 1
        for (int k = 0; k < m; ++k) {
            s += a[j * m + k];
        }
    }
    a[threadIdx.x] = s;
}
"""


def _line(text: str, needle: str, start: int = 1) -> int:
    return next(i for i, s in enumerate(text.splitlines(), 1) if needle in s and i >= start)


@pytest.fixture(scope="module")
def loops_module(tmp_path_factory):
    return build(LOOPS, tmp_path_factory.mktemp("cfg"), "loops")[1]


def test_single_loop_matches_source_for(loops_module):
    cfg = build_cfg(loops_module.function("_Z3onePfi"))
    assert len(cfg.loops) == 1
    loop = cfg.loops[0]
    lines = {loc.line for loc in loop.source_lines}
    for_line, body_line = _line(LOOPS, "for (int j"), _line(LOOPS, "s += a[j] * a[j]")
    assert body_line in lines and for_line in lines
    assert lines <= {for_line, body_line}
    assert loop.depth == 1 and loop.parent is None and loop.latches and loop.exits
    header = cfg.blocks[loop.header]
    assert all(cfg.block_dominates(loop.header, b) for b in loop.body)
    assert loop.index_range[0] == header.start
    assert (loop.latches[0], loop.header) in {(e.src, e.dst) for e in cfg.back_edges}
    # The store after the loop is outside it.
    fn = loops_module.function("_Z3onePfi")
    st = next(x for x in fn.instructions if x.opcode == "STG")
    assert cfg.innermost_loop(st.index) is None


def test_nested_loops_have_depth_two(loops_module):
    cfg = build_cfg(loops_module.function("_Z3twoPfii"))
    assert sorted(lp.depth for lp in cfg.loops) == [1, 2]
    outer, inner = sorted(cfg.loops, key=lambda lp: lp.depth)
    assert inner.parent == outer.index and inner.body < outer.body
    start = _line(LOOPS, "void two")
    assert _line(LOOPS, "for (int k", start) in {loc.line for loc in inner.source_lines}
    assert _line(LOOPS, "s += a[j * m + k]", start) in {loc.line for loc in inner.source_lines}


def _listing(instrs: list[dict], name: str = "_Z1fv") -> str:
    return text_listing(instrs, name)


def _bra(target: int, pred: str | None = None) -> dict:
    d = {"opcode": "BRA", "operands": hex(target)}
    return d | ({"predicate": pred} if pred else {})


def test_diamond_dominators():
    # 0 ISETP; 1 @P0 BRA else(4); 2 then; 3 BRA join(5); 4 else; 5 join; 6 EXIT
    ins = [{"opcode": "ISETP.GE.AND", "operands": "P0,PT,R0,R1,PT"}, _bra(0x40, "@P0"),
           {"opcode": "FADD", "operands": "R2,R2,1"}, _bra(0x50),
           {"opcode": "FMUL", "operands": "R2,R2,2"}, {"opcode": "STG.E", "operands": "desc[UR4][R4.64],R2"},
           {"opcode": "EXIT"}]
    fn = parse_nvdisasm(_listing(ins)).functions[0]
    cfg = build_cfg(fn)
    assert [(b.start, b.end) for b in cfg.blocks] == [(0, 2), (2, 4), (4, 5), (5, 7)]
    assert cfg.idom == (None, 0, 0, 0)
    assert cfg.dominates(0, 6) and cfg.dominates(1, 5)
    assert not cfg.dominates(2, 5) and not cfg.dominates(4, 5) and not cfg.dominates(6, 0)
    assert cfg.dominates(5, 6) and not cfg.dominates(6, 5)
    assert {(e.src, e.dst, e.kind) for e in cfg.edges} == {
        (0, 2, EdgeKind.TAKEN), (0, 1, EdgeKind.FALLTHROUGH), (1, 3, EdgeKind.TAKEN),
        (2, 3, EdgeKind.FALLTHROUGH)}
    assert cfg.loops == () and set(cfg.predecessors(3)) == {1, 2}


def test_no_branches_call_unreachable_and_indirect():
    straight = parse_nvdisasm(_listing([{"opcode": "FADD", "operands": "R0,R0,R1"}, {"opcode": "EXIT"}]))
    cfg = build_cfg(straight.functions[0])
    assert len(cfg.blocks) == 1 and cfg.loops == () and cfg.edges == ()

    ins = [{"opcode": "CALL.REL.NOINC", "operands": "0x40"},
           {"opcode": "EXIT"},
           _bra(0x20),  # trailing self-loop ptxas emits after EXIT: unreachable
           {"opcode": "NOP"},
           {"opcode": "FMUL", "operands": "R4,R4,R4"},  # the callee at 0x40
           {"opcode": "RET.REL.NODEC", "operands": "R20,_Z1fv"}]
    cfg = build_cfg(parse_nvdisasm(_listing(ins)).functions[0])
    b_call, b_callee = cfg.block_of[0], cfg.block_of[4]
    assert b_callee in cfg.roots and b_callee not in cfg.successors(b_call)
    assert not cfg.blocks[cfg.block_of[2]].reachable and cfg.loops == ()
    assert not cfg.dominates(0, 4)

    brx = [{"opcode": "BRX", "operands": "R2 -0x20"}, {"opcode": "EXIT"}, {"opcode": "FADD", "operands": "R0,R0,1"},
           {"opcode": "EXIT"}]
    cfg = build_cfg(parse_nvdisasm(_listing(brx)).functions[0])
    assert all(b.reachable for b in cfg.blocks)
    assert any(e.kind is EdgeKind.INDIRECT for e in cfg.edges) and cfg.notes


def test_bssy_reconvergence_is_not_an_edge():
    ins = [{"opcode": "BSSY", "operands": "B0,0x30"}, {"opcode": "ISETP.GE.AND", "operands": "P0,PT,R0,R1,PT"},
           {"opcode": "FADD", "operands": "R0,R0,1"}, {"opcode": "BSYNC", "operands": "B0"}, {"opcode": "EXIT"}]
    cfg = build_cfg(parse_nvdisasm(_listing(ins)).functions[0])
    assert len(cfg.blocks) == 1 and cfg.reconvergence == ((0, 3),)
