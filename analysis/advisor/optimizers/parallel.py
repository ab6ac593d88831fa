"""GPA Table II parallel optimizers and Starlight's "poor resource usage": blocks, threads, occupancy (Eq. 6–10)."""

from __future__ import annotations

import math

from ...emulator.memory import AddressAnalysis, active_lanes
from ...frontend import isa
from ...machine.occupancy import Occupancy, occupancy
from .. import estimators
from ..advice import Advice, Fix, SourceEdit
from .base import (SM_UNITS, MatchContext, Optimizer, WhatIfReads, back_edges, insert_edit, kernel_lines, line_list,
                   pct, provenance_note)

#: R_I assumed when there is no profile at all (no emulation): a warp issues one slot in four.
DEFAULT_ISSUE_RATIO = 0.25


def _issue_ratio(ctx: MatchContext) -> float:
    return ctx.active / ctx.total if ctx.total > 0 else DEFAULT_ISSUE_RATIO


def _launch(ctx: MatchContext) -> tuple[int, int] | None:
    """(blocks, threads per block) of the profiled launch."""
    if ctx.profile is None:
        return None
    return ctx.profile.launch.blocks, ctx.profile.launch.threads_per_block


def _one_dimensional(ctx: MatchContext) -> bool:
    """A 1-D launch block: its size is one literal a fix can change."""
    return ctx.profile is not None and tuple(ctx.profile.launch.block[1:]) == (1, 1)


def shape(block: tuple[int, ...]) -> str:
    """blockDim as the source writes it: 256, or (16, 16), or (8, 8, 4)."""
    dims = tuple(block)
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return str(dims[0]) if len(dims) == 1 else "(" + ", ".join(map(str, dims)) + ")"


def scaled(block: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    """The block with `factor` times its threads, changed along x first (x is the dimension whose
    neighbouring threads access neighbouring words, so it keeps accesses coalesced), then y, z;
    a shrink divides the outermost dimension that allows it first."""
    x, y, z = block
    if factor >= 1:
        f = int(round(factor))
        for i in range(3):
            dims = [x, y, z]
            dims[i] *= f
            if dims[0] <= 1024 and dims[1] <= 1024 and dims[2] <= 64 and dims[0] * dims[1] * dims[2] <= 1024:
                return (dims[0], dims[1], dims[2])
        return block
    f = int(round(1 / factor))
    for i in (2, 1, 0):
        dims = [x, y, z]
        if dims[i] % f == 0 and dims[i] // f >= 1:
            dims[i] //= f
            return (dims[0], dims[1], dims[2])
    return block


def warps_text(blocks: int, warps_per_block: int) -> str:
    return f"{blocks} block{'s' if blocks != 1 else ''} ({blocks * warps_per_block} warps)"


def _occ(ctx: MatchContext, block: int, regs: int | None = None, smem: int | None = None) -> Occupancy | None:
    if ctx.arch is None or block <= 0:
        return None
    r = regs if regs is not None else (ctx.resources.registers if ctx.resources else ctx.profile.registers_per_thread
                                       if ctx.profile else 32)
    static = smem if smem is not None else (ctx.resources.static_smem if ctx.resources else 0)
    dyn = ctx.profile.launch.dynamic_smem if ctx.profile is not None else 0
    try:
        return occupancy(ctx.arch, block, r, dyn, static)
    except ValueError:
        return None


def blocks_per_wave(ctx: MatchContext, threads: int) -> int | None:
    """The blocks of `threads` threads one wave holds: blocks per SM at their occupancy × SMs; None
    where the arch, the device or the occupancy is unknown."""
    occ = _occ(ctx, threads) if ctx.device is not None else None
    if occ is None or occ.active_blocks_per_sm <= 0:
        return None
    return occ.active_blocks_per_sm * ctx.device.sm_count


def waves(ctx: MatchContext) -> float | None:
    """The launch's blocks over the blocks one wave holds; None without a launch. On a launch the
    model assumed this is the assumed one's (the caller says so)."""
    launch = _launch(ctx)
    per_wave = blocks_per_wave(ctx, launch[1]) if launch is not None else None
    return launch[0] / per_wave if per_wave else None


def _block_arg(ctx: MatchContext):
    """The block-size argument of the kernel's launch site, when it is written as an integer literal."""
    if ctx.source is None or ctx.function_model is None:
        return None
    for site in ctx.source.launch_sites:
        if site.kernel == ctx.function_model.name and len(site.config) >= 2 and site.config[1].text.strip().isdigit():
            return site.config[1]
    return None


class BlockIncrease(Optimizer):
    """GPA: fewer blocks than SMs — whole SMs sit idle."""

    name, title, group = "block_increase", "Launch more blocks", "parallel"
    relieves = SM_UNITS  # idle SMs take work; L2 and DRAM are the GPU's
    importance_basis = "of the SMs idle"  # importance = 1 - blocks / SMs: not a share of samples

    @staticmethod
    def _idle(ctx: MatchContext) -> tuple[int, int, int, int, int, bool] | None:
        """(blocks, threads, SMs, warps per block, warp schedulers, whether the grid's warps are fewer
        than the schedulers) of a launch that leaves SMs or schedulers idle; None for any other."""
        launch = _launch(ctx)
        if launch is None or ctx.device is None or ctx.arch is None:
            return None
        blocks, threads = launch
        sms = ctx.device.sm_count
        warps_per_block = -(-threads // ctx.arch.warp_size)
        schedulers = sms * ctx.arch.schedulers_per_sm
        # a grid of as many blocks as SMs may still hold fewer warps than the schedulers (one thread per
        # row of a 8192-row softmax: 256 warps for 528 schedulers, half of them idle whatever the block);
        # only a thread that loops has work to split over more threads
        few_warps = (blocks >= sms and blocks * warps_per_block < schedulers and not ctx.assumed_launch
                     and bool(back_edges(ctx.instructions)))
        if blocks >= sms and not few_warps:
            return None
        return blocks, threads, sms, warps_per_block, schedulers, few_warps

    @classmethod
    def _split(cls, ctx: MatchContext) -> tuple[int, tuple[int, int, int]] | None:
        """(k, the smaller block) where the remedy is GPA's block increase, the same threads in k
        times as many blocks: k a power of two (it divides the block's dimensions) that leaves every
        block at least one warp per scheduler (GPA Eq. 6: fewer warps per scheduler than that idles
        it). None where the blocks are already that small, or the grid is short of schedulers, not
        of SMs: the remedy is then more threads, each with less work."""
        idle = cls._idle(ctx)
        if idle is None or idle[5]:
            return None
        blocks, _, sms, warps_per_block, _, _ = idle
        room = min(sms // max(blocks, 1), warps_per_block // ctx.arch.schedulers_per_sm)
        k = 1 << (room.bit_length() - 1) if room >= 1 else 1
        block = tuple(ctx.profile.launch.block)
        smaller = scaled(block, 1 / k) if k > 1 else block
        return (k, smaller) if smaller != block else None

    def what_if_reads(self, ctx: MatchContext) -> WhatIfReads:
        if self._idle(ctx) is None:
            return WhatIfReads()
        split = self._split(ctx)
        if split is not None:  # the split launch itself: its block size at the same threads
            return WhatIfReads(block_sizes=frozenset({math.prod(split[1])}))
        return WhatIfReads(grid_scaling=True)

    def match(self, ctx: MatchContext) -> list[Advice]:
        idle = self._idle(ctx)
        if idle is None:
            return []
        blocks, threads, sms, warps_per_block, schedulers, few_warps = idle
        split = self._split(ctx)
        if split is None and not back_edges(ctx.instructions):
            # more threads, each with less work, needs work to split: a thread that does not loop
            # already does the least a thread can (a grid as large as its data)
            return []
        grid = getattr(ctx.what_if, "grid_scaling", ()) or ()
        now = next((g for g in grid if g.blocks == blocks), grid[0] if grid else None)
        if split is not None:
            k, smaller = split
            split_threads = math.prod(smaller)
            if ctx.what_if_block.get(split_threads) and ctx.profile is not None:
                # the emulator's run of the split launch (SAAKE §5): the block size of the same total threads
                est = estimators.modeled_ratio(ctx.profile.duration_s, ctx.what_if_block[split_threads],
                                               f"block {split_threads}")
            else:  # a 2-D block is not swept (model.what_if_study): GPA Eq. 10
                w = warps_per_block / ctx.arch.schedulers_per_sm
                est = estimators.parallel(w, w / k, _issue_ratio(ctx))
        elif now is not None and len(grid) > 1 and now.blocks_per_s > 0:
            # The emulator's grid scaling: the same work per block over more blocks (SAAKE §5);
            # the throughput ratio is the speedup of the same total work split that way, which a
            # thread's loop allows.
            best = max(grid, key=lambda g: g.blocks_per_s)
            est = estimators.modeled_ratio(1.0 / now.blocks_per_s, 1.0 / best.blocks_per_s, f"{best.blocks} blocks")
        elif few_warps:
            est = estimators.idle_schedulers(blocks * warps_per_block, schedulers)
        else:
            est = estimators.balanced_blocks(blocks, sms)
        if est.speedup <= 1.0:
            return []
        line = ctx.function_model.name_span.start.line if ctx.function_model is not None else 0
        site = _block_arg(ctx)
        block = tuple(ctx.profile.launch.block)
        if few_warps:
            idle = schedulers - blocks * warps_per_block
            msg = (f"The launch has {blocks} blocks of {threads} threads, {blocks * warps_per_block} warps for the "
                   f"{schedulers} warp schedulers of {sms} SMs ({ctx.device.name}): {idle} schedulers get no warp "
                   f"whatever the block size ({provenance_note(ctx)}). Put more threads in the grid, each with less "
                   f"work (split a thread's loop over several threads, e.g. a warp per row), so that every scheduler "
                   f"gets a warp: at least {schedulers} warps. Est. {est.speedup:.2f}× ({est.formula.split(':')[0]}).")
            # this item's share is of the schedulers, not of the SMs' time like the optimizer's others
            item = self.advice(ctx, lines=[site.span.start.line if site else line] if (site or line) else [0],
                               importance=idle / schedulers, estimate=est, message=msg)
            return [item.model_copy(update={"importance_basis": "of the warp schedulers idle"})]
        if split is not None:
            # GPA's block increase: the same threads in k times as many blocks, so that k times as many
            # SMs get work (a block of 512 threads as 4 of 128: the published step kept the threads)
            how = (f"Split each block: blockDim {shape(block)} -> {shape(smaller)} with {k}× the blocks "
                   f"({blocks} -> {blocks * k}), the same threads, so that {min(sms, blocks * k)} SMs get a block.")
        else:
            how = (f"Put more threads in the grid, each with less work (e.g. smaller tiles), so that every SM gets "
                   f"a block: at least {sms} blocks" + (" (the blocks are already one warp)." if warps_per_block == 1
                                                         else "."))
        msg = (f"The launch has {blocks} block{'s' if blocks != 1 else ''} of {threads} threads for {sms} SMs "
               f"({ctx.device.name}): {sms - blocks} SMs get no work ({provenance_note(ctx)}). {how} "
               f"Est. {est.speedup:.2f}× ({est.formula.split(':')[0]}).")
        return [self.advice(ctx, lines=[site.span.start.line if site else line] if (site or line) else [0],
                            importance=1 - blocks / sms, estimate=est, message=msg)]


class ThreadIncrease(Optimizer):
    """GPA: occupancy limited by the blocks-per-SM cap because blocks are small. Any block shape: a
    2-D or 3-D block grows along x first (`scaled`), said as the exact blockDim change, unless it is
    the kernel's shared-memory tile; only a 1-D block, one literal, gets a mechanical fix."""

    name, title, group = "thread_increase", "Use larger blocks", "parallel"
    importance_basis = "of the warp slots empty"  # importance = 1 - occupancy

    @staticmethod
    def _growth(ctx: MatchContext) -> tuple[Occupancy, int, tuple[int, int, int]] | None:
        """(the launch's occupancy, the warps that fit with the larger block, that block) where blocks
        too small for the blocks-per-SM cap leave warp slots empty; None elsewhere."""
        launch = _launch(ctx)
        if launch is None or ctx.arch is None or ctx.swept_block:
            return None  # the program already launches the sweep's larger blocks (MatchContext.swept_block)
        _, threads = launch
        occ = _occ(ctx, threads)
        if occ is None or occ.limiter.value != "blocks" or occ.occupancy >= 1.0:
            return None
        block = tuple(ctx.profile.launch.block)
        if not _one_dimensional(ctx) and ctx.resources is not None and ctx.resources.static_smem > 0:
            # a 2-D or 3-D block with static shared memory is the kernel's tile (sgemm_tiled's TILE x TILE
            # indexes its arrays by threadIdx.y and .x): another block is another kernel, not a launch change
            return None
        # the smallest power-of-two growth that reaches the most resident warps
        cands = [(o.active_warps_per_sm, -f, new) for f in (2, 4, 8, 16, 32)
                 if (new := scaled(block, f)) != block and (o := _occ(ctx, new[0] * new[1] * new[2])) is not None]
        if not cands:
            return None
        new_warps, _, new_shape = max(cands)
        if new_warps <= occ.active_warps_per_sm:
            return None
        return occ, new_warps, new_shape

    def what_if_reads(self, ctx: MatchContext) -> WhatIfReads:
        grown = self._growth(ctx)
        return WhatIfReads(block_sizes=frozenset({math.prod(grown[2])}) if grown is not None else frozenset())

    def match(self, ctx: MatchContext) -> list[Advice]:
        grown = self._growth(ctx)
        if grown is None:
            return []
        occ, new_warps, new_shape = grown
        blocks, threads = _launch(ctx)
        block = tuple(ctx.profile.launch.block)
        new_block = math.prod(new_shape)
        s = ctx.arch.schedulers_per_sm
        w, w_new = occ.active_warps_per_sm / s, new_warps / s
        if ctx.what_if_block.get(new_block) and ctx.profile is not None:
            est = estimators.modeled_ratio(ctx.profile.duration_s, ctx.what_if_block[new_block], f"block {new_block}")
        else:
            # Thread increase keeps the work per scheduler: f = C_W leaves the issue-rate gain (GPA Eq. 10).
            est = estimators.parallel(w, w_new, _issue_ratio(ctx), factor=w_new / w)
        if est.speedup <= 1.0:
            return []
        site = _block_arg(ctx) if _one_dimensional(ctx) else None
        fix = Fix(kind="block_size", description=f"launch with {new_block} threads per block",
                  edits=(SourceEdit(line=site.span.start.line, col=site.span.start.col, end_line=site.span.end.line,
                                    end_col=site.span.end.col, new_text=str(new_block)),)) \
            if site and not ctx.assumed_launch else None  # never an edit of a launch the model assumed
        line = site.span.start.line if site else (ctx.function_model.name_span.start.line if ctx.function_model else 0)
        wpb = -(-threads // ctx.arch.warp_size)
        msg = (f"Blocks of {threads} threads ({wpb} warp{'s' if wpb != 1 else ''}) hit the limit of "
               f"{ctx.arch.max_blocks_per_sm} blocks per SM: {warps_text(occ.active_blocks_per_sm, wpb)} of "
               f"{occ.max_warps_per_sm} warp slots are used (occupancy {pct(occ.occupancy)}). Change blockDim "
               f"{shape(block)} -> {shape(new_shape)} (and the grid to cover the same threads): {new_warps} warps fit, "
               f"giving the schedulers more warps to hide latency ({provenance_note(ctx)}). "
               f"Est. {est.speedup:.2f}× ({est.formula.split(':')[0]}).")
        return [self.advice(ctx, lines=[line], importance=1 - occ.occupancy, estimate=est, message=msg, fix=fix)]


class OccupancyLimit(Optimizer):
    """Occupancy limited by registers or shared memory per thread/block (Starlight: poor resource usage)."""

    name, title, group = "occupancy_limit", "Raise occupancy", "parallel"
    importance_basis = "of the warp slots empty"  # importance = 1 - occupancy

    def match(self, ctx: MatchContext) -> list[Advice]:
        launch = _launch(ctx)
        if launch is None or ctx.arch is None:
            return []
        _, threads = launch
        occ = _occ(ctx, threads)
        if occ is None or occ.limiter.value not in ("registers", "shared_memory") or occ.occupancy > 0.5:
            return []
        regs = ctx.resources.registers if ctx.resources else ctx.profile.registers_per_thread
        if occ.limiter.value == "registers":
            # The fewest registers that still adds a block: the target `__launch_bounds__` asks ptxas for.
            target = next((r for r in range(regs - 8, 23, -8)
                           if (o := _occ(ctx, threads, regs=r)) and o.active_blocks_per_sm > occ.active_blocks_per_sm),
                          None)
            new = _occ(ctx, threads, regs=target) if target else None
            what = f"{regs} registers per thread"
        else:
            smem = ctx.resources.static_smem if ctx.resources else 0
            new = _occ(ctx, threads, smem=smem // 2)
            target = None
            what = f"{occ.shared_memory_per_block} bytes of shared memory per block"
        if new is None or new.active_warps_per_sm <= occ.active_warps_per_sm:
            return []
        s = ctx.arch.schedulers_per_sm
        w, w_new = occ.active_warps_per_sm / s, new.active_warps_per_sm / s
        est = estimators.parallel(w, w_new, _issue_ratio(ctx), factor=w_new / w)
        if est.speedup <= 1.0:
            return []
        fm = ctx.function_model
        fix = None
        if target and fm is not None and fm.launch_bounds is None:
            pos = fm.launch_bounds_insert
            fix = Fix(kind="launch_bounds", description=f"add `__launch_bounds__({threads}, {new.active_blocks_per_sm})`",
                      edits=(insert_edit(pos.line, pos.col, f"__launch_bounds__({threads}, {new.active_blocks_per_sm}) "),))
        line = fm.name_span.start.line if fm is not None else 0
        wpb = -(-threads // ctx.arch.warp_size)
        msg = (f"{what.capitalize()} limit this kernel to {warps_text(occ.active_blocks_per_sm, wpb)} per SM "
               f"(occupancy {pct(occ.occupancy)}). "
               + (f"Capping registers at {target} (`__launch_bounds__`) fits {new.active_warps_per_sm} warps; watch "
                  f"for spills. " if target else f"Halving it fits {new.active_warps_per_sm} warps. ")
               + f"More resident warps hide more latency ({provenance_note(ctx)}). Est. {est.speedup:.2f}× (GPA Eq. 10).")
        return [self.advice(ctx, lines=[line], importance=1 - occ.occupancy, estimate=est, message=msg, fix=fix,
                            detail=occ.limiter.value)]


class WaveTail(Optimizer):
    """The tail: the last wave of blocks fills few SMs, and it takes a full wave's time. Another block
    size for the same threads (threads or blocks increased or decreased) changes the blocks per wave
    and the number of blocks; the one whose waves are fullest is proposed, exactly."""

    name, title, group = "wave_tail", "Fill the last wave", "parallel"
    relieves = SM_UNITS
    importance_basis = "of the SM time idle in the tail"  # importance = 1 - W/⌈W⌉

    @staticmethod
    def _refill(ctx: MatchContext):
        """(blocks, threads, blocks per wave, the estimate, the new block, the new grid) of the block
        shape for the same threads whose waves are fullest, where that gains 5 % or more; None
        elsewhere."""
        launch = _launch(ctx)
        if launch is None or ctx.arch is None or ctx.device is None or ctx.assumed_launch:
            return None  # on an assumed launch the waves are a guess: withheld
        blocks, threads = launch
        sms = ctx.device.sm_count
        per_wave = blocks_per_wave(ctx, threads)
        if per_wave is None or blocks <= sms:
            return None
        if blocks <= per_wave or estimators.wave_efficiency(blocks, per_wave) >= 0.9:
            return None  # one wave, or tails under 10 %: nothing to gain worth a change
        block = tuple(ctx.profile.launch.block)
        total = blocks * threads
        best = None
        for f in (1 / 2, 2, 1 / 4, 4):  # the nearest shape first: a tie keeps it
            new = scaled(block, f)
            t_new = new[0] * new[1] * new[2]
            if new == block or t_new < ctx.arch.warp_size or total % t_new:
                continue
            new_per_wave = blocks_per_wave(ctx, t_new)
            if new_per_wave is None:
                continue
            est = estimators.tail(blocks, per_wave, total // t_new, new_per_wave)
            if best is None or est.speedup > best[0].speedup:
                best = (est, new, total // t_new)
        if best is None or best[0].speedup < 1.05:
            return None
        return (blocks, threads, per_wave, *best)

    def what_if_reads(self, ctx: MatchContext) -> WhatIfReads:
        refill = self._refill(ctx)
        return WhatIfReads(block_sizes=frozenset({math.prod(refill[4])}) if refill is not None else frozenset())

    def match(self, ctx: MatchContext) -> list[Advice]:
        refill = self._refill(ctx)
        if refill is None:
            return []
        blocks, threads, per_wave, est, new, new_blocks = refill
        sms = ctx.device.sm_count
        block = tuple(ctx.profile.launch.block)
        if ctx.what_if_block.get(new[0] * new[1] * new[2]) and ctx.profile is not None:
            est = estimators.modeled_ratio(ctx.profile.duration_s, ctx.what_if_block[new[0] * new[1] * new[2]],
                                           f"block {new[0] * new[1] * new[2]}")
            if est.speedup <= 1.0:
                return []
        new_waves = est.inputs.get("W_new", 0.0)
        line = ctx.function_model.name_span.start.line if ctx.function_model is not None else 0
        site = _block_arg(ctx)
        msg = (f"{blocks} blocks of {threads} threads at {per_wave} per wave ({per_wave // sms} per SM × "
               f"{sms} SMs) make {blocks / per_wave:.2f} waves: the last one keeps "
               f"{pct(blocks / per_wave - (blocks // per_wave))} of the SMs busy for a full wave's time "
               f"({provenance_note(ctx)}). Change blockDim {shape(block)} -> {shape(new)} and the grid {blocks} -> "
               f"{new_blocks} blocks (the same threads)" + (f": {new_waves:.2f} waves" if new_waves else "") +
               f". Est. {est.speedup:.2f}× ({est.formula.split(':')[0]}).")
        return [self.advice(ctx, lines=[site.span.start.line if site else line], estimate=est, message=msg,
                            importance=1 - estimators.wave_efficiency(blocks, per_wave))]


#: the most elements a coarsened thread is asked to take on (how-to-optimize's reduce v6 and CUB's
#: block reductions take 2-16 per thread)
MAX_COARSENING = 8


class ThreadCoarsening(Optimizer):
    """Fewer blocks, more elements per thread: a kernel whose threads each load a fixed few elements
    and whose blocks then combine them into one result (a reduction in shared memory, behind
    barriers, stored by one thread) pays that combining phase once per block; with k times the
    elements per thread (a grid-stride loop over the input) the grid has k times fewer blocks and
    the phase runs k times fewer times.
    Not GPA's (its parallel optimizers only increase blocks or threads); estimated by GPA Eq. 2 over
    the phase's own cost."""

    name, title = "thread_coarsening", "Fewer blocks, more elements per thread"
    relieves = SM_UNITS  # the per-block phase runs k times less often
    # a change of the work per thread, with its share of samples: a line-bounded item like the code
    # optimizers, withheld where the launch (so the waves) is assumed
    group = "code"

    def match(self, ctx: MatchContext) -> list[Advice]:
        launch = _launch(ctx)
        if launch is None or ctx.arch is None or ctx.device is None or ctx.assumed_launch or ctx.total <= 0:
            return []
        blocks, threads = launch
        per_wave = blocks_per_wave(ctx, threads)
        if per_wave is None:
            return []
        k = 1
        while k < MAX_COARSENING and blocks // (2 * k) >= per_wave:
            k *= 2  # the grid keeps at least one full wave
        if k < 2:
            return []
        ins = ctx.instructions
        loads = [i for i in ins if i.opcode in ("LDG", "LD") and i.memory_space in ("global", "generic", None)]
        barriers = [i for i in ins if i.opcode == "BAR"]
        loops = back_edges(ins)
        if not loads or not barriers or any(head <= i.index < latch for i in loads for head, latch in loops):
            return []  # no combining phase, or the threads already loop over their elements
        last = max(i.index for i in loads)
        phase = [i for i in ins[last + 1:] if i.opcode not in ("EXIT", "RET", "BRA")]
        if not any(b.index > last for b in barriers):
            return []
        # a combining phase leaves one result per block (one thread stores it: `if (tid == 0)`); a
        # phase whose every thread stores (a stencil's halo, then its outputs) is per-element work
        # that k times the elements per thread would not amortise
        warps = -(-threads // ctx.arch.warp_size)
        aa = AddressAnalysis(ins)
        results = [i for i in phase if isa.access_direction(i) in (isa.Access.STORE, isa.Access.ATOMIC)
                   and i.memory_space in ("global", "generic", None)]
        if not results or any(active_lanes(ins, aa, i.index, ctx.arch.warp_size, tuple(ctx.profile.launch.block))
                              * warps > 1 for i in results):
            return []
        m = ctx.weight(phase)
        share = m / ctx.total
        if share < 0.1:
            return []
        est = estimators.stall_elimination(ctx.total, m, 1.0 - 1.0 / k)
        if est.speedup < 1.05:
            return []
        lines = kernel_lines(phase) or [0]
        msg = (f"Each of the {blocks} blocks ({blocks / per_wave:.0f} waves of {per_wave}) loads a fixed few elements per "
               f"thread, then combines them behind {len(barriers)} barrier{'s' if len(barriers) != 1 else ''}: "
               f"{pct(share)} of this kernel's samples ({provenance_note(ctx)}) are in that per-block phase ("
               f"{line_list(lines)}). Launch fewer blocks with more elements per "
               f"thread: {blocks} -> {blocks // k} blocks, each thread adding {k}× the elements in a grid-stride loop "
               f"before the block combines them, so the phase runs {k}× less often. Est. {est.speedup:.2f}× (GPA Eq. 2: "
               f"{k - 1} of {k} of the phase's cost removed).")
        return [self.advice(ctx, lines=lines, importance=share, estimate=est, message=msg, changes=phase)]

