"""The memory hierarchy with reuse (issue #33): L1 and L2 hit rates of each global memory
instruction, from the addresses the lanes really compute (`walk.py`).

Before this, every request went to DRAM: DRAM bytes equalled L2 bytes, so a naive SGEMM that gets
10x reuse in hardware, or a reduction reading 12 consecutive ints per thread, were modeled as
streaming everything from DRAM. The hierarchy here is fed by the walked warp's address stream:

* **L1 (per SM): a sector cache simulated over the block's warps.** The walked warp's accesses,
  in the order it made them, are the stream of warp 0; warp w's is the same stream moved by the
  per-instruction warp-to-warp translation that a second walk (warp 1) measured. A loop whose
  addresses step evenly is run on to `ITERATIONS` trips, so a lane stepping 4 B through a 32 B
  sector shows its one miss in eight. `SIM_WARPS` warps are interleaved in lock step through a
  cache of 128 B lines with 32 B sector valid bits (tags per line, fills per sector: the
  Fermi-to-Hopper L1 organisation, Jia et al. 2018), of the L1 capacity the block's share of the
  SM leaves: the unified array less the shared-memory carve-out (`DataCacheSpec.l1_bytes`),
  divided among the resident warps. Loads allocate; stores are written through and allocate
  nothing (they update sectors already present); `.STRONG.GPU/.SYS` loads bypass L1. The hit
  rate of a loop's instruction is its steady state (the later half of the simulated trips) over
  the trips not simulated.
* **L2 (one per GPU): reuse across blocks, by launch order.** A third and fourth walk (the next
  block along x, along y) give each instruction's block-to-block translation; the block's
  footprint F (every warp's sectors, all simulated trips) and its translates by Δ, 2Δ, … share
  what their union does not count twice. Blocks along a dimension share data when the reuse fits:
  they are resident at once (closer in launch order than one wave) or the data every block
  between them touches fits in L2. The distinct sectors a block contributes are then its
  footprint times, per dimension, |F ∪ (F+Δ) ∪ … ∪ (F+(g−1)Δ)| / (g·|F|), counted over
  `TRANSLATES` blocks and run on from the later half of them; a loop's footprint grows by the distinct sectors
  per trip of the simulated trips' later half; instructions reading the same data share it.
  An instruction's L2 misses are its distinct sectors, never more than the sectors it sends to
  L2: that is its hit rate.
* **DRAM = L2 misses + write-backs.** L2 is write-back: written sectors reach DRAM during the
  kernel only as far as the kernel's whole footprint overflows L2 (the fraction that does not
  fit); a kernel whose data fits writes nothing back before it ends (as the H100 reports measure).
  A launch also reads its code and constant banks from DRAM once, through L2 (`launch_fetch`);
  hit rates are the data accesses' alone.

What is not modeled: reuse in L1 between different blocks resident on one SM; L2's set
associativity and its two partitions (taken as one LRU of its full size); accesses whose addresses
the walk could not compute (data-dependent: no reuse, one sector per lane) and local memory
(interleaved per thread: its shape from the walked offsets, memory.walked_shapes; its hits from
the resident frames, model._local_in_l1). docs/emulator.md, "Memory hierarchy".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..frontend import isa
from ..profile import Assumption
from .decode import M_GLOBAL, DecodedKernel
from .memory import in_shared_window

#: trips a loop whose addresses step evenly runs in the simulation: a lane stepping 4 B crosses a
#: 32 B sector twice, so the steady state (the later half) holds one crossing
ITERATIONS = 16
#: warps of one block interleaved in the L1 simulation (a block's warps are translates of warp 0)
SIM_WARPS = 4
#: warps whose translates make a block's footprint (numpy, no LRU: cheap)
FOOTPRINT_WARPS = 32
#: blocks along a grid dimension whose footprints are united to count what they share (`_distinct_share`)
TRANSLATES = 8
#: trips of each loop entry the walk runs (walk.MAX_ITERATIONS)
WALKED_TRIPS = 4
#: L2 slots a store of part of a 32 B sector takes, against one for a whole sector: with ECC on
#: (the data-centre parts' default) L2 keeps a code per sector, so merging a partial write reads
#: the sector, merges and writes it back. 4 is an assumption: a read and a write, each a whole
#: 64 B slice access, is four 32 B sector slots; the H100's naive transposes (4-byte column
#: stores) run about that much slower than their full-sector traffic.
PARTIAL_WRITE_SLOTS = 4.0


@dataclass(frozen=True)
class CacheGeometry:
    l1_bytes: int  # L1 data capacity of one SM: the unified array less the shared-memory carve-out
    line_bytes: int
    sector_bytes: int
    l2_bytes: int
    warps_per_block: int
    blocks_per_sm: int
    resident_blocks: int  # blocks resident on the whole GPU at once (one wave)
    grid: tuple[int, int, int]
    #: bytes one L2 miss fetches from DRAM: the L2 fetch granularity (CUDA's
    #: cudaLimitMaxL2FetchGranularity, a hint of 0-128 B); 64 B is what the H100 examples measure
    #: (strided_access: one 4 B lane per 128 B line moves twice its distinct sectors)
    granule_bytes: int = 64


@dataclass(frozen=True)
class SlotRates:
    l1_hit: float  # fraction of the instruction's sectors served by L1
    l1_miss: float  # fraction of its executions with at least one sector from L2
    l2_hit: float  # fraction of the sectors it sends to L2 that L2 serves (stores: not written back)
    dram_scale: float = 1.0  # DRAM bytes per missed byte (a 64 B fetch for a lone 32 B sector)
    l2_cost: float = 1.0  # L2 slots per sector sent, relative to a whole sector (partial writes)


@dataclass(frozen=True)
class Hierarchy:
    rates: dict[int, SlotRates]  # slot -> rates, for the global accesses the walk followed
    warps: int  # warps interleaved in the L1 simulation
    footprint_bytes: float  # distinct bytes the followed accesses touch over the grid
    written_back: float  # fraction of written sectors evicted to DRAM during the kernel
    shared_dims: tuple[str, ...]  # grid dimensions whose block-to-block translation was executed


@dataclass
class _Stream:
    """One global instruction's executions by warp 0, run on where its addresses step evenly."""

    slot: int
    load: bool
    l1: bool  # allocates in L1
    times: list[float]
    addrs: list[np.ndarray]  # int64 byte addresses of the active lanes
    trip: int  # executions one entry of its loop makes (1 outside loops)
    extended: bool


def _streams(k: DecodedKernel, accesses: dict) -> dict[int, _Stream]:
    out: dict[int, _Stream] = {}
    for s, execs in accesses.items():
        if k.mem[s] != M_GLOBAL or not execs:
            continue
        ins = k.instr[s]
        info = isa.opcode_info(ins.opcode)
        if info.memory_space not in ("global", "generic") or any(a.addresses is None for a in execs):
            continue
        if in_shared_window(execs[0].addresses):
            continue
        # 64-bit addresses as int64 bit patterns: an address past 2**63 (an index the launch does
        # not give, taken as a large unsigned value) wraps, and sectors and differences stay exact
        addrs = [np.asarray(a.addresses, dtype=np.uint64).view(np.int64) for a in execs]
        times = [float(a.step) for a in execs]
        L = k.loop_of[s]
        trip = max(1, k.loops[L].trip) if L >= 0 else 1
        load = info.access is isa.Access.LOAD
        # strong (volatile/atomic-ordered) accesses go to L2; so does cp.async.cg (LDGSTS.BYPASS:
        # "cache at global level, L2 and below, not L1", PTX ISA cache operators)
        bypass = any(m in ins.full_opcode for m in (".STRONG.GPU", ".STRONG.SYS", ".MMIO", ".BYPASS"))
        out[s] = _Stream(s, load, load and not bypass, times, addrs, trip, False)
    return out


def _extend(streams: dict[int, _Stream]) -> None:
    """Run on each loop instruction whose lanes step evenly to `ITERATIONS` trips, and stretch the
    warp's time line so that what followed its walked trips follows the added ones."""
    runs: list[tuple[_Stream, float, int]] = []  # (stream, step per trip, trips walked)
    for st in streams.values():
        n = len(st.addrs)
        if n < 3 or st.trip <= n or any(a.shape != st.addrs[0].shape for a in st.addrs):
            continue
        d = st.addrs[1] - st.addrs[0]
        p = st.times[1] - st.times[0]
        if p <= 0 or any(not np.array_equal(st.addrs[j + 1] - st.addrs[j], d) or st.times[j + 1] - st.times[j] != p
                         for j in range(n - 1)):
            continue
        st.addrs += [st.addrs[0] + j * d for j in range(n, min(st.trip, ITERATIONS))]
        st.extended = True
        runs.append((st, p, n))
    # one loop's instructions end their walked trips within one trip of each other: one stretch each
    ends: list[tuple[float, float, float]] = []  # (end of the walked trips, step per trip, time added)
    for st, p, n in runs:
        end, added = st.times[-1], (len(st.addrs) - n) * p
        same = next((i for i, (e, q, _) in enumerate(ends) if abs(e - end) <= max(p, q)), None)
        if same is None:
            ends.append((end, p, added))
        else:
            e, q, a = ends[same]
            ends[same] = (max(e, end), q, max(a, added))

    def moved(t: float) -> float:
        return t + sum(a for e, _, a in ends if e < t)

    for st in streams.values():
        st.times = [moved(t) for t in st.times]
    for st, p, n in runs:
        last = st.times[-1]
        st.times += [last + (j - n + 1) * p for j in range(n, len(st.addrs))]


#: the farthest two warps' or blocks' accesses of one array can lie apart: 1 TiB, beyond any device's
#: memory. Lane addresses are 64-bit values that wrap; two farther apart (an index the model read from
#: memory it does not know, Rodinia's b+tree `knodes[currKnode[bid]]`) are no translation of one
#: array, and their difference does not fit the 64-bit arithmetic of the footprints below.
MAX_TRANSLATION = 1 << 40


def translation(a: list, b: list) -> int | None:
    """The byte offset that moves every lane of every execution of `a` onto `b`, if one does."""
    n = min(len(a), len(b))
    if n == 0:
        return None
    delta = None
    for x, y in zip(a[:n], b[:n]):
        if x.addresses is None or y.addresses is None or len(x.addresses) != len(y.addresses):
            return None
        d = set(int(v) - int(u) for u, v in zip(x.addresses, y.addresses))
        if len(d) != 1:
            return None
        (dv,) = d
        if delta is None:
            delta = dv
        elif dv != delta:
            return None
    return delta if delta is None or abs(delta) < MAX_TRANSLATION else None


class _L1:
    """128 B lines, each with its 32 B sectors' valid bits, replaced at (pseudo-)random.

    Not LRU: a warp set whose lines cycle through a cache a little too small keeps none of them
    under LRU (each line is evicted just before its reuse), a cliff the hardware does not show;
    random replacement keeps about capacity/working-set of them. NVIDIA does not document L1's
    policy; the deterministic generator keeps results reproducible.
    """

    __slots__ = ("lines", "order", "capacity", "seed")

    def __init__(self, capacity_lines: int) -> None:
        self.lines: dict[int, int] = {}
        self.order: list[int] = []  # resident lines, for picking a victim
        self.capacity = max(1, capacity_lines)
        self.seed = 0x9E3779B9

    def _victim(self) -> int:
        self.seed = (self.seed * 1103515245 + 12345) & 0x7FFFFFFF
        return self.seed % len(self.order)

    def access(self, masks: list[tuple[int, int]], shift: int, allocate: bool) -> tuple[int, int]:
        """(sectors, sectors that hit) of one warp-instruction: its (line, sector bits), lines moved by `shift`."""
        total = hit = 0
        lines = self.lines
        for ln, bits in masks:
            ln += shift
            total += bits.bit_count()
            have = lines.get(ln)
            if have is not None:
                hit += (have & bits).bit_count()
                if allocate:
                    lines[ln] = have | bits
            elif allocate:
                if len(self.order) >= self.capacity:
                    i = self._victim()
                    del lines[self.order[i]]
                    self.order[i] = self.order[-1]
                    self.order.pop()
                lines[ln] = bits
                self.order.append(ln)
        return total, hit


def _line_masks(addrs: np.ndarray, width: int, geo: CacheGeometry) -> list[tuple[int, int]]:
    """(128 B line, bit per 32 B sector) of the sectors the lanes' `width`-byte accesses touch."""
    sb, per_line = geo.sector_bytes, geo.line_bytes // geo.sector_bytes
    masks: dict[int, int] = {}
    for a in addrs.tolist():  # 32 lanes: plain ints beat numpy's per-call overhead
        for sec in {a // sb, (a + width - 1) // sb}:
            ln = sec // per_line
            masks[ln] = masks.get(ln, 0) | (1 << (sec % per_line))
    return list(masks.items())


def _partial_share(execs: list[np.ndarray], width: int, geo: CacheGeometry) -> float:
    """Of the sectors a store's executions write, the share its lanes fill only in part."""
    part = total = 0
    for a in execs:
        first = a // geo.sector_bytes
        if ((a + width - 1) // geo.sector_bytes != first).any():
            return 0.0  # a lane straddling sectors: not a pattern this rule describes
        sec, counts = np.unique(first, return_counts=True)
        total += len(sec)
        part += int((counts * width < geo.sector_bytes).sum())
    return part / total if total else 0.0


def _steady(per_trip: list[tuple[int, int]], trip: int, extended: bool) -> tuple[float, float]:
    """(sectors, hits) of all `trip` executions from the simulated ones: the later half of a run-on
    loop stands for the trips not simulated."""
    tot = sum(t for t, _ in per_trip)
    hit = sum(h for _, h in per_trip)
    m = len(per_trip)
    if not extended or trip <= m or m < 2:
        return float(tot), float(hit)
    tail = per_trip[m // 2:]
    scale = (trip - m) / len(tail)
    return tot + scale * sum(t for t, _ in tail), hit + scale * sum(h for _, h in tail)


def _distinct_share(addrs: np.ndarray, delta: int, g: int, granule: int, granules: np.ndarray) -> float:
    """Of the granules `g` blocks along one grid dimension touch, each block `delta` bytes on from
    the one before, the distinct share: |F ∪ (F+Δ) ∪ … ∪ (F+(g−1)Δ)| / (g·|F|).

    Counted over `TRANSLATES` blocks, not read off one neighbour: where blocks share a granule
    only at some alignments (finite-difference's 16 B pencils, four blocks to a 64 B granule), the
    overlap of block 0 with block 1 is 1 while blocks 3 and 4 share nothing. Past `TRANSLATES`
    blocks the later half's new granules per block stand for the rest. `granules` is F, the
    distinct granules of `addrs` (sorted): where Δ is a whole number of granules a translate is F
    moved by Δ/granule, the same count from far fewer values than the bytes' addresses."""
    if not len(granules):
        return 1.0
    if delta % granule == 0:
        base, step, div = granules, delta // granule, 1
    else:
        base, step, div = np.unique(addrs), delta, granule

    def union(m: int) -> int:  # granules of the first m blocks
        moved = base[None, :] + np.arange(m, dtype=np.int64)[:, None] * step
        return len(np.unique(moved // div if div > 1 else moved))

    n = min(g, TRANSLATES)
    f, whole = len(granules), union(n)
    if g <= n:
        return whole / (g * f)
    per_block = (whole - union(n // 2)) / (n - n // 2)
    return (whole + (g - n) * per_block) / (g * f)


def hierarchy(k: DecodedKernel, walk0, walk_warp1, walk_bx, walk_by, geo: CacheGeometry,
              width_of) -> Hierarchy:
    """The hit rates of every global instruction the walk followed (module docstring).

    `walk0` is warp 0's walk in the sampled block; `walk_warp1` warp 1's in the same block (None
    for a one-warp block); `walk_bx`/`walk_by` warp 0's in the next block along x/y (None where
    the grid has one block along it). `width_of(slot)` is the bytes one lane moves."""
    streams = _streams(k, walk0.accesses)
    if not streams:
        return Hierarchy({}, 0, 0.0, 0.0, ())
    _extend(streams)
    dw = {s: translation(walk0.accesses[s], walk_warp1.accesses.get(s, [])) if walk_warp1 is not None else None
          for s in streams}
    # an instruction whose warp-to-warp translation is not one offset (or was not reached by the
    # second walk) is simulated for warp 0 alone, its other warps' data taken as distinct
    translated = geo.warps_per_block > 1 and any(d is not None for d in dw.values())
    sim = min(SIM_WARPS, geo.warps_per_block) if translated else 1
    resident_warps = max(1, geo.warps_per_block * geo.blocks_per_sm)
    cap_lines = int(geo.l1_bytes / geo.line_bytes * sim / resident_warps)

    # ---- L1: the block's first `sim` warps in lock step
    events = sorted((t, w, s, i) for s, st in streams.items() for i, t in enumerate(st.times)
                    for w in range(sim if dw[s] is not None else 1))
    l1 = _L1(cap_lines)
    per: dict[int, list[list[int]]] = {s: [[0, 0, 0] for _ in st.times] for s, st in streams.items()}
    masks: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for _, w, s, i in events:
        st = streams[s]
        offset = w * dw[s] if w else 0
        shift, rest = divmod(offset, geo.line_bytes)
        key = (s, i, rest)  # a warp moved by whole lines reuses warp 0's masks
        if key not in masks:
            masks[key] = _line_masks(st.addrs[i] + rest, width_of(s), geo)
        allocate = st.l1 and geo.l1_bytes > 0
        tot, hit = l1.access(masks[key], shift, allocate)
        row = per[s][i]
        row[0] += tot
        row[1] += hit if allocate else 0
        row[2] += int(not allocate or hit < tot)

    # ---- L2: footprints, reuse across blocks
    db = {"x": walk_bx, "y": walk_by}
    shared_dims = tuple(d for d, wk in db.items() if wk is not None)
    gx, gy, gz = geo.grid
    n_blocks = max(1, gx * gy * gz)
    # warps whose translates make each instruction's block footprint, and their offsets
    wf = {s: min(FOOTPRINT_WARPS, geo.warps_per_block) if dw[s] is not None else 1 for s in streams}
    warp_offs = {s: (np.arange(wf[s], dtype=np.int64) * (dw[s] or 0))[:, None] for s in streams}
    foot: dict[int, np.ndarray] = {}
    half: dict[int, int] = {}
    for s, st in streams.items():
        a = np.concatenate(st.addrs)
        offs = warp_offs[s]
        foot[s] = np.unique((a[None, :] + offs) // geo.granule_bytes)
        m = len(st.addrs)
        h = np.concatenate(st.addrs[:max(1, m // 2)])
        half[s] = len(np.unique((h[None, :] + offs) // geo.granule_bytes))
    partial = {s: _partial_share(st.addrs[:len(walk0.accesses[s])], width_of(s), geo) for s, st in streams.items()
               if not st.load}
    rates: dict[int, SlotRates] = {}
    per_block_unique: dict[int, float] = {}
    per_block_requests: dict[int, float] = {}
    l1rates: dict[int, tuple[float, float]] = {}
    for s, st in streams.items():
        rows = per[s]
        m = len(rows)
        tot, hit = _steady([(r[0], r[1]) for r in rows], st.trip, st.extended)
        l1_hit = hit / tot if tot else 0.0
        sim_s = sim if dw[s] is not None else 1
        miss_exec = sum(r[2] for r in rows) / max(1, sim_s * m)
        l1rates[s] = (l1_hit, miss_exec if l1_hit < 1.0 else 0.0)
        # executions of warp 0 over the whole run: a run-on loop's trip count; a loop walked for
        # its first trips only (walk.MAX_ITERATIONS of each entry) scales by its trip count
        represented = st.trip if st.extended else m
        full_execs = float(st.trip if st.extended else m * max(1.0, st.trip / WALKED_TRIPS))
        per_exec = tot / max(1.0, sim_s * represented)
        per_block_requests[s] = per_exec * full_execs * geo.warps_per_block * (1.0 - l1_hit)
        # the block's distinct sectors over the whole run: a loop adds its later trips' new ones
        f, h0 = len(foot[s]), half[s]
        grow = max(0.0, (f - h0) / max(1, m - max(1, m // 2)))
        per_block_unique[s] = ((f + grow * max(0.0, full_execs - m)) * geo.warps_per_block / wf[s]
                               * geo.granule_bytes / geo.sector_bytes)  # in sectors
    # instructions that read the same data share it (a stencil's neighbours, a reloaded operand)
    loads = [s for s in streams if streams[s].load]
    for group in (loads, [s for s in streams if not streams[s].load]):
        if len(group) > 1:
            union = len(np.unique(np.concatenate([foot[s] for s in group])))
            c = union / max(1, sum(len(foot[s]) for s in group))
            for s in group:
                per_block_unique[s] *= c
    block_bytes = sum(per_block_unique.values()) * geo.sector_bytes
    strides = {"x": 1, "y": gx}
    for s, st in streams.items():
        factor = 1.0
        for d, wk in db.items():
            g = gx if d == "x" else gy
            if wk is None or g <= 1:
                continue
            delta = translation(walk0.accesses[s], wk.accesses.get(s, []))
            if delta is None:
                continue
            fits = strides[d] < geo.resident_blocks or strides[d] * block_bytes <= geo.l2_bytes
            if fits:
                factor *= _distinct_share((np.concatenate(st.addrs)[None, :] + warp_offs[s]).ravel(), delta, g,
                                          geo.granule_bytes, foot[s])
        per_block_unique[s] *= factor
    footprint = sum(per_block_unique.values()) * geo.sector_bytes * n_blocks
    written_back = min(1.0, max(0.0, 1.0 - geo.l2_bytes / footprint)) if footprint > 0 else 0.0
    # L2 misses are the distinct sectors, never more than L2 is sent. Which instruction brings a
    # sector to L2 first is L1's choice (a reloaded operand hits L1 in one instruction and misses
    # in another), so the rate is one per direction: loads, and stores (misses: write-backs)
    for group, keep in ((loads, 1.0), ([s for s in streams if not streams[s].load], written_back)):
        sent = sum(per_block_requests[s] for s in group)
        distinct = sum(per_block_unique[s] for s in group) * keep
        miss = distinct / sent if sent > 0 else 0.0
        for s in group:
            l1_hit, l1_miss = l1rates[s]
            # more distinct DRAM bytes than sectors sent: every sector misses, each fetching a granule
            rates[s] = SlotRates(l1_hit=l1_hit, l1_miss=l1_miss, l2_hit=1.0 - min(1.0, miss),
                                 dram_scale=max(1.0, miss),
                                 l2_cost=1.0 + (PARTIAL_WRITE_SLOTS - 1.0) * partial.get(s, 0.0))
    return Hierarchy(rates, sim, footprint, written_back, shared_dims)


#: a constant-bank operand with an immediate offset: `c[0x0][0x210]`, `c[0x3][R2+0x10]` (its offset part)
_CONSTANT = re.compile(r"c\[(0x[0-9a-fA-F]+)\]\[(?:[A-Z0-9_.]+\+)?(-?0x[0-9a-fA-F]+)\]")


#: the assumption that records a modeled launch's code and constant fetch, its value in bytes
FETCH = "launch_fetch"


@dataclass(frozen=True)
class LaunchFetch:
    """What one launch reads from DRAM besides its data, its caches cold (ncu flushes them before a
    measured launch): the code and the constant banks, each read from DRAM once and then from L2.
    Bytes, each a whole number of lines or granules."""

    code: int  # the code image's 128 B lines (the kernel, then its callees)
    run_ahead: int  # the lines the instruction stream buffer fetches past the code's end
    constants: int  # the constant-bank granules the SASS names

    @property
    def total(self) -> int:
        return self.code + self.run_ahead + self.constants

    def assumption(self) -> Assumption:
        """The fetch as the assumption a modeled profile carries: most of a small kernel's DRAM
        bytes, and the run-ahead (2 KiB of ~3 KB) is the i-cache model's, not a measurement."""
        return Assumption(
            name=FETCH, value=str(self.total), source="default",
            detail=f"bytes the launch reads from DRAM through L2 besides its data, counted in the L2 and DRAM "
                   f"bytes but not in the hit rates: its code ({self.code:,} B), the instruction stream buffer's "
                   f"run-ahead past the code's end ({self.run_ahead:,} B: the i-cache model's `prefetch_lines` "
                   f"depth, modeled, not measured) and its constant banks' granules ({self.constants:,} B)")


def launch_fetch(k: DecodedKernel, icache, granule_bytes: int = 64) -> LaunchFetch:
    """The code and constants one launch fetches (`LaunchFetch`).

    * Code: every 128 B line of the code image (the kernel, then its callees), and the
      `prefetch_lines` lines the instruction stream buffer (`units.InstructionCache`) runs on past
      the last one: a stream topped up `prefetch_lines` past each line a warp takes fetches that
      far beyond the code's end.
    * Constants: each `granule_bytes` granule of a constant bank that an instruction names (the
      launch's parameters and dimensions in bank 0, `__constant__` data in bank 3). An indexed
      read counts the granule of its immediate offset only.

    Kernels of a few microseconds move only this: on the H100 their measured DRAM bytes are
    2.8-3.3 KB, with 0.1-0.5 KB of data."""
    if not len(k):
        return LaunchFetch(0, 0, 0)
    line = icache.line_bytes if icache is not None else 128
    width = icache.instruction_bytes if icache is not None else 16
    ahead = icache.prefetch_lines if icache is not None else 0
    granules = {(m.group(1), int(m.group(2), 16) // granule_bytes)
                for ins in k.instr for op in ins.operands for m in _CONSTANT.finditer(op)}
    return LaunchFetch(code=-(-len(k) * width // line) * line, run_ahead=ahead * line,
                       constants=len(granules) * granule_bytes)


def fetched_bytes(assumptions: tuple[Assumption, ...]) -> float:
    """The launch fetch a modeled profile's assumptions record (`LaunchFetch.assumption`), 0 where
    none does (a measured profile: its counters do not separate it)."""
    return next((float(a.value) for a in assumptions if a.name == FETCH), 0.0)
