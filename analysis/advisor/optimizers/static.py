"""Source and SASS patterns with a known remedy: each finding is located at the culprit's columns.

Where a profile exists, the samples of the instructions the pattern creates are the match M of
GPA Eq. 2; without one, their static issue weight stands in for samples.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from ...emulator.memory import AddressAnalysis, active_lanes, data_wavefronts
from ...frontend import isa
from ...frontend.instructions import Instruction
from ...profile import StallReason as R
from .. import estimators
from ..advice import Advice, Estimate, Fix, SourceEdit
from ..blame import latency_class
from .base import (COMPUTE_UNITS, MEMORY_UNITS, MatchContext, Optimizer, atomics_fill_the_queue, back_edges,
                   insert_edit, kernel_line, kernel_lines, line_list, past_l1, pct, provenance_note, requests_relieve,
                   sectors_past_l1)

_FP64 = frozenset({"DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DSET"})


def _on_line(ctx: MatchContext, line: int, pred=lambda i: True) -> list[Instruction]:
    return [i for i in ctx.instructions if kernel_line(i) == line and pred(i)]


def _estimate(ctx: MatchContext, instrs: list[Instruction], fraction: float = 1.0, waiting: float = 0.0):
    """GPA Eq. 2 over what `instrs` cost and are blamed (plus `waiting`: samples that other
    instructions spend waiting for them and blame does not charge them)."""
    m = ctx.weight(instrs) + waiting
    if m <= 0 or ctx.denominator <= 0:
        return None, 0.0
    est = estimators.stall_elimination(ctx.denominator, m, fraction)
    if ctx.profile is None:
        est = est.model_copy(update={"formula": est.formula + " over static issue counts"})
    return est, m / ctx.denominator


def is_fp64(i: Instruction) -> bool:
    return i.opcode in _FP64 or (i.opcode in ("F2F", "I2F", "F2I") and "F64" in i.modifiers)


class DoublePrecisionConstant(Optimizer):
    """GPA §II-C (hotspot): a double literal in float arithmetic promotes it to FP64 and converts back."""

    name, title, group = "double_precision_constant", "Make the constant a float", "static"
    relieves = COMPUTE_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        out = []
        for fact in (f for f in ctx.facts if f.kind == "fp64_conversion"):
            lits = [lt for lt in (ctx.source.literals if ctx.source else ()) if lt.line == fact.line and lt.is_double]
            if fact.cause:
                lits = [lt for lt in lits if lt.text == fact.cause] or lits
            if fact.column is not None:
                lits = sorted(lits, key=lambda lt: abs(lt.col_start - fact.column))
            # the line's FP64 instructions, and its calls into FP64 library code (`pow(x, 2.0)` calls the
            # double `pow`; with `2.0f` the float one is inlined): call-site blame charges them their callees
            fp64_calls = {c.index for c in ctx.call_sites if c.opcodes & _FP64}
            instrs = _on_line(ctx, fact.line, lambda i: is_fp64(i) or i.index in fp64_calls)
            est, share = _estimate(ctx, instrs)
            if est is None:
                continue
            lit = lits[0] if lits else None
            fix = None
            if lit is not None:
                fix = Fix(kind="float_literal", description=f"write `{lit.text}f` so the arithmetic stays in FP32",
                          edits=tuple(insert_edit(lt.line, lt.col_end, "f") for lt in lits))
            cause = f"`{lit.text}`" if lit else "a double-precision value"
            msg = (f"Line {fact.line}: {cause} is a double, so the float arithmetic around it is done in FP64 "
                   f"({len(instrs)} FP64/conversion instructions; {fact.detail}). {pct(share)} of this kernel's "
                   f"{'samples' if ctx.profile else 'issue slots'} ({provenance_note(ctx)}) are on them, and FP64 runs "
                   f"at a fraction of the FP32 rate on most GPUs. Add the `f` suffix. Est. {est.speedup:.2f}× "
                   f"(GPA Eq. 2).")
            cols = (lit.col_start, lit.col_end) if lit else ((fact.column, fact.end_column)
                                                              if fact.column is not None and fact.end_column else None)
            out.append(self.advice(ctx, lines=[fact.line], importance=share, estimate=est, message=msg, fix=fix,
                                   columns=cols, detail=f"{fact.line}:{cols}", changes=instrs))
        return out


_F_VARIANT = {"pow": "powf", "sqrt": "sqrtf", "exp": "expf", "log": "logf", "sin": "sinf", "cos": "cosf",
              "tan": "tanf", "fabs": "fabsf", "floor": "floorf", "ceil": "ceilf", "exp2": "exp2f", "log2": "log2f",
              "log10": "log10f", "tanh": "tanhf", "atan2": "atan2f", "fmod": "fmodf", "rsqrt": "rsqrtf",
              "cbrt": "cbrtf", "erf": "erff", "hypot": "hypotf", "fmin": "fminf", "fmax": "fmaxf"}


class DoubleMathOnFloat(Optimizer):
    """The double overload of a math function called on floats (`pow` instead of `powf`)."""

    name, title, group = "double_math_function", "Call the float math function", "static"
    relieves = COMPUTE_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        out = []
        for fact in (f for f in ctx.facts if f.kind == "fp64_math"):
            calls = [c for c in (ctx.source.calls if ctx.source else ()) if c.span.first_line == fact.line
                     and c.callee.split("::")[-1] in _F_VARIANT]
            if fact.cause:
                calls = [c for c in calls if c.callee.split("::")[-1] == fact.cause] or calls
            if not calls:
                continue  # no double math call on the line: its FP64 code is another cause's (a literal's)
            instrs = _on_line(ctx, fact.line, lambda i: is_fp64(i) or latency_class(i) in ("mio", "either"))
            est, share = _estimate(ctx, instrs)
            if est is None:
                continue
            call = calls[0] if calls else None
            fix = cols = None
            if call is not None:
                short = call.callee.split("::")[-1]
                sp = call.callee_span
                fix = Fix(kind="float_math_function", description=f"call `{_F_VARIANT[short]}` instead of `{short}`",
                          edits=(SourceEdit(line=sp.start.line, col=sp.end.col - len(short), end_line=sp.end.line,
                                            end_col=sp.end.col, new_text=_F_VARIANT[short]),))
                cols = (sp.start.col, sp.end.col)
            name = f"`{call.callee}`" if call else "a double math function"
            msg = (f"Line {fact.line}: {name} is the double-precision version ({fact.detail}); its float arguments "
                   f"are converted to FP64 and the result back ({len(instrs)} instructions, {pct(share)} of this "
                   f"kernel's {'samples' if ctx.profile else 'issue slots'}, {provenance_note(ctx)}). Call the float "
                   f"variant. Est. {est.speedup:.2f}× (GPA Eq. 2).")
            out.append(self.advice(ctx, lines=[fact.line], importance=share, estimate=est, message=msg, fix=fix,
                                   columns=cols, detail=f"{fact.line}:{cols}", changes=instrs))
        return out


def _written(ctx: MatchContext, name: str) -> bool:
    """The kernel stores through pointer `name` (`source.Function.stores`, read from the syntax tree)."""
    fm = ctx.function_model
    return fm is not None and name in fm.stores


class MissingRestrict(Optimizer):
    """Pointer parameters without `__restrict__`: the compiler must assume aliasing and keeps loads ordered."""

    name, title, group = "restrict_pointers", "Mark pointers `const __restrict__`", "static"
    relieves = frozenset({"lsu", "l2"})  # the loads it removes re-read what was just read (L1, else L2), not DRAM

    def match(self, ctx: MatchContext) -> list[Advice]:
        fm = ctx.function_model
        if fm is None:
            return []
        pointers = [p for p in fm.params if p.is_pointer and p.name]
        params = [p for p in pointers if not p.is_restrict]
        # Precondition: aliasing needs two pointers, and matters only if one of them is written.
        if len(pointers) < 2 or not any(_written(ctx, p.name) for p in pointers):
            return []
        loads = [i for i in ctx.instructions if i.opcode in ("LDG", "LD") and "CONSTANT" not in i.modifiers
                 and i.memory_space in ("global", "generic", None)]
        if not params or not loads:
            return []
        # What aliasing costs is the loads that follow a store: the compiler must re-read them after
        # it (a load of an address already read before the store is redundant under `__restrict__`)
        # and cannot move them above it. A kernel whose loads all precede its stores gets the same
        # SASS either way (re-modeled: no change), so it gets no advice.
        stores = [i.index for i in ctx.instructions if isa.opcode_info(i.opcode).access in (isa.Access.STORE, isa.Access.ATOMIC)
                  and i.memory_space in ("global", "generic", None)]
        back = back_edges(ctx.instructions)

        def after_a_store(ld: Instruction) -> bool:
            # in program order, or in a loop that stores later in its body (the next iteration's load)
            return any(s < ld.index for s in stores) or any(
                head <= ld.index < s <= latch for head, latch in back for s in stores)

        late = [ld for ld in loads if after_a_store(ld)]
        if not late:
            return []
        def same_address(a: Instruction, b: Instruction) -> bool:
            """The same memory operand, its registers not redefined in between (64-bit address
            arithmetic is beyond the affine analysis, so the operand itself is compared)."""
            regs = address_registers(a)
            mem = next((o for o in a.operands if "[" in o), None)
            return (mem is not None and mem == next((o for o in b.operands if "[" in o), None) and not any(
                regs & set(x.defs) for x in ctx.instructions[a.index + 1:b.index]))

        redundant = [ld for ld in late if any(s < ld.index for s in stores) and any(
            same_address(b, ld) for b in loads if b.index < max(s for s in stores if s < ld.index))]
        movable = [ld for ld in late if ld not in redundant]
        # GPA Eq. 2: a redundant load goes away; a movable one hides part of its latency (a quarter)
        est_r, share_r = _estimate(ctx, redundant) if redundant else (None, 0.0)
        est_m, share_m = _estimate(ctx, movable, 0.25) if movable else (None, 0.0)
        m = share_r + 0.25 * share_m
        if m <= 0:
            return []
        est = estimators.stall_elimination(ctx.denominator, m * ctx.denominator)  # T: the kernel's own total
        share = share_r + share_m
        if est.speedup <= 1.0:
            return []
        edits = []
        for p in params:
            if not p.is_const_pointee and not _written(ctx, p.name):
                edits.append(insert_edit(p.const_insert.line, p.const_insert.col, "const "))
            if p.restrict_insert is not None:
                at = p.restrict_insert
                after = ctx.source_lines[at.line - 1][at.col:at.col + 1] if 0 < at.line <= len(ctx.source_lines) else ""
                # `float *y` needs a space on both sides, or the qualifier swallows the name: `__restrict__y`.
                text = " __restrict__" if after in ("", " ", "\t") else " __restrict__ "
                edits.append(insert_edit(at.line, at.col, text))
        if not edits:
            return []
        names = ", ".join(f"`{p.name}`" for p in params)
        line = params[0].span.start.line
        what = (f"{len(redundant)} of them re-read an address read before the store" if redundant else
                "they cannot move above it")
        msg = (f"{names} {'are' if len(params) > 1 else 'is'} not `__restrict__`, so the compiler must assume the "
               f"pointers alias: {len(late)} global load{'s' if len(late) != 1 else ''} after a store must be "
               f"issued after it ({what}). {pct(share)} of this kernel's "
               f"{'samples' if ctx.profile else 'issue slots'} ({provenance_note(ctx)}) are on them. Mark pointers "
               f"that never alias `__restrict__` and read-only ones `const`. Est. {est.speedup:.2f}× (GPA Eq. 2: "
               f"the redundant loads removed, a quarter of the others' cost hidden).")
        # the fix goes on the declaration; the loads it changes are where their cost is
        load_lines = sorted({ln for ld in late if (ln := kernel_line(ld)) and ln != line})
        return [self.advice(ctx, lines=[line, *load_lines], importance=share, estimate=est, message=msg,
                            fix=Fix(kind="restrict_const", description="add `const`/`__restrict__` to the pointer parameters",
                                    edits=tuple(sorted(edits, key=lambda e: (e.line, e.col), reverse=True))),
                            changes=late)]


_ADDR = re.compile(r"\[(R\d+)(?:\.64)?(?:\s*\+\s*(-?0x[0-9a-fA-F]+|-?\d+))?\]\s*$")


class VectorizeLoads(Optimizer):
    """Neighbouring 32-bit loads from one base address: one 64/128-bit load would do."""

    name, title, group = "vectorize_loads", "Use vector loads", "static"
    # fewer requests of the same bytes: the LSU/MIO queue's work goes, the sectors stay (an element-wise
    # kernel's wider accesses are bounded by the busiest unit of the route in their own estimate)
    relieves = frozenset({"lsu", "shared"})

    def match(self, ctx: MatchContext) -> list[Advice]:
        groups: dict[tuple[str, str], list[tuple[int, Instruction]]] = defaultdict(list)
        for i in ctx.instructions:
            if i.opcode not in ("LDG", "LDS", "LD") or any(w in i.modifiers for w in ("64", "128", "U8", "S8", "U16", "S16")):
                continue
            mem = next((o for o in reversed(i.operands) if "[" in o), "")
            m = _ADDR.search(mem)
            if m is None:
                continue
            off = int(m.group(2), 0) if m.group(2) else 0
            groups[(i.opcode, m.group(1))].append((off, i))
        # One advice per opcode and source line(s): after unrolling, ptxas often rebases the same
        # array's loads on several registers, and two identical advices on one line say nothing more.
        merged: dict[tuple[str, tuple[int, ...]], tuple[list[Instruction], int, int]] = {}
        for (op, _base), rows in groups.items():
            offs = sorted({o for o, _ in rows})
            run = [o for o in offs if (o + 4 in offs or o - 4 in offs)]
            if len(run) < 2:
                continue
            instrs = [i for o, i in rows if o in run]
            lines = tuple(sorted({kernel_line(i) for i in instrs if kernel_line(i)}))
            prev, n, bases = merged.get((op, lines), ([], 0, 0))
            merged[(op, lines)] = (prev + instrs, max(n, min(4, len(run))), bases + 1)
        out = []
        for (op, lines), (instrs, n, bases) in merged.items():
            est, share = _requests_estimate(ctx, instrs, (n - 1) / n)
            if est is None or est.speedup <= 1.0:
                continue
            width = {2: "float2", 3: "float4", 4: "float4"}[n]
            where = "one base register" if bases == 1 else f"{bases} base registers"
            msg = (f"{len(instrs)} scalar 32-bit {op} instructions read neighbouring addresses from {where} "
                   f"({line_list(lines)}). One {width} load "
                   f"(aligned to its size) issues one request instead of {n}. {pct(share)} of this kernel's "
                   f"{'samples' if ctx.profile else 'issue slots'} ({provenance_note(ctx)}) are these loads issuing "
                   f"or waiting for a place in the queue; the wait for their data stays. "
                   f"Est. {est.speedup:.2f}× (GPA Eq. 2, {n - 1} of {n} requests removed).")
            out.append(self.advice(ctx, lines=list(lines) or [0], importance=share, estimate=est, message=msg,
                                   detail=f"{op}:{','.join(map(str, lines))}", changes=instrs))
        return out + self._elements_per_thread(ctx)

    def _elements_per_thread(self, ctx: MatchContext) -> list[Advice]:
        """A streaming kernel: each thread moves one narrow element per array (no loop, coalesced),
        and the kernel waits on those accesses with the memory route far from busy. A warp then has
        32 words in flight per access; with k neighbouring elements per thread in one 128-bit access
        (float4, llm.c's Packed128) and a grid k times smaller, as many warps stay resident while
        there are blocks for them (`waves`), each with k times the bytes in flight. Little's law:
        the wait for the data shrinks with the bytes in flight until the busiest unit of the route
        saturates. So f = 1 − 1/g of the accesses' blamed cost goes (GPA Eq. 2), g = min(k, waves,
        1/utilisation of the busiest of LSU, L2, DRAM). The waves are the launch's: on a default launch
        the item says so (`Estimate.reads_launch`)."""
        from .parallel import waves

        if ctx.profile is None or ctx.total <= 0 or ctx.blame is None:
            return []
        ins = ctx.instructions
        acc = [i for i in ins if i.memory_space in ("global", "generic")
               and isa.access_direction(i) in (isa.Access.LOAD, isa.Access.STORE)]
        loads = [i for i in acc if isa.access_direction(i) is isa.Access.LOAD]
        if not loads or any(w in i.modifiers for i in acc for w in ("64", "128")):
            return []
        if any(i.opcode == "BAR" for i in ins):
            return []  # not elementwise: a block that combines its elements (a reduction) gets fewer blocks with
            # more elements per thread from thread_coarsening, whose phase that amortises (one fix, one item)
        loops = back_edges(ins)
        if any(head <= i.index <= latch for i in acc for head, latch in loops):
            return []  # the threads already loop over their elements
        lines = kernel_lines(acc)
        if any(f.kind == "uncoalesced_access" and f.line in lines for f in ctx.facts):
            return []  # strided lanes: coalescing is the remedy (coalesced_access)
        w = waves(ctx)
        util = ctx.profile.utilization
        busiest = max(("lsu", "l2", "dram"), key=lambda u: util.get(u, 0.0))
        u = util.get(busiest, 0.0)
        if w is None or w < 2 or u <= 0 or u >= 0.9:
            return []  # one wave (k times fewer threads, fewer warps), or the route already busy
        width = max(2 if {"U16", "S16"} & set(i.modifiers) else 1 if {"U8", "S8"} & set(i.modifiers) else 4
                    for i in acc)
        k = 16 // width
        g = min(k, w, 1.0 / u)
        m = ctx.weight(acc)
        share = m / ctx.total
        if share < 0.1 or g <= 1.0:
            return []
        est = estimators.stall_elimination(ctx.total, m, 1.0 - 1.0 / g)
        if est.speedup < 1.01:
            return []
        name = {4: "float4", 2: "a 16-byte struct of 8 halves (or bfloat16s)", 1: "a 16-byte struct of 16 bytes"}[width]
        msg = (f"Each thread moves one {8 * width}-bit element per array ({line_list(lines)}), "
               f"and {pct(share)} of this kernel's samples ({provenance_note(ctx)}) "
               f"are these accesses and the waits for them, while the busiest unit of the memory route ({busiest}) is "
               f"{pct(u)} busy over {w:.0f} waves of blocks: the kernel is bound by the bytes in flight, not by "
               f"bandwidth. Have each thread move {k} neighbouring elements with one 128-bit (float4-sized) load or "
               f"store per array ({name}, aligned) and launch {k}× fewer threads: each warp keeps {k}× the bytes in "
               f"flight. Est. {est.speedup:.2f}× (GPA Eq. 2 over those accesses' cost, f = 1 − 1/{g:.2f}: "
               f"min({k} elements, {w:.1f} waves, 1/{u:.2f} {busiest}), Little's law).")
        # k elements per thread is k times fewer threads: the waves in the figure are the launch's
        return [self.advice(ctx, lines=lines or [0], importance=share,
                            estimate=est.model_copy(update={"reads_launch": True}), message=msg,
                            detail="elements", changes=acc)]


#: What a request costs in the model apart from the wait for its data: its issue, and its waits for a
#: place in the LSU / MIO / texture queue. Fewer, wider requests remove these; the latency does not
#: shrink (one 128-bit load returns no sooner than the 32-bit loads it replaces, which were in flight
#: together), so the long-scoreboard stalls blamed on the loads are not theirs to remove (issue 34:
#: an estimate bounded by the stalls it removes).
_REQUEST_COST = (R.selected, R.lg_throttle, R.mio_throttle, R.tex_throttle)


def _requests_estimate(ctx: MatchContext, instrs: list[Instruction], fraction: float):
    """GPA Eq. 2 over the requests' own cost (`_REQUEST_COST`); without a profile, their issue slots."""
    if ctx.profile is None:
        return _estimate(ctx, instrs, fraction)
    m = ctx.weight(instrs, _REQUEST_COST, callees=False)
    if m <= 0 or ctx.denominator <= 0:
        return None, 0.0
    return estimators.stall_elimination(ctx.denominator, m, fraction), m / ctx.denominator


class _FactStalls(Optimizer):
    """Shared shape: a static fact on a line, and the samples of the affected instructions there."""

    fact_kind: str = ""
    reasons: tuple[R, ...] = ()
    explain: str = ""

    def pick(self, i: Instruction) -> bool:
        return True

    def matched(self, ctx: MatchContext, line: int) -> tuple[list[Instruction], Estimate | None, float, str]:
        """What the remedy changes on `line`: its instructions, the estimate, their share, the equation."""
        instrs = _on_line(ctx, line, self.pick)
        est, share = _estimate(ctx, instrs)
        return instrs, est, share, "GPA Eq. 2"

    def match(self, ctx: MatchContext) -> list[Advice]:
        out = []
        for line in sorted({f.line for f in ctx.facts if f.kind == self.fact_kind}):
            fact = next(f for f in ctx.facts if f.kind == self.fact_kind and f.line == line)
            instrs, est, share, how = self.matched(ctx, line)
            if est is None or est.speedup <= 1.0:
                continue
            msg = (f"Line {line}: {fact.detail}. {pct(share)} of this kernel's "
                   f"{'samples' if ctx.profile else 'issue slots'} ({provenance_note(ctx)}) are on these "
                   f"{len(instrs)} instructions. {self.explain} Est. {est.speedup:.2f}× ({how}).")
            cols = (fact.column, fact.end_column) if fact.column is not None and fact.end_column else None
            out.append(self.advice(ctx, lines=[line], importance=share, estimate=est, message=msg, columns=cols,
                                   detail=str(line), changes=instrs))
        return out


class CoalescedAccess(_FactStalls):
    """Starlight Table 1 (poor memory usage): lanes of a warp touch scattered addresses."""

    name, title, group = "coalesced_access", "Coalesce global memory accesses", "static"
    relieves = MEMORY_UNITS
    fact_kind = "uncoalesced_access"
    explain = ("Each warp request is split into one transaction per lane group, multiplying memory traffic. Make "
               "consecutive threads access consecutive addresses (swap the loop/thread index roles, or stage the "
               "data through shared memory).")

    def pick(self, i: Instruction) -> bool:
        return latency_class(i) == "l1tex"

    def relieved(self, ctx: MatchContext, changes: Sequence[Instruction]) -> frozenset[str]:
        return requests_relieve(ctx, changes)

    def matched(self, ctx: MatchContext, line: int) -> tuple[list[Instruction], Estimate | None, float, str]:
        if not ctx.memory or ctx.profile is None:
            return super().matched(ctx, line)  # no walked lanes: the line's global accesses, all of their cost
        # the line's scattered accesses as the walked lanes executed them: a coalesced one beside them
        # (a broadcast `x[k]`) keeps its cost
        # and only where the modeled traffic says so, at the unit the model finds busier: the LSU's
        # wavefronts (one per 128 B line a request touches), or the sectors sent past L1 (a lane
        # reading the rest of its sector on the next trips hits L1, caches.py), each against what a
        # coalesced request needs
        warp = ctx.arch.warp_size if ctx.arch is not None else 32
        util = ctx.profile.utilization
        lsu_bound = util.get("lsu", 0.0) >= max(util.get("l2", 0.0), util.get("dram", 0.0))
        past = sectors_past_l1(ctx, (line,))
        if not lsu_bound and past is not None and past[0] <= past[1] + 1e-9:
            return [], None, 0.0, ""  # the line's loads together send past L1 what coalesced ones would

        def excess(i: Instruction, sh) -> tuple[float, float]:
            width = isa.access_bytes(i) or 4
            if lsu_bound:
                return sh.wavefronts, float(data_wavefronts(width, warp))
            return past_l1(sh), max(1.0, warp * width / 32)

        scattered = [(i, *excess(i, sh)) for i in _on_line(ctx, line, self.pick)
                     if (sh := ctx.memory.get(i.pc)) is not None and sh.pattern in ("strided", "uncoalesced")]
        scattered = [row for row in scattered if row[1] > row[2]]
        if not scattered:
            return [], None, 0.0, ""
        rows = [(ctx.weight([i]), actual, ideal) for i, actual, ideal in scattered]
        est = estimators.fewer_sectors(ctx.denominator, rows)
        unit = "LSU wavefronts" if lsu_bound else "sectors past L1"
        how = f"GPA Eq. 2: {est.inputs.get('fraction', 1.0):.0%} of their cost, the {unit} a coalesced request does not need"
        return [i for i, _, _ in scattered], est, sum(w for w, _, _ in rows) / ctx.denominator, how


class SharedBankConflicts(_FactStalls):
    """Shared-memory accesses whose lanes hit the same bank: the access is replayed per conflict."""

    name, title, group = "bank_conflicts", "Avoid shared-memory bank conflicts", "static"
    relieves = frozenset({"shared", "lsu"})
    fact_kind = "bank_conflict"
    explain = ("Lanes that hit the same 4-byte bank are served one after another. Pad the array's row "
               "(e.g. [32][33]) or change the index so lanes of a warp hit distinct banks.")

    def pick(self, i: Instruction) -> bool:
        return latency_class(i) == "shared"

    def matched(self, ctx: MatchContext, line: int) -> tuple[list[Instruction], Estimate | None, float, str]:
        if not ctx.memory or ctx.profile is None:
            return super().matched(ctx, line)  # no walked lanes: the line's shared accesses, all of their cost
        # as coalescing's: a conflict-free access still issues and still waits for its own wavefronts, so
        # only the replays go (an n-way conflict keeps 1/n of the access's cost; a 2-way LDS.128, served
        # in 8 wavefronts where 4 do, keeps half), each access's wavefronts as the walked lanes executed it
        warp = ctx.arch.warp_size if ctx.arch is not None else 32
        conflicted = [(i, sh.wavefronts, float(data_wavefronts(isa.access_bytes(i) or 4, warp)))
                      for i in _on_line(ctx, line, self.pick)
                      if (sh := ctx.memory.get(i.pc)) is not None and sh.pattern == "bank_conflict"]
        conflicted = [row for row in conflicted if row[1] > row[2]]
        if not conflicted:
            return [], None, 0.0, ""
        rows = [(ctx.weight([i]), actual, ideal) for i, actual, ideal in conflicted]
        est = estimators.fewer_sectors(ctx.denominator, rows, unit="wavefronts")
        how = f"GPA Eq. 2: {est.inputs.get('fraction', 1.0):.0%} of their cost, the replayed wavefronts"
        return [i for i, _, _ in conflicted], est, sum(w for w, _, _ in rows) / ctx.denominator, how


def address_registers(ins: Instruction) -> set[str]:
    mem = next((o for o in ins.operands if "[" in o), "")
    return set(re.findall(r"\bR\d+\b", mem))


def thread_dependent_addresses(instrs: tuple[Instruction, ...], sources: tuple[str, ...] = ("TID", "LANEID")
                               ) -> set[int]:
    """Indices of memory instructions whose address derives from a thread/lane index.

    One forward pass in layout order with kills (a register redefined from untainted values is
    clean again), so reused registers do not smear the taint; loop back edges are ignored, which
    is exact for induction variables that start from thread-independent values."""
    tainted: set[str] = set()
    out: set[int] = set()
    for i in instrs:
        if address_registers(i) & tainted:
            out.add(i.index)
        src = i.opcode in ("S2R", "CS2R") and any(t in o for o in i.operands for t in sources)
        if src or (set(i.uses) & tainted):
            tainted |= set(i.defs)
        elif i.predicate is None:
            tainted -= set(i.defs)
    return out


class ContendedAtomics(Optimizer):
    """Global atomics to one word from many threads: they serialize at the L2 slice owning it."""

    name, title, group = "contended_atomics", "Aggregate atomics before going to global memory", "static"
    relieves = MEMORY_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        aa = AddressAnalysis(ctx.instructions)
        block = ctx.profile.launch.block if ctx.profile is not None and ctx.profile.launch else None
        warps = -(-(block[0] * block[1] * block[2]) // 32) if block else None
        atoms = []
        for i in ctx.instructions:
            if i.opcode not in ("ATOM", "ATOMG", "RED", "REDG") or i.memory_space not in ("global", "generic", None):
                continue
            addr, _ = aa.address(i)
            if addr is not None and all(c == 0 for c in addr.coeffs[:3]):  # the same word for a whole block
                lanes = active_lanes(ctx.instructions, aa, i.index, block=block)
                atoms.append((i, all(c == 0 for c in addr.coeffs), lanes))
        if not atoms or (warps and all(lanes * warps <= 1 for _, _, lanes in atoms)):
            return []  # none, or one update per block already (`if (threadIdx.x == 0)` after a block reduction)
        # Precondition: the compiler has not already reduced. `REDUX` (sm_80+ warp reduction) or a
        # shared-memory atomic (`ATOMS`) ahead of the global one is exactly the aggregation this
        # advice would ask for.
        if any(i.opcode in ("REDUX", "ATOMS") or (i.opcode in ("ATOM", "RED") and i.memory_space == "shared")
               for i in ctx.instructions):
            return []
        grid_wide = any(g for _, g, _ in atoms)
        per_warp = all(lanes <= 1 for _, _, lanes in atoms)  # the code already elects one lane per warp
        if per_warp:
            if not warps or warps <= 1:
                return []  # one atomic per block already
            fraction, removed = 1 - 1 / warps, f"{warps - 1} of {warps} atomics removed"
            how = (f"One lane per warp already updates it, so each block still sends {warps} updates. Combine "
                   f"the block's warps in shared memory first, then issue one atomic per block.")
        else:
            fraction, removed = 31 / 32, "31 of 32 atomics removed"
            how = ("Reduce within the warp (__shfl_down_sync / __reduce_add_sync) or block (shared memory) first, "
                   "then issue one atomic per warp or block.")
        instrs = [i for i, _, _ in atoms]
        # GPA Eq. 2 over the samples on the atomics and blamed on them (warps draining at EXIT wait for
        # them), like every line-local advice: the baseline is the kernel's own predicted (or measured)
        # time, and the contention is what the profile charges them (the emulator serializes updates
        # of one word at the L2, docs/emulator.md).
        # Where the L2's unit for one word is the busiest of the route, the other memory instructions'
        # lg-throttle stalls wait for these updates to leave the queue (base.atomics_fill_the_queue)
        own = {i.index for i in instrs}
        held = [b for b in ctx.blame.self_blame if b.reason == R.lg_throttle and b.index not in own] \
            if ctx.blame is not None and atomics_fill_the_queue(ctx) else []
        queued = sum(b.samples for b in held)
        est, share = _estimate(ctx, instrs, fraction, queued)
        if est is None or est.speedup <= 1.0:
            return []
        lines = sorted({kernel_line(i) for i in instrs if kernel_line(i)})
        who = "every thread of the grid updates the same word" if grid_wide else \
            "every thread of a block updates its block's word"
        msg = (f"{len(instrs)} global atomic{'s' if len(instrs) > 1 else ''} at "
               f"{line_list(lines)} {'use' if len(instrs) > 1 else 'uses'} an address that does not depend on the thread: {who}, and "
               f"the updates serialize in L2. {pct(share)} of this kernel's "
               f"{'samples' if ctx.profile else 'issue slots'} ({provenance_note(ctx)}) are on them or wait for them"
               f"{' (memory instructions held in the full load/store queue behind them included)' if queued else ''}. "
               f"{how} Est. {est.speedup:.2f}× (GPA Eq. 2, {removed}).")
        # the share includes the stalls of the instructions held behind them: their lines are named too
        waiting = sorted({ln for b in held if (ln := kernel_line(ctx.instructions[b.index])) and ln not in lines})
        return [self.advice(ctx, lines=[*lines, *waiting] or [0], importance=share, estimate=est, message=msg,
                            changes=instrs)]


#: what a condition reads when it selects threads: the built-in and the names kernels give it
_THREAD_INDEX = frozenset({"threadIdx.x", "threadIdx.y", "threadIdx.z", "tid", "lane", "laneId", "lane_id"})
#: `(tid & 31) == 0`, `tid % 32`: one lane per warp, elected on purpose (a warp aggregation)
_WARP_WIDE = frozenset({"31", "32", "0x1f", "0x1F", "warpSize"})


class DivergentBranch(Optimizer):
    """Starlight Table 1 (branching): a condition on `tid % k` splits every warp."""

    name, title, group = "divergent_branch", "Avoid divergence within warps", "static"
    relieves = COMPUTE_UNITS | {"shared"}

    def match(self, ctx: MatchContext) -> list[Advice]:
        fm = ctx.function_model
        if fm is None or fm.body is None:
            return []
        out = []
        for b in ctx.source.branches_in(fm.span) if ctx.source is not None else ():
            if not b.masks or not _THREAD_INDEX & set(b.names):
                continue
            if any(rhs in _WARP_WIDE for _, rhs in b.masks):
                continue
            ln, last = b.line, max(b.line, b.body_lines[1])
            body = [i for i in ctx.instructions if ln <= (kernel_line(i) or 0) <= last]
            est, share = _estimate(ctx, body, 0.5)
            if est is None or est.speedup <= 1.0:
                continue
            cond = f"if ({b.condition_text})"
            msg = (f"Line {ln}: `{cond}` selects threads by a modulo of the thread index, so lanes of the same "
                   f"warp take different paths and each warp executes both (most lanes idle). {pct(share)} of this "
                   f"kernel's {'samples' if ctx.profile else 'issue slots'} ({provenance_note(ctx)}) are in the branch. "
                   f"Index the work so whole warps take the same path (e.g. `index = 2 * s * tid` with a contiguous "
                   f"range of active threads). Est. {est.speedup:.2f}× (GPA Eq. 2, assuming half the lanes idle).")
            lines = sorted({kernel_line(i) for i in body if kernel_line(i)} | {ln})
            cols = (b.span.start.col, b.condition.end.col) if b.condition.end.line == ln else None
            out.append(self.advice(ctx, lines=lines, importance=share, estimate=est, message=msg,
                                   columns=cols, detail=str(ln), changes=body))
        return out
