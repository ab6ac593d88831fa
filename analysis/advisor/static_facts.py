"""Facts read from SASS and source alone, per line and per kernel: no profile needed.

Instruction mix, FLOPs and bytes per execution, and the patterns CUDA developers look for
(FP64 conversions and their source cause, integer division, non-inlined calls, rolled loops,
spills and local memory; with the launch's block shape, uncoalesced global accesses and
shared-memory bank conflicts). The advisor turns these into advice; without a profile they
still rank lines by a static issue cost.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from ..emulator.decode import MemoryShape
from ..emulator.memory import TX, AddressAnalysis, data_wavefronts, lane_addresses, memory_shapes, param_offsets
from ..frontend import isa
from ..frontend.program import FunctionProgram, Program, base_name, source_line_of
from ..machine.arch import ArchSpec
from ..machine.arch import Resource
from ..results import LineReport, StaticFact

#: Math-library calls that are double precision when given floats without an `f` suffix.
DOUBLE_MATH = frozenset({
    "pow", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "rsqrt",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "erf", "erfc",
    "fabs", "floor", "ceil", "round", "fmod", "hypot", "fmax", "fmin", "lgamma", "tgamma",
})

class KernelFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: static instruction counts by class; the executed FLOPs and bytes per thread are the
    #: emulated run's (`stages.per_thread`), not a sum over every path here
    instruction_mix: dict[str, int]
    facts: tuple[StaticFact, ...]
    lines: tuple[LineReport, ...]
    #: pc -> the shape the emulator's walked warp gave each access it executed (`executed_shapes`):
    #: the sectors per request the memory optimizers read
    memory: dict[int, MemoryShape] = {}


def executions(fn: FunctionProgram, index: int, default_trip: int) -> float:
    """How often instruction `index` runs per thread: the product of its enclosing loops' trips."""
    loop = fn.cfg.innermost_loop(index)
    loop_index = loop.index if loop is not None else None
    count = 1.0
    while loop_index is not None:
        info = fn.loops[loop_index]
        count *= info.trip_count if info.trip_count is not None else default_trip
        loop_index = fn.cfg.loops[loop_index].parent
    return count


def _issue_cycles(instr, arch: ArchSpec) -> float:
    gap = arch.pipe_gap(Resource(isa.pipe(instr).value))
    return gap if gap else 1.0


def kernel_facts(program: Program, fn: FunctionProgram, arch: ArchSpec, default_trip: int = 64,
                 block: tuple[int, int, int] | None = None, values: Mapping[str, int] | None = None,
                 executed: Mapping[int, MemoryShape] | None = None) -> KernelFacts:
    """`block` is the launch's block shape (it decides which threads share a warp); without it
    no memory-access facts are given. `values` are known kernel-argument values (by name).
    `executed`: pc -> the shape the emulator's walked warp gave an access (`executed_shapes`),
    which wins over the address analysis's."""
    path = program.source_path
    mix: Counter[str] = Counter()
    per_line: dict[int, dict] = {}
    for ins in fn.sass.instructions:
        klass = isa.instruction_class(ins)
        mix[klass.value] += 1
        n = executions(fn, ins.index, default_trip)
        f = isa.flops(ins)
        space = ins.memory_space
        b = isa.access_bytes(ins) if space else 0
        loc = source_line_of(ins, path)
        if loc is None or loc[0] != path:
            continue
        entry = per_line.setdefault(loc[1], {"mix": Counter(), "flops": 0.0, "bytes": defaultdict(float),
                                             "sass": [], "cost": 0.0})
        entry["mix"][klass.value] += 1
        entry["flops"] += f if klass != isa.InstrClass.INT else 0.0
        if space and b:
            entry["bytes"][space] += b
        entry["sass"].append(f"/*{ins.pc:04x}*/ {ins.text}")
        entry["cost"] += _issue_cycles(ins, arch) * n
    lines = tuple(
        LineReport(line=ln, share=0.0, instruction_mix=dict(e["mix"]), flops_per_execution=e["flops"],
                   bytes_per_execution=dict(e["bytes"]), sass=tuple(e["sass"]), static_cost=e["cost"])
        for ln, e in sorted(per_line.items()))
    return KernelFacts(instruction_mix=dict(mix),
                       facts=_patterns(program, fn, arch, block, values or {}, executed or {}), lines=lines,
                       memory=dict(executed or {}))


def executed_shapes(prepared) -> dict[int, MemoryShape]:
    """pc -> the shape of each of the kernel's own memory instructions whose every execution by the
    emulator's walked warp had known lane addresses (`emulator.model.Prepared.lanes`): sectors and
    wavefronts per request from the addresses the lanes computed, where the affine analysis stops at
    a 64-bit index or a product of arguments (leimao's `lda`, a transpose's `gridDim.x * TILE_DIM`)."""
    lanes, k = prepared.lanes, prepared.decoded
    if lanes is None:
        return {}
    # the decoded shape: the lanes' shape with the cache model's hit rates (emulator/caches.py)
    return {k.pc[s]: k.shape[s] for s in lanes.followed if k.fn[s] == prepared.kernel.mangled}


def _patterns(program: Program, fn: FunctionProgram, arch: ArchSpec, block: tuple[int, int, int] | None,
              values: Mapping[str, int], executed: Mapping[int, MemoryShape]) -> tuple[StaticFact, ...]:
    path = program.source_path
    src = program.source
    facts: list[StaticFact] = []

    def line_of(ins) -> int | None:
        loc = source_line_of(ins, path)
        return loc[1] if loc and loc[0] == path else None

    # FP64 work in a line of float code: name the literal or call that causes it.
    fp64_lines: Counter[tuple[int, str]] = Counter()
    for ins in fn.sass.instructions:
        ln = line_of(ins)
        if ln is None:
            continue
        if isa.is_fp64_conversion(ins):
            fp64_lines[(ln, "fp64_conversion")] += 1
        elif isa.instruction_class(ins) == isa.InstrClass.FP64:
            fp64_lines[(ln, "fp64_math")] += 1
    for (ln, kind), count in sorted(fp64_lines.items()):
        literal = next((lit for lit in src.literals if lit.line == ln and lit.is_double), None)
        call = next((c for c in src.calls if c.span.first_line == ln and c.callee.split("::")[-1] in DOUBLE_MATH), None)
        if literal is not None:
            facts.append(StaticFact(kind=kind, line=ln, column=literal.col_start, end_column=literal.col_end,
                                    cause=literal.text, count=count,
                                    detail=f"{count} FP64 instruction(s) caused by the double literal {literal.text}"))
        elif call is not None:
            facts.append(StaticFact(kind=kind, line=ln, column=call.callee_span.start.col,
                                    end_column=call.callee_span.end.col, cause=call.callee, count=count,
                                    detail=f"{count} FP64 instruction(s) from the double-precision call {call.callee}()"))
        else:
            facts.append(StaticFact(kind=kind, line=ln, count=count, detail=f"{count} FP64 instruction(s)"))

    for start, end in isa.find_int_division_sequences(fn.sass):
        ln = line_of(fn.sass.instructions[start])
        if ln is not None:
            facts.append(StaticFact(kind="int_division", line=ln, count=end - start + 1,
                                    detail=f"integer division/modulo by a non-constant: {end - start + 1} instructions"))

    subroutines = {s.pc: s.name for s in fn.sass.subroutines}
    calls: Counter[tuple[int, str]] = Counter()
    for ins in fn.sass.instructions:
        # a math-library slow path is no call of the user's and does not run (emulator.decode);
        # a `CALL.REL.NOINC` to a local label is a loop's exit jump, no call at all
        if isa.calls_subroutine(ins) and not isa.math_slow_path(ins) and (ln := line_of(ins)) is not None:
            calls[(ln, subroutines.get(ins.branch_target, "a device function"))] += 1
    for (ln, callee), count in sorted(calls.items()):
        facts.append(StaticFact(kind="noinline_call", line=ln, cause=callee, count=count,
                                detail=f"non-inlined call to {callee}" + (f" ({count} call sites after unrolling)" if count > 1 else "")))

    # ptxas may split one source loop into several SASS loops (unrolled body + remainder): one fact each.
    rolled = sorted({info.source_line for info in fn.loops if info.source_line is not None and info.unrolled_by_pragma is None})
    for ln in rolled:
        source_loop = src.loop_at(ln)
        trip = source_loop.trip_count if source_loop else None
        facts.append(StaticFact(kind="rolled_loop", line=ln, trip_count=trip,
                                detail="loop left rolled" + (f" (trip count {trip})" if trip else "")))

    res = fn.resources
    if res is not None and (res.spill_stores or res.spill_loads) and fn.source_line:
        facts.append(StaticFact(kind="spill", line=fn.source_line,
                                detail=f"{res.spill_stores} bytes spill stores, {res.spill_loads} bytes spill loads"))
    local_lines = Counter(line_of(i) for i in fn.sass.instructions if i.memory_space == "local")
    for ln, count in sorted((k, v) for k, v in local_lines.items() if k is not None):
        facts.append(StaticFact(kind="local_memory", line=ln, count=count,
                                detail=f"{count} local-memory access(es) (spills or a dynamically indexed private array)"))
    if block is not None:
        facts += _memory_access_facts(program, fn, arch, block, values, executed, line_of)
    return tuple(facts)


def _memory_access_facts(program: Program, fn: FunctionProgram, arch: ArchSpec, block: tuple[int, int, int],
                         values: Mapping[str, int], executed: Mapping[int, MemoryShape], line_of) -> list[StaticFact]:
    """Uncoalesced global accesses and shared bank conflicts: from the lanes' executed addresses
    where the emulator walked the access (`executed`), else from the address analysis, which
    follows each address back to an affine function of threadIdx/blockIdx and lays the 32 lanes of
    a warp over `block`; an access neither can follow is not reported (the emulator assumes it
    coalesced).
    """
    sfn = program.source.kernel(base_name(fn.name))
    params = param_offsets(arch.constant_bank.params, [(p.name, p.is_pointer, p.type_text) for p in sfn.params],
                           dict(values)) if sfn is not None else {}
    instrs = fn.sass.instructions
    # the address analysis only for what the walked warp left out (its shapes win) and only for
    # the accesses reported (their stride): a file of many small kernels walks every access
    shapes: dict | None = None
    addresses: AddressAnalysis | None = None
    worst: dict[tuple[int, str], tuple[float, int, str]] = {}  # (line, kind) -> (cost, count, detail)
    for x in instrs:
        if not x.memory_space:
            continue  # memory_shapes gives a shape to memory instructions only
        walked = x.pc in executed
        shape = executed.get(x.pc)
        if shape is None:
            if shapes is None:
                # The grid only sets L2 reuse, which is not a fact about the code.
                shapes = memory_shapes(fn.mangled, instrs, block, (1, 1, 1), 0.0, arch.warp_size, params)
            shape = shapes.get((fn.mangled, x.pc))
        ln = line_of(x)
        if shape is None or ln is None:
            continue
        space = x.memory_space
        uncoalesced = space in ("global", "generic") and shape.pattern in ("strided", "uncoalesced")
        if not uncoalesced and not (space == "shared" and shape.pattern == "bank_conflict"):
            continue
        width = max(1, isa.access_bytes(x) or 4)
        if addresses is None:
            addresses = AddressAnalysis(instrs, params)
        addr, _ = addresses.address(x)
        offsets = lane_addresses(addr, block, arch.warp_size) if addr is not None else None
        tx = addr.coeffs[TX] if addr is not None else None
        stride = ("the lanes' executed addresses" if walked else f"consecutive threads are {tx} B apart" if tx else
                  f"lanes at byte offsets {', '.join(map(str, offsets[:4]))}, …" if offsets else "address not affine")
        what = {isa.Access.LOAD: "load", isa.Access.STORE: "store"}.get(isa.access_direction(x), "atomic")
        if uncoalesced:
            # A coalesced warp request of `width`-byte elements touches 32·width/32 sectors.
            sectors, ideal = round(shape.bytes_l1 / 32), max(1, arch.warp_size * width // 32)
            kind, cost = "uncoalesced_access", sectors / ideal
            detail = (f"uncoalesced global {what}: each warp request touches {sectors} 32-byte sectors where a "
                      f"coalesced one touches {ideal} ({stride}, {width} B per thread)")
        elif space == "shared" and shape.pattern == "bank_conflict":
            replays, ideal = int(shape.wavefronts), data_wavefronts(width, arch.warp_size)
            kind, cost = "bank_conflict", replays / ideal
            detail = (f"{round(cost)}-way shared-memory bank conflict on a {what}: each warp access is served in "
                      f"{replays} wavefronts instead of {ideal} ({stride}, {width} B per thread)")
        else:
            continue
        prev = worst.get((ln, kind))
        count = prev[1] + 1 if prev else 1
        worst[(ln, kind)] = (cost, count, detail) if prev is None or cost > prev[0] else (prev[0], count, prev[2])
    return [StaticFact(kind=kind, line=ln, count=count,
                       detail=detail + (f"; {count} such instructions on this line" if count > 1 else ""))
            for (ln, kind), (_, count, detail) in sorted(worst.items())]
