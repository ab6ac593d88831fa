"""Call-site blame (issue 15): a non-inlined callee's samples are charged to the calls that reach it.

GPA attributes a sample to the instruction that shows it, so the cost of a `__noinline__`
function sits on the function's own lines (or a CUDA header's, for `pow` and friends) and the
caller's loop around the call looks cold. HPCToolkit's calling-context view adds each callee's
cost to its call sites (inclusive cost); this module does the same for the kernel's own calls:
every function reached from a call, its callees included, is charged to that call, split
between a function's call sites by how often each executed (`PCSample.executed`; equally where a
profile has no counts). A recursion is cut where it reaches itself.

The samples stay where they are (line shares add up to 100 %); a call site's `samples` is what
the same profile spends *below* it, shown beside the line and weighed by the advisor.
Modeled and measured profiles go through the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..frontend.instructions import Instruction, SassFunction
from ..frontend.isa import calls_subroutine
from ..frontend.program import FunctionProgram, Program
from ..profile import KernelProfile, StallReason

#: a piece of code with samples of its own: (function mangled name, first pc)
Unit = tuple[str, int]


@dataclass(frozen=True)
class CallSite:
    """One call in the kernel's own code, with the samples of everything it calls."""

    index: int  # of the CALL in the kernel's instructions
    pc: int
    callee: str  # demangled name of the function called
    samples: dict[StallReason, float]
    #: opcodes of every function the call reaches (e.g. to tell a double-precision `pow` apart)
    opcodes: frozenset[str] = frozenset()

    @property
    def total(self) -> float:
        return sum(self.samples.values())


def _units(fn: SassFunction) -> list[tuple[Unit, str, tuple[Instruction, ...]]]:
    """A function's own body and each subroutine ptxas placed in its section, as separate units."""
    starts = sorted((s.pc, s.name) for s in fn.subroutines)
    bounds = [(0, fn.name)] + starts
    out = []
    for k, (pc, name) in enumerate(bounds):
        end = bounds[k + 1][0] if k + 1 < len(bounds) else None
        code = tuple(i for i in fn.instructions if i.pc >= pc and (end is None or i.pc < end))
        out.append(((fn.mangled_name, pc), name, code))
    return out


@dataclass(frozen=True)
class CallGraph:
    """A program's code units and the calls between them: the same for every kernel of the program,
    so built once per program (a file of n kernels would otherwise rebuild it n times, ~n² work)."""

    units: dict[Unit, tuple[str, tuple[Instruction, ...]]]  # unit -> (demangled name, its code)
    calls: dict[Unit, list[tuple[Instruction, Unit]]]  # each unit's calls and the unit each reaches
    callers: dict[Unit, list[tuple[str, int]]]  # each called unit's call sites (function, pc)
    unit_of: dict[tuple[str, int], Unit]  # (function, pc) -> the unit holding that instruction


def call_graph(program: Program) -> CallGraph:
    """The program's call graph, from a small cache of the last few programs (by identity: a
    program is immutable, and hashing one would walk all its instructions)."""
    hit = _graphs.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    graph = _build_call_graph(program)
    if len(_graphs) >= 4:
        _graphs.pop(next(iter(_graphs)))
    _graphs[id(program)] = (program, graph)
    return graph


_graphs: dict[int, tuple[Program, CallGraph]] = {}


def _build_call_graph(program: Program) -> CallGraph:
    from ..emulator.decode import callee_name  # the one reader of a CALL's target name

    units: dict[Unit, tuple[str, tuple[Instruction, ...]]] = {}
    for f in program.functions:
        for key, name, code in _units(f.sass):
            units[key] = (name, code)
    names = [f.mangled for f in program.functions]

    def target(fn: str, ins: Instruction) -> Unit | None:
        if ins.branch_target is not None and (fn, ins.branch_target) in units:
            return (fn, ins.branch_target)  # a subroutine in the caller's section
        name = callee_name(ins, names)
        return (name, 0) if name is not None and (name, 0) in units else None

    calls: dict[Unit, list[tuple[Instruction, Unit]]] = {}
    callers: dict[Unit, list[tuple[str, int]]] = {}
    for key, (_, code) in units.items():
        calls[key] = [(i, t) for i in code if calls_subroutine(i)
                      and (t := target(key[0], i)) is not None and t != key]
        for ins, t in calls[key]:
            callers.setdefault(t, []).append((key[0], ins.pc))
    unit_of = {(key[0], i.pc): key for key, (_, code) in units.items() for i in code}
    return CallGraph(units=units, calls=calls, callers=callers, unit_of=unit_of)


def call_sites(program: Program, kernel: FunctionProgram, profile: KernelProfile) -> tuple[CallSite, ...]:
    """The kernel's calls, each with the samples of the functions it reaches (inclusive)."""
    graph = call_graph(program)
    units, calls, callers, unit_of = graph.units, graph.calls, graph.callers, graph.unit_of
    if not calls.get((kernel.mangled, 0)):
        return ()  # no call in the kernel's own code: nothing below it to charge

    own: dict[Unit, dict[StallReason, float]] = {}
    executed: dict[tuple[str, int], float] = {}
    for p in profile.pcs:
        if p.executed is not None:
            executed[(p.function, p.pc)] = p.executed
        key = unit_of.get((p.function, p.pc))
        if key is None:
            continue
        acc = own.setdefault(key, {})
        for r, n in p.samples.items():
            acc[r] = acc.get(r, 0.0) + n

    # each call's share of its target's cost: by how often the call executed
    def share(fn: str, pc: int, t: Unit) -> float:
        sites = callers[t]
        weights = [executed.get(s, 0.0) for s in sites]
        total = sum(weights)
        return executed.get((fn, pc), 0.0) / total if total > 0 else 1.0 / len(sites)

    memo: dict[Unit, dict[StallReason, float]] = {}

    def inclusive(u: Unit, path: frozenset[Unit]) -> dict[StallReason, float]:
        if u in memo:
            return memo[u]
        acc = dict(own.get(u, {}))
        for ins, t in calls.get(u, ()):
            if t in path:
                continue  # a recursion: its deeper levels are already this unit's samples
            f = share(u[0], ins.pc, t)
            for r, n in inclusive(t, path | {t}).items():
                acc[r] = acc.get(r, 0.0) + f * n
        memo[u] = acc
        return acc

    def reached(u: Unit, seen: frozenset[Unit]) -> frozenset[Unit]:
        out = {u}
        for _, t in calls.get(u, ()):
            if t not in seen:
                out |= reached(t, seen | {t})
        return frozenset(out)

    body: Unit = (kernel.mangled, 0)
    out = []
    for ins, t in calls.get(body, ()):
        f = share(body[0], ins.pc, t)
        samples = {r: f * n for r, n in inclusive(t, frozenset({body, t})).items() if n}
        ops = frozenset(i.opcode for u in reached(t, frozenset({body, t})) for i in units[u][1])
        out.append(CallSite(index=ins.index, pc=ins.pc, callee=units[t][0], samples=samples, opcodes=ops))
    return tuple(out)
