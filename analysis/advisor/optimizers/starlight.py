"""Starlight Table 1 suggestions driven by the roofline bound, estimated by Starlight Eq. 3."""

from __future__ import annotations

from collections import defaultdict

from .. import estimators
from ..advice import Advice
from ..blame import GLOBAL
from .base import MEMORY_UNITS, MatchContext, Optimizer, describe_edge, hotspots, kernel_line, pct, provenance_note
from .static import thread_dependent_addresses


def _global_edges_in_loops(ctx: MatchContext):
    return ctx.blame.edges_where(lambda e: e.category == GLOBAL and ctx.loop_at(
        kernel_line(ctx.instructions[e.def_index])) is not None)


class SharedMemoryTiling(Optimizer):
    """Poor memory usage: a loop streams global data every thread of the block re-reads — stage it in shared memory."""

    name, title, group = "shared_memory_tiling", "Tile through shared memory", "roofline"
    relieves = MEMORY_UNITS

    def match(self, ctx: MatchContext) -> list[Advice]:
        if ctx.blame is None or ctx.total <= 0 or ctx.source is None or ctx.function_model is None:
            return []
        if any(d.function == ctx.function_model.name for d in ctx.source.shared_decls):
            return []  # already stages data in shared memory
        if ctx.roofline is not None and ctx.roofline.bound == "compute":
            return []
        edges = _global_edges_in_loops(ctx)
        by_line: dict[int, float] = defaultdict(float)
        for e in edges:
            by_line[kernel_line(ctx.instructions[e.def_index]) or 0] += e.samples
        loads_per_loop: dict[int, set[int]] = defaultdict(set)
        for e in edges:
            lp = ctx.loop_at(kernel_line(ctx.instructions[e.def_index]))
            loads_per_loop[lp.index].add(e.def_index)
        # Reuse across threads: a load in the loop whose address does not depend on threadIdx.x is
        # read by every lane of a warp (and every warp along x) — the data a shared tile would hold.
        tid_x = thread_dependent_addresses(ctx.instructions, ("TID.X",))
        reused = {k: v for k, v in loads_per_loop.items() if any(i not in tid_x for i in v)}
        loop_idx = max(reused, key=lambda k: len(reused[k]), default=None)
        if loop_idx is None:
            return []
        loop = ctx.source.loops[loop_idx]
        m = sum(v for ln, v in by_line.items() if loop.span.contains_line(ln))
        if m / ctx.total < 0.1:
            return []
        # The emulator's what-if (the loop's global loads served from shared memory: staging.py)
        # where it ran; Starlight Eq. 3 on the loop's global-memory stalls otherwise (a measured
        # profile, the quick stage). Eq. 3 moves with how ptxas schedules the loop (an unrolled
        # loop blames more stalls on its batched loads at the same time); the what-if does not.
        waiting = m  # the loop's samples that wait on its global loads
        staged = next((st for st in getattr(ctx.what_if, "staged_loops", ()) if loop.span.contains_line(st.line)), None)
        if staged is not None and ctx.profile is not None and ctx.what_if.current_seconds > 0:
            ratio = ctx.what_if.current_seconds / staged.seconds if staged.seconds > 0 else 1.0
            est = estimators.modeled_ratio(ctx.profile.duration_s, ctx.profile.duration_s / ratio,
                                           f"the {staged.loads} global loads of the loop at line {loop.header_line} "
                                           f"served from shared memory, the tile's own loads and barriers left out")
            how = (f"Est. at most {est.speedup:.2f}× (emulator what-if: the loop's loads served from shared memory; "
                   f"the tile's own loads and barriers are left out, so it is a ceiling).")
            # the what-if re-models the whole loop, so its Amdahl bound is the loop's share of the
            # samples, not only its global loads' stalls (with L1 modeled, a loop whose loads hit
            # L1 spends its time in the FMAs that wait on them)
            in_loop = [ls for ls in ctx.profile.lines if loop.span.contains_line(ls.line) and ls.total > 0]
            if sum(ls.total for ls in in_loop) > m:
                m = sum(ls.total for ls in in_loop)
                by_line.update({ls.line: by_line.get(ls.line, 0.0) for ls in in_loop})  # named below
        else:
            est = estimators.line_speedup(ctx.total, m)
            how = f"Est. {est.speedup:.2f}× (Starlight Eq. 3)."
        if est.speedup < 1.05:
            return []
        bound = f" The kernel is {ctx.roofline.bound}-bound on the roofline." if ctx.roofline is not None and ctx.roofline.bound else ""
        msg = (f"{pct(waiting / ctx.total)} of this kernel's samples ({provenance_note(ctx)}) wait on global loads inside "
               f"the loop at line {loop.header_line} ({len(loads_per_loop[loop_idx])} loads per iteration; "
               f"{describe_edge(hotspots(edges)[0])}).{bound} Threads of a block re-read the same elements from "
               f"global memory; load a tile once per block into `__shared__` memory, synchronize, and reuse it from "
               f"there (Starlight Table 1: increase shared-memory usage). {how}")
        return [self.advice(ctx, lines=[loop.header_line, *sorted(ln for ln in by_line if loop.span.contains_line(ln))],
                            importance=m / ctx.total, estimate=est, message=msg, hotspots=hotspots(edges))]


class ReducePrecision(Optimizer):
    """Low operational intensity in FP64: halving the element size halves the traffic."""

    name, title, group = "reduce_precision", "Reduce the data precision", "roofline"
    relieves = MEMORY_UNITS | {"fp64"}

    def match(self, ctx: MatchContext) -> list[Advice]:
        r = ctx.roofline
        if r is None or ctx.blame is None or ctx.total <= 0 or r.bound != "memory" or r.precision != "fp64":
            return []
        wide = [e for e in ctx.blame.edges_where(lambda e: e.category == GLOBAL)
                if any(w in ctx.instructions[e.def_index].modifiers for w in ("64", "F64"))]
        m = sum(e.samples for e in wide)
        if m / ctx.total < 0.05:
            return []
        # Halving the bytes of the wide loads removes about half of their memory stalls (Starlight Eq. 3).
        est = estimators.line_speedup(ctx.total, m / 2)
        lines = sorted({e.def_line for e in wide if e.def_line})
        perf = estimators.new_performance(est.speedup, r.points[0].performance) if r.points else 0.0
        msg = (f"The kernel is memory-bound in FP64 at {r.points[0].intensity:.3g} FLOP/byte "
               f"({provenance_note(ctx)}); {pct(m / ctx.total)} of its samples wait on 64-bit global loads. If FP32 "
               f"(or mixed precision) is accurate enough, the same work moves half the bytes (Starlight Table 1: "
               f"reduce operation precision). Est. {est.speedup:.2f}× (Starlight Eq. 3), about "
               f"{perf / 1e9:.3g} GFLOP/s (Eq. 4).")
        return [self.advice(ctx, lines=lines or [0], importance=m / ctx.total, estimate=est, message=msg)]
