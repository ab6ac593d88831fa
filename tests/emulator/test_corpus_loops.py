"""Loops found on every kernel of the test corpus (issue 20 item 1): the CFG's loops against
nvdisasm's own branch targets and against the source's loops (tree-sitter-cuda, conditional
blocks resolved as the device pass reads them).

The corpus is every kernel source the tests compile (`_build.CORPUS`: examples/ and each `.cu`
under tests/, the real programs of tests/data/real/ built with their build_flags.json), by the
real nvcc for sm_90.
"""

from __future__ import annotations

from pathlib import Path


import pytest

from kernelscope.analysis.frontend.program import source_line_of
from kernelscope.analysis.frontend.source import parse_source
from kernelscope.analysis.frontend.treesitter import parser

from _build import CORPUS, ROOT, build_example, real_flags


@pytest.fixture(scope="module", params=CORPUS, ids=lambda p: p.relative_to(ROOT).as_posix())
def program(request, toolchain):
    return request.param, build_example(request.param, toolchain, flags=real_flags(request.param))


def test_every_branch_back_to_a_dominator_closes_a_loop_and_every_loop_has_one(program):
    src, prog = program
    for fn in prog.functions:
        ins, cfg = fn.sass.instructions, fn.cfg
        index = {x.pc: n for n, x in enumerate(ins)}
        # nvdisasm's label on a backward BRA: a back edge when its target dominates it (a jump back
        # into a shared tail, as a divergent-shuffle slow path does, is not one)
        back = {index[x.branch_target] for n, x in enumerate(ins)
                if x.opcode == "BRA" and x.branch_target is not None and x.branch_target < x.pc
                and x.branch_target in index and cfg.dominates(index[x.branch_target], n)}
        headers = {cfg.blocks[loop.header].start for loop in cfg.loops}
        assert back == headers, (src.name, fn.name)


def test_every_source_loop_is_a_sass_loop_unless_unrolled_whole(program):
    src, prog = program
    path = str(src)
    lines = src.read_text().splitlines()
    header_constants = _header_constants(src, prog)
    for fn in prog.functions:
        ins = fn.sass.instructions
        code = {loc[1] for x in ins if (loc := source_line_of(x, path)) is not None and loc[0] == path}
        source_fn = prog.source.function_at(fn.source_line) if fn.source_line is not None else None
        if source_fn is None or not any(source_fn.span.contains_line(line) for line in code):
            continue  # defined in a header, or all inlined elsewhere
        mapped = {loop.source_line for loop in fn.loops}
        unrolled: set[int] = set()  # source loops the compiler unrolled whole
        for loop in prog.source.loops_in(source_fn.name):
            if loop.header_line in mapped or not any(loop.span.contains_line(line) for line in code):
                continue
            if loop.parent in unrolled or header_constants & _names(lines[loop.header_line - 1]):
                # a bound from an included header's #define, which the source model does not fold
                # (docs/emulator.md, Known limits), or a loop inside one unrolled whole
                unrolled.add(loop.index)
                continue
            # the compiler unrolls whole only a loop whose trip count it knows: a constant bound,
            # or a bare `#pragma unroll` over a template parameter
            assert loop.trip_count is not None or (loop.unroll is not None and loop.unroll.is_bare), \
                (src.name, fn.name, loop.header_line)
            unrolled.add(loop.index)


def _header_constants(src: Path, prog) -> set[str]:
    """Integer constants of the local headers `src` includes: the source model folds a file's own."""
    out: set[str] = set()
    for inc in prog.source.includes:
        header = src.parent / inc.path
        if not inc.is_system and header.is_file():
            out |= {c.name for c in parse_source(header.read_text()).constants}
    return out


def _names(line: str) -> set[str]:
    """The identifiers of one line of source (tree-sitter-cuda)."""
    out, stack = set(), [parser().parse(line.encode()).root_node]
    while stack:
        node = stack.pop()
        if node.type == "identifier":
            out.add(node.text.decode())
        stack.extend(node.children)
    return out


def test_a_sass_loop_left_unmatched_lies_outside_every_source_loop(program):
    # a loop the compiler made (a tail recursion turned into a loop) has no source loop; one
    # whose lines lie in a source loop but was not matched to it would get no trip count
    src, prog = program
    path = str(src)
    for fn in prog.functions:
        for info in fn.loops:
            if info.source_line is not None:
                continue
            loop = fn.cfg.loops[info.index]
            lines = {loc[1] for b in loop.body for x in fn.sass.instructions[fn.cfg.blocks[b].start:fn.cfg.blocks[b].end]
                     if (loc := source_line_of(x, path)) is not None and loc[0] == path}
            assert not any(sl.span.contains_line(line) for sl in prog.source.loops for line in lines), \
                (src.name, fn.name, sorted(lines))
