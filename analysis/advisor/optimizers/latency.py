"""GPA Table II, latency-hiding optimizers: rearrange code so issued work covers stalls (Eq. 4–5)."""

from __future__ import annotations

from collections import defaultdict

from ...frontend.isa import calls_subroutine
from ...profile import StallReason as R
from .. import estimators
from ..advice import Advice, Fix, SourceEdit
from ..blame import ARITHMETIC, GLOBAL, SHARED, BlameEdge
from .base import (OVERHEAD_UNITS, MatchContext, Optimizer, describe_edge, file_index, hotspots, insert_edit,
                   kernel_line, pct, provenance_note)

_HIDEABLE = frozenset({GLOBAL, ARITHMETIC, SHARED})


def _entry_read(ins) -> bool:
    """What a kernel reads of its launch: a load of its parameter bank (`LDC R2, c[0x0][0x210]`) or a
    special register (`S2UR UR4, SR_CTAID.X`, `S2R R0, SR_TID.X`). The source has no earlier place
    for these (the thread's index and the kernel's arguments are where it starts), so their waits
    are the launch's, not loads placed too near their uses (a register-indexed LDC takes 65 cycles on
    an H100, benchmarks/microbench: since sm_90's latencies were measured a store-only kernel's
    entry reads made up 7 % of its samples)."""
    if ins.opcode in ("S2R", "S2UR", "CS2R"):
        return True
    return ins.opcode in ("LDC", "ULDC", "LDCU") and any(str(o).startswith("c[0x0]") for o in ins.operands)


def _loop_is_rolled_in_sass(ctx: MatchContext, loop) -> bool:
    """A backward branch whose source line lies in the loop: the compiler kept the loop (did not fully unroll)."""
    by_pc = {i.pc: i for i in ctx.instructions}
    for ins in ctx.instructions:
        if ins.opcode == "BRA" and ins.branch_target is not None and ins.branch_target <= ins.pc:
            ln = kernel_line(ins)
            tgt = by_pc.get(ins.branch_target)
            tl = kernel_line(tgt) if tgt is not None else None
            if ln is not None and loop.span.contains_line(ln) or tl is not None and loop.span.contains_line(tl):
                return True
    return False


def _sass_unroll_copies(ctx: MatchContext, loop) -> int:
    """How many copies of one iteration the compiler laid out in the SASS loop body: the most
    instructions of one (line, opcode) between a backward branch in the loop and its target."""
    by_pc = {i.pc: i for i in ctx.instructions}
    copies = 1
    for ins in ctx.instructions:
        if ins.opcode != "BRA" or ins.branch_target is None or ins.branch_target > ins.pc:
            continue
        tgt = by_pc.get(ins.branch_target)
        ln = kernel_line(ins)
        if tgt is None or ln is None or not loop.span.contains_line(ln):
            continue
        counts: dict[tuple[int | None, str], int] = defaultdict(int)
        for i in ctx.instructions[tgt.index: ins.index + 1]:
            if i.opcode not in ("BRA", "NOP", "ISETP", "IADD3", "IMAD", "MOV") and i.memory_space != "constant":
                counts[(kernel_line(i), i.opcode)] += 1
        copies = max(copies, max(counts.values(), default=1))
    return copies


class LoopUnrolling(Optimizer):
    """GPA: global-memory and execution-dependency stalls whose def and use sit in the same loop."""

    name, title = "loop_unrolling", "Unroll the loop"
    relieves = OVERHEAD_UNITS  # the loop's own counter, compare and branch, once per unrolled trip

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.source is None or ctx.total <= 0:
            return []
        per_loop: dict[int, list[BlameEdge]] = defaultdict(list)
        for e in ctx.blame.edges:
            if e.category not in _HIDEABLE:
                continue
            lu = ctx.loop_at(kernel_line(ctx.instructions[e.use_index]))
            ld = ctx.loop_at(kernel_line(ctx.instructions[e.def_index]))
            if lu is not None and ld is not None and lu.index == ld.index:
                per_loop[lu.index].append(e)
        out = []
        for idx, edges in per_loop.items():
            loop = ctx.source.loops[idx]
            if loop.unroll is not None and not loop.unroll.is_rolled:
                continue  # already asks for unrolling
            if not _loop_is_rolled_in_sass(ctx, loop):
                continue  # the compiler unrolled it fully
            m = sum(e.samples for e in edges)
            if m / ctx.total < 0.02:
                continue
            # Eq. 5: only the loop's own issued work (its nest included) can fill its stalls.
            scope_active = sum(ctx.samples_at(i, [R.selected]) for i in ctx.instructions
                               if (ln := kernel_line(i)) is not None and loop.span.contains_line(ln))
            est = estimators.latency_hiding(ctx.total, m, scope_active, scope=f"loop at line {loop.header_line}")
            factor = 4 if loop.trip_count is None or loop.trip_count > 4 else loop.trip_count
            if _sass_unroll_copies(ctx, loop) >= factor:
                continue  # the SASS body already holds `factor` iterations: the pragma would not add any
            line = loop.header_line
            indent = ctx.indentation(line)
            if loop.unroll is not None:  # `#pragma unroll 1` written: change its factor in place
                text = ctx.line_text(loop.unroll.line)
                col = text.find("#pragma")
                fix = Fix(kind="pragma_unroll", description=f"replace the pragma at line {loop.unroll.line} with "
                          f"`#pragma unroll {factor}`", edits=(SourceEdit(line=loop.unroll.line, col=max(col, 0),
                          end_line=loop.unroll.line, end_col=len(text.rstrip()), new_text=f"#pragma unroll {factor}"),))
            else:
                fix = Fix(kind="pragma_unroll", description=f"insert `#pragma unroll {factor}` before the loop at line {line}",
                          edits=(insert_edit(line, 0, f"{indent}#pragma unroll {factor}\n"),))
            top = hotspots(edges)[0]
            msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) are dependency stalls inside "
                   f"the loop at line {line}: {describe_edge(top)}. One iteration has too little independent work to "
                   f"cover the latency, and the compiler kept the loop rolled. Unrolling lets it schedule the loads of "
                   f"several iterations before their uses. Est. {est.speedup:.2f}× (GPA Eq. 5, bounded by the loop's "
                   f"issued samples).")
            out.append(self.advice(ctx, lines=[line, *sorted({e.use_line for e in edges if e.use_line} - {line})],
                                   importance=m / ctx.total, estimate=est, message=msg, detail=str(line),
                                   hotspots=hotspots(edges), fix=fix))
        return out


class CodeReordering(Optimizer):
    """GPA: global-memory and execution-dependency stalls whose def is too close to its use."""

    name, title = "code_reordering", "Move loads away from their uses"

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.total <= 0:
            return []
        edges = ctx.blame.edges_where(lambda e: e.category in _HIDEABLE
                                      and not _entry_read(ctx.instructions[e.def_index]))
        m = sum(e.samples for e in edges)
        if m / ctx.total < 0.05:
            return []
        est = estimators.latency_hiding(ctx.total, m, ctx.active)
        hs = hotspots(edges)
        by_line: dict[int, float] = defaultdict(float)
        for e in edges:
            # the line in the user's kernel (an inlined header's call site), never the header's own line
            by_line[kernel_line(ctx.instructions[e.use_index]) or 0] += e.samples
        lines = [ln for ln in sorted(by_line, key=lambda ln: -by_line[ln]) if ln][:5]
        msg = (f"{pct(m / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) are memory or execution "
               f"dependency stalls; the hottest: {describe_edge(hs[0])} ({pct(hs[0].samples / ctx.total)}). Load "
               f"earlier (e.g. the next iteration's operands before this iteration's arithmetic) or interleave "
               f"independent work between each load and its use. Est. {est.speedup:.2f}× (GPA Eq. 4, bounded by "
               f"the kernel's issued samples).")
        return [self.advice(ctx, lines=lines or [hs[0].use_line or 0], importance=m / ctx.total, estimate=est,
                            message=msg, hotspots=hs)]


def _callees(source) -> dict[str, set[str]]:
    """The names each function of the file calls (unqualified)."""
    out: dict[str, set[str]] = {}
    for c in source.calls:
        out.setdefault(c.function, set()).add(c.callee.split("::")[-1])
    return out


def _noinline(source) -> list:
    """The file's `__noinline__` functions, in file order."""
    return [f for f in source.functions if f.inlining == "noinline"]


class FunctionInlining(Optimizer):
    """GPA: stalls in non-inlined device functions and at their call sites."""

    name, title = "function_inlining", "Inline the device function"
    relieves = OVERHEAD_UNITS  # the call's argument moves, CALL and RET

    def match(self, ctx: MatchContext) -> list[Advice]:
        callees = []
        if ctx.source is not None and (fm := ctx.function_model) is not None:
            called = file_index(ctx.source, "callees", _callees).get(fm.name, set())
            callees = [f for f in file_index(ctx.source, "noinline", _noinline) if f.name in called]
        calls = [i for i in ctx.instructions if calls_subroutine(i)]
        facts = [f for f in ctx.facts if f.kind == "noinline_call"]
        if not calls and not facts:
            return []
        if ctx.profile is not None and ctx.total > 0:
            # What inlining removes is the calls' overhead: each CALL, the move of its return address
            # just before it, and the callee's RET (GPA Eq. 2 over their blamed cost). Work the
            # compiler folds once it sees the call's arguments is not counted, so on a callee with
            # constant arguments this is a lower bound (docs/advisor.md).
            rets = [i for i in ctx.instructions if i.opcode == "RET"]
            ret_moves = [ctx.instructions[i.index - 1] for i in calls
                         if i.index > 0 and ctx.instructions[i.index - 1].opcode in ("MOV", "MOV32I")]
            m = ctx.weight([*calls, *ret_moves, *rets], callees=False)
            est = estimators.stall_elimination(ctx.total, m)
            share = m / ctx.total
            eqn = "GPA Eq. 2 over the calls' overhead"
        else:
            m = ctx.weight(calls) * 10  # a call/return pair costs ~10 issue slots of ABI moves (static guess)
            est = estimators.stall_elimination(ctx.static_total + m, m)
            share = m / (ctx.static_total + m) if ctx.static_total + m > 0 else 0.0
            eqn = "GPA Eq. 2 over static issue counts"
        if share < 0.02:
            return []
        sites = sorted({kernel_line(i) for i in calls if kernel_line(i)} | {f.line for f in facts})
        fix = None
        for f in callees:
            for ln in range(f.span.first_line, f.name_span.start.line + 1):
                col = ctx.line_text(ln).find("__noinline__")
                if col >= 0:
                    fix = Fix(kind="forceinline", description=f"replace `__noinline__` with `__forceinline__` on {f.name}",
                              edits=(SourceEdit(line=ln, col=col, end_line=ln, end_col=col + len("__noinline__"),
                                                new_text="__forceinline__"),))
                    break
            if fix:
                break
        names = ", ".join(f.name for f in callees) or "a device function"
        inside = ""
        if ctx.profile is not None and ctx.total > 0 and ctx.call_sites:
            rets = [i for i in ctx.instructions if i.opcode == "RET"]
            body = ctx.weight(calls) - ctx.weight(calls, callees=False) - ctx.weight(rets, callees=False)
            inside = f"; their callees' own work is a further {pct(max(0.0, body) / ctx.total)}"
        msg = (f"{pct(share)} of this kernel's samples ({provenance_note(ctx)}) are the overhead of calls to {names} "
               f"that the compiler did not inline (call sites at line{'s' if len(sites) > 1 else ''} "
               f"{', '.join(map(str, sites[:4]))}: the CALL, its return address, the RET){inside}. Each call moves "
               f"arguments through the ABI, saves registers to the stack and blocks scheduling and constant folding "
               f"across the call. Inline it (`__forceinline__`). Est. {est.speedup:.2f}× ({eqn}).")
        return [self.advice(ctx, lines=sites or [0], importance=share, estimate=est, message=msg, fix=fix)]
