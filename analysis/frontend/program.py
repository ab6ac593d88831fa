"""The program model: SASS, CFG, source structure and resources of one compiled file, tied together.

This is the one place that maps SASS PCs to source lines (`Program.line_table`) and SASS
loops to source loops. Everything after compilation reads a `Program`.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .cfg import CFG, Loop, build_cfg
from .instructions import Instruction, SassFunction, SassModule
from .kernel_names import base_name
from .resources import Resources
from .source import Loop as SourceLoop
from .source import SourceModel


LoopRole = Literal["main", "remainder", "only"]


class LoopInfo(BaseModel):
    """A SASS natural loop with what is known about how often it runs.

    When the compiler unrolls a loop whose trip count is not a constant, one source loop becomes
    several sibling SASS loops: an unrolled main loop, then remainder loops that finish what it
    left over (NVVM unrolls by 4 with a remainder loop, and ptxas may unroll that main loop again
    with its own remainder). `role` tells them apart:

    - "only": the sole SASS loop of its source loop (or one of several identical copies, e.g.
      from an unrolled outer loop), so it runs the source loop's trips / `unroll_factor`;
    - "main": the sibling with the largest `unroll_factor`; it runs nearly all the trips;
    - "remainder": a sibling with a smaller factor. It sees fewer source iterations than the
      next larger factor among its siblings, so it runs at most `max_trip_count` SASS trips,
      however large the bound is.
    """

    model_config = ConfigDict(frozen=True)

    index: int  # position in CFG.loops
    header_line: int | None  # source line of the SASS loop header
    source_line: int | None  # header line of the matching source loop, if any
    trip_count: int | None  # constant SASS trip count from the source, when known (at least 1)
    unrolled_by_pragma: int | None = None  # N of an attached `#pragma unroll N`; 0 for bare `#pragma unroll`
    unroll_factor: int = 1  # source iterations per SASS iteration (`_unroll_factor`)
    role: LoopRole = "only"
    max_trip_count: int | None = None  # for a remainder: (next larger sibling factor - 1) // unroll_factor


class FunctionProgram(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    sass: SassFunction
    cfg: CFG
    resources: Resources | None
    loops: tuple[LoopInfo, ...] = ()
    source_line: int | None = None  # declaration line in the source, when found
    source_end_line: int | None = None

    @property
    def name(self) -> str:
        return self.sass.name

    @property
    def mangled(self) -> str:
        return self.sass.mangled_name


class Program(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    source_path: str
    arch: str
    module: SassModule
    source: SourceModel
    functions: tuple[FunctionProgram, ...]
    #: (function mangled name, pc) -> (file, line): the one PC -> line mapping
    line_table: dict[tuple[str, int], tuple[str, int]] = Field(default_factory=dict)
    _lookup: tuple | None = PrivateAttr(default=None)

    @property
    def kernels(self) -> tuple[FunctionProgram, ...]:
        return self._index()[1]

    def function(self, mangled: str) -> FunctionProgram | None:
        return self._index()[2].get(mangled)

    def _index(self) -> tuple[tuple[FunctionProgram, ...], tuple[FunctionProgram, ...], dict[str, FunctionProgram]]:
        # Looked up once per kernel and call: a scan each time made a file of n kernels cost n².
        # Kept with the tuple it indexes, so that a model_copy with other functions indexes anew.
        index = self._lookup
        if index is None or index[0] is not self.functions:
            by_name = {f.mangled: f for f in reversed(self.functions)}  # reversed: the first of a name wins
            index = (self.functions, tuple(f for f in self.functions if f.sass.is_kernel), by_name)
            self._lookup = index
        return index


def source_line_of(instr: Instruction, source_path: str) -> tuple[str, int] | None:
    """The line an instruction is charged to: the analysed file's own line, even when inlined.

    Code inlined from a header (or from a device function) is charged to the innermost call
    site inside the analysed file, because that is the line a user can change.
    """
    if instr.location is None:
        return None
    for loc in (instr.location, *instr.inline_chain):
        if same_path(loc.file, source_path):
            return (source_path, loc.line)
    return (instr.location.file, instr.location.line)


def outer_file(instr: Instruction) -> str | None:
    """The file of an instruction's outermost call site: the file of the function it was inlined
    into (its own, when not inlined), where a kernel's lines are counted (`advisor` `kernel_line`)."""
    if instr.location is None:
        return None
    return (instr.inline_chain[-1] if instr.inline_chain else instr.location).file


def same_path(a: str, b: str) -> bool:
    return a == b or os.path.normpath(a) == os.path.normpath(b)


def line_table(module: SassModule, source_path: str) -> dict[tuple[str, int], tuple[str, int]]:
    table: dict[tuple[str, int], tuple[str, int]] = {}
    for fn in module.functions:
        for ins in fn.instructions:
            loc = source_line_of(ins, source_path)
            if loc is not None:
                table[(fn.mangled_name, ins.pc)] = loc
    return table


def _unroll_factor(fn: SassFunction, cfg: CFG, loop: Loop) -> int:
    """How many source iterations one SASS iteration of `loop` executes.

    ptxas unrolls by replicating the body: each memory access and each barrier of the source
    body then appears k times on the same line and call site. The gcd of those counts is k (1
    for a loop left rolled). Inner loops' blocks are excluded, since they replicate
    independently. A line with several accesses of one opcode (`A[i] * B[i]`), or inside a
    constant loop ptxas unrolled fully, multiplies the count; `_loops` divides that out where a
    rolled remainder loop shows the per-iteration count. Keying by the inline call site and
    counting barriers keep such factors out where the source shows them: a helper inlined at
    four call sites is four keys, not one count of four, and a `__syncthreads()` the body runs
    once per iteration is never merged, so it bounds k by what ptxas really replicated (a
    multistage GEMM's K loop stepping 4 stages by hand, each stage's loads in a fully unrolled
    `for (i < 4)`, is rolled, not unrolled by 4).
    """
    inner = set()
    for other in cfg.loops:
        if other.parent == loop.index:
            inner |= other.body
    counts: Counter[tuple] = Counter()
    for b in loop.body - inner:
        block = cfg.blocks[b]
        for ins in fn.instructions[block.start:block.end]:
            counted = ins.memory_space in ("global", "shared", "local") or ins.opcode == "BAR"
            if counted and ins.location is not None:
                counts[(ins.full_opcode, ins.location.line, ins.inline_chain)] += 1
    if not counts:
        return 1
    return max(1, math.gcd(*counts.values()))


def _match_source_loop(loop: Loop, fn: SassFunction, cfg: CFG, source_path: str,
                       candidates: list[SourceLoop]) -> SourceLoop | None:
    lines = set()
    for b in loop.body:
        block = cfg.blocks[b]
        for ins in fn.instructions[block.start:block.end]:
            loc = source_line_of(ins, source_path)
            if loc is not None and loc[0] == source_path:
                lines.add(loc[1])
    # ptxas charges a loop's back-edge branch to the line of its exit test: a source loop whose
    # test is written there is the one this SASS loop iterates. Lines alone can name an enclosing
    # loop: under register pressure ptxas recomputes an outer loop's per-iteration values (a
    # tile's row base, on the outer loop's line) inside the inner loop, and the outer loop's span
    # then covers more of the body than the loop itself.
    back_edge = set()
    for b in loop.latches:
        block = cfg.blocks[b]
        loc = source_line_of(fn.instructions[block.end - 1], source_path)
        if loc is not None and loc[0] == source_path:
            back_edge.add(loc[1])
    best, best_key = None, (False, 0, 0)
    for sl in candidates:
        covered = sum(1 for ln in lines if sl.span.contains_line(ln))
        tested_here = bool(back_edge & {sl.header_line, sl.condition_line})
        # The loop tested at the back edge first; then most lines covered; among equals, the
        # innermost loop (it is the tighter match).
        key = (tested_here, covered, sl.depth)
        if covered and key > best_key:
            best, best_key = sl, key
    return best


def _loops(fn: SassFunction, cfg: CFG, source: SourceModel, source_path: str) -> tuple[LoopInfo, ...]:
    matches = [_match_source_loop(loop, fn, cfg, source_path, list(source.loops)) for loop in cfg.loops]
    factors = [_unroll_factor(fn, cfg, loop) for loop in cfg.loops]
    roles: list[LoopRole] = ["only"] * len(cfg.loops)
    max_trips: list[int | None] = [None] * len(cfg.loops)
    siblings: dict[tuple[int, int | None], list[int]] = {}  # (source loop, SASS parent) -> SASS loops
    for loop, matched in zip(cfg.loops, matches):
        if matched is not None:
            siblings.setdefault((matched.index, loop.parent), []).append(loop.index)
    for members in siblings.values():
        if len({factors[i] for i in members}) < 2:
            continue  # one loop, or identical copies (an unrolled outer loop): each runs the whole source loop
        # The sibling with the fewest replicated accesses is the rolled remainder (LLVM's runtime
        # unroll epilogue and ptxas's leftover loop run one source iteration per trip), so its
        # count per line is the source body's own, e.g. 2 where `A[..] * B[..]` share a line.
        per_iteration = min(factors[i] for i in members)
        for i in members:
            factors[i] //= per_iteration
        distinct = sorted({factors[i] for i in members}, reverse=True)
        for i in members:
            if factors[i] == distinct[0]:
                roles[i] = "main"
            else:
                # The loops before it stop once fewer source iterations than the next larger
                # factor remain, so that is all it can see.
                roles[i] = "remainder"
                max_trips[i] = max(1, (distinct[distinct.index(factors[i]) - 1] - 1) // factors[i])
    infos = []
    for loop, matched in zip(cfg.loops, matches):
        header = fn.instructions[cfg.blocks[loop.header].start]
        header_loc = source_line_of(header, source_path)
        trip = None
        pragma = None
        if matched is not None:
            if matched.unroll is not None:
                pragma = matched.unroll.factor if matched.unroll.factor is not None else 0
            if matched.trip_count is not None:
                trip = max(1, math.ceil(matched.trip_count / factors[loop.index]))
                if roles[loop.index] != "only":
                    trip = _sibling_trip(matched.trip_count, factors[loop.index],
                                         sorted({factors[i] for i in siblings[(matched.index, loop.parent)]},
                                                reverse=True))
        infos.append(LoopInfo(index=loop.index, header_line=header_loc[1] if header_loc else None,
                              source_line=matched.header_line if matched else None,
                              trip_count=trip, unrolled_by_pragma=pragma, unroll_factor=factors[loop.index],
                              role=roles[loop.index], max_trip_count=max_trips[loop.index]))
    return tuple(infos)


def _sibling_trip(source_trips: int, factor: int, factors: list[int]) -> int:
    """SASS trips of the sibling with `factor` when the source loop runs `source_trips` times.

    Each sibling, largest factor first, takes whole trips of what the ones before it left.
    """
    left = source_trips
    for f in factors:
        if f == factor:
            return max(1, left // f)
        left -= (left // f) * f
    return 1


def build_program(module: SassModule, source: SourceModel, source_path: str,
                  resources: Mapping[str, Resources]) -> Program:
    """Tie SASS, CFGs, loops and source together. `resources` is keyed by mangled name."""
    functions = []
    for fn in module.functions:
        cfg = build_cfg(fn)
        decl = source.function(base_name(fn.name))
        functions.append(FunctionProgram(
            sass=fn, cfg=cfg, resources=resources.get(fn.mangled_name),
            loops=_loops(fn, cfg, source, source_path),
            source_line=decl.span.first_line if decl else None,
            source_end_line=decl.span.last_line if decl else None,
        ))
    return Program(source_path=source_path, arch=module.arch, module=module, source=source,
                   functions=tuple(functions), line_table=line_table(module, source_path))
