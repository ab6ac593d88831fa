"""Hardware units of the abstract SM (SAAKE §4.1, Fig. 4), one small class each.

In llvm-mca's terms these are the `HardwareUnits/`: a `Pipe` is SAAKE's resource with a
latency L and a gap G and a `pipe_admit` time; the `Scoreboard` tracks when a warp's registers
and its six control-code barriers become ready; the `BlockBarrier` holds warps at
`__syncthreads`; the `MemoryHierarchy` routes one memory instruction through LSU/L1, L2 and
DRAM (or shared, constant) pipes; the `InstructionCache` holds the code lines (L0 per SMSP, L1
per SM) that instruction fetch needs; the `WarpScheduler` picks the warp to issue with a pluggable
policy (GTO by default, SAAKE §4.2, Rogers et al.).

All numbers (latencies, gaps) come from the arch data (`MachineModel.from_arch`); the engine
never names a number.
"""

from __future__ import annotations

import math
import operator
from bisect import insort
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from heapq import heappop, heappush

from ..frontend.isa import flops
from ..profile import StallReason

INF = math.inf

#: Resource classes of the arch latency table (`analysis/machine/arch.py: Resource`), in a fixed order:
#: the engine refers to a resource by its position here.
RESOURCES: tuple[str, ...] = ("fp32", "fp64", "fp16", "int", "sfu", "conversion", "tensor", "lsu",
                              "shared", "l2", "dram", "constant", "branch", "barrier", "atomic", "l2_atomic")
RES_ID = {name: i for i, name in enumerate(RESOURCES)}
_TENSOR = RES_ID["tensor"]

#: Where a resource lives. The arch gaps are per SMSP (a sub-partition's share); an SM-wide unit
#: shared by fewer active sub-partitions serves each faster, a GPU-wide one (L2, DRAM) serves
#: each active SM faster when fewer SMs run (what the roofline trajectory needs, §7).
SCOPE: dict[str, str] = {"lsu": "sm", "shared": "sm", "constant": "sm", "atomic": "sm",
                         "l2": "gpu", "dram": "gpu", "l2_atomic": "gpu"}

#: Nsight Compute's throttle reason when a warp cannot issue because the unit's input is full.
#: MIO feeds shared memory, special math, dynamic branches and constants (ncu warp-state docs).
THROTTLE_REASON: dict[str, StallReason] = {
    **{r: StallReason.math_pipe_throttle for r in ("fp32", "fp64", "fp16", "int", "conversion", "tensor")},
    **{r: StallReason.mio_throttle for r in ("sfu", "shared", "constant", "branch", "barrier", "atomic")},
    **{r: StallReason.lg_throttle for r in ("lsu", "l2", "dram", "l2_atomic")},
}

#: Requests a unit queues before issue blocks (a throttle stall). Math pipes have no queue: a
#: warp waits at issue (math_pipe_throttle). Memory units queue; SAAKE's Alg. 1 assumes an
#: unbounded queue, which these depths approach while still producing lg/mio throttles.
QUEUE_DEPTH: dict[str, int] = {"lsu": 32, "shared": 16, "constant": 8, "atomic": 16, "sfu": 4,
                               "l2": 64, "dram": 64, "branch": 2, "barrier": 2, "l2_atomic": 64}

#: Updates to one global address the GPU completes per cycle: the L2 slice that owns the word
#: performs them one after another. NVIDIA gives "one operation per clock" for atomics to a common
#: global address (Kepler GK110 whitepaper, 2012, and the Kepler Tuning Guide); no later
#: architecture documents a figure, so the same is assumed for all (docs/emulator.md).
SAME_ADDRESS_UPDATES_PER_CYCLE = 1.0


@dataclass(frozen=True)
class ResourceParams:
    """SAAKE §3.1: L = cycles before a dependent op may start, G = cycles between two admissions."""

    latency: float
    gap: float


@dataclass(frozen=True)
class ICacheParams:
    """The instruction-cache hierarchy (arch data `icache`): capacities in lines, fetch latencies in cycles."""

    l0_lines: int  # per SM sub-partition
    l1_lines: int  # per SM
    line_bytes: int
    instruction_bytes: int
    l0_miss_latency: float  # L0 miss, L1 hit
    l1_miss_latency: float  # both miss
    prefetch_lines: int = 0  # the stream buffer's depth per SM sub-partition; 0: no prefetch
    l0_fill_cycles: float = 0.0  # cycles between two lines arriving into one L0 from L1; 0: no limit
    l1_fill_cycles: float = 0.0  # cycles between two lines arriving into the SM's L1 from beyond


@dataclass(frozen=True)
class MachineModel:
    """The latency/gap table the engine runs on, plus issue width. Immutable; perturbed by copy."""

    params: tuple[ResourceParams, ...]  # indexed like RESOURCES
    schedulers_per_sm: int
    warp_size: int = 32
    issue_per_cycle: int = 1  # instructions per scheduler per cycle
    queue_depth: tuple[int, ...] = field(default_factory=lambda: tuple(QUEUE_DEPTH.get(r, 0) for r in RESOURCES))
    icache: ICacheParams | None = None  # None: every fetch hits (no instruction-fetch stalls)
    #: FLOP per lane of the warp-instruction the tensor gap is one admission of (the arch's
    #: `results_per_lane`: HMMA.16816's 2·16·8·16/32 = 128)
    tensor_lane_flops: float = 128.0
    #: the device's FP16-input, FP32-accumulate tensor rate over its FP16-accumulate rate (0.5 on
    #: GeForce boards: `DeviceSpec.tensor_fp32_accumulate_ratio`)
    tensor_fp32_accumulate_ratio: float = 1.0

    def latency(self, name: str) -> float:
        return self.params[RES_ID[name]].latency

    def gap(self, name: str) -> float:
        return self.params[RES_ID[name]].gap

    def with_param(self, name: str, *, latency_scale: float = 1.0, gap_scale: float = 1.0) -> MachineModel:
        """A copy with one resource's L and/or G scaled: the sensitivity experiment (SAAKE §3.3)."""
        i = RES_ID[name]
        p = self.params[i]
        new = ResourceParams(p.latency * latency_scale, p.gap * gap_scale)
        return replace(self, params=self.params[:i] + (new,) + self.params[i + 1:])

    def shared_by(self, active_smsps: int, active_sms: int, sm_count: int) -> MachineModel:
        """Gaps as seen by one SMSP when only some sub-partitions / SMs compete for shared units."""
        f_sm = max(1, active_smsps) / self.schedulers_per_sm
        f_gpu = f_sm * max(1, active_sms) / max(1, sm_count)
        out = []
        for name, p in zip(RESOURCES, self.params):
            scope = SCOPE.get(name)
            f = f_sm if scope == "sm" else f_gpu if scope == "gpu" else 1.0
            out.append(ResourceParams(p.latency, p.gap * f))
        return replace(self, params=tuple(out))


#: Tensor-core inputs per FLOP relative to FP16/BF16, from the whitepapers' dense peaks (A100
#: whitepaper Table 1: TF32 156, FP16 312, INT8 624, INT4 1248 T(FL)OPS; GA102 whitepaper: the
#: same ratios on the RTX 3090): a TF32 MMA takes twice an FP16 MMA's time per FLOP, an INT8 one
#: half, an INT4 one a quarter.
_TENSOR_INPUT_COST = {"TF32": 2.0, "S8": 0.5, "U8": 0.5, "S4": 0.25, "U4": 0.25}


def pipe_units(ins, pipe: int, m: MachineModel) -> float:
    """Admissions of its pipe one execution of `ins` takes: 1, except an HMMA/IMMA, whose gap
    the arch rate gives in FLOP (`rate_per_sm`, the FP16-accumulate rate of an HMMA.16816): a
    smaller shape (Turing's HMMA.1688, TF32's HMMA.1684) takes its FLOP's share, the input type
    its cost above, and an FP32 accumulator on a board that runs it at a lower rate (GeForce:
    GA102/AD102/RTX Blackwell whitepapers) 1 / that ratio."""
    if pipe != _TENSOR or ins.opcode not in ("HMMA", "IMMA"):
        return 1.0
    fl = flops(ins)
    if not fl:
        return 1.0
    units = fl / m.tensor_lane_flops
    mods = ins.modifiers
    units *= next((c for mod in mods[1:] if (c := _TENSOR_INPUT_COST.get(mod)) is not None), 1.0)
    if ins.opcode == "HMMA" and "F32" in mods:  # the accumulator (BF16 and TF32 always accumulate in FP32)
        units /= m.tensor_fp32_accumulate_ratio
    return units


class Pipe:
    """One SAAKE resource (§4.1): `admit` is pipe_admit, the earliest time a new request may enter.

    `accept` is Alg. 1 lines 13–14: start = max(t, pipe_admit); fin = start + L; pipe_admit += G.
    A request of `units` (replays, sectors) holds the input for units·G and completes
    (units−1)·G after its first unit.
    """

    __slots__ = ("name", "latency", "gap", "admit", "backlog", "busy")

    def __init__(self, name: str, params: ResourceParams, queue_depth: int) -> None:
        self.name = name
        self.latency = params.latency
        self.gap = params.gap
        self.admit = 0.0
        # issue blocks while the queue holds more than this many cycles of work
        self.backlog = queue_depth * params.gap
        self.busy = 0.0

    def blocked_until(self) -> float:
        """Earliest issue time allowed by the unit's input queue (a throttle when in the future)."""
        return self.admit - self.backlog

    def accept(self, t: float, units: float = 1.0) -> float:
        """Admit a request at `t`; return the time its result is ready."""
        start = t if t > self.admit else self.admit
        hold = self.gap * units
        self.admit = start + hold
        self.busy += hold
        return start + self.latency + hold - self.gap


class Scoreboard:
    """Per-warp readiness: a ready time and a stall reason per register and per control barrier.

    Registers capture true dependences through modeled finish times (SAAKE §4.1: "dependences are
    tracked through finish times"); barriers SB0–SB5 are the control codes' variable-latency
    dependences, which also cover write-after-read on stores (GPA Fig. 3 treats them as virtual
    registers the same way).
    """

    __slots__ = ("reg_ready", "reg_reason", "sb_ready", "sb_reason")

    def __init__(self, n_regs: int) -> None:
        self.reg_ready = [0.0] * n_regs
        self.reg_reason = [0] * n_regs
        self.sb_ready = [0.0] * 6
        self.sb_reason = [0] * 6


class WarpState:
    """A warp's architectural position and timing (SAAKE Alg. 1: cur_inst, earl_t)."""

    __slots__ = ("wid", "block", "age", "slot", "earl", "constraints", "prev_issue", "done", "at_barrier",
                 "sb", "loop_count", "call_stack", "call_buckets", "bucket", "stores_done", "throttled_until", "res", "wall_snap", "smsp", "iline",
                 "async_open", "async_groups")

    def __init__(self, wid: int, block: int, age: int, n_regs: int, n_loops: int) -> None:
        self.wid = wid
        self.block = block
        self.age = age
        self.slot = 0  # index into the decoded code
        self.earl = 0.0  # earliest issue time from the warp's own dependences
        self.constraints: list[tuple[float, int]] = []  # (time, reason code) that make up `earl`
        self.prev_issue = -1.0
        self.done = False
        self.at_barrier = False
        self.sb = Scoreboard(n_regs)
        self.loop_count = [0] * n_loops  # back edges taken since the loop was entered
        self.call_stack: list[int] = []
        self.call_buckets: list[int] = []  # the bucket of each pending call site
        self.bucket = 0  # sampling bucket (0 = not in a sampled loop's steady state)
        self.stores_done = 0.0  # when this warp's outstanding stores have drained
        self.throttled_until = -1.0
        self.smsp = 0  # which emulated sub-partition (scheduler and pipes) the warp runs on
        self.wall_snap: list[float] | None = None  # SM wall time per bucket at the last issue
        self.res = 0  # issue resource of the current instruction (a throttle check without a lookup)
        self.iline = -1  # instruction-cache line the warp's fetch buffer holds
        self.async_open = 0.0  # when the async copies (LDGSTS) since the last commit complete
        self.async_groups: list[float] = []  # completion of each committed group (LDGDEPBAR) not yet waited on


class BlockBarrier:
    """`__syncthreads` (BAR.SYNC): SAAKE §4.4 — every warp of the block waits until all arrive."""

    __slots__ = ("live", "waiting", "latest")

    def __init__(self, warps: int) -> None:
        self.live = warps
        self.waiting: list[WarpState] = []
        self.latest = 0.0

    def arrive(self, w: WarpState, t: float) -> list[WarpState] | None:
        """Register an arrival; return the warps to release when the block is complete."""
        self.waiting.append(w)
        self.latest = max(self.latest, t)
        return self._maybe_release()

    def leave(self) -> list[WarpState] | None:
        """A warp exited: the barrier counts one warp fewer."""
        self.live -= 1
        return self._maybe_release()

    def _maybe_release(self) -> list[WarpState] | None:
        if self.waiting and len(self.waiting) >= self.live:
            out, self.waiting = self.waiting, []
            return out
        return None


class MemoryHierarchy:
    """Routes a memory instruction through its pipes (SAAKE §4.4).

    Global/local: LSU (one admission per 128 B wavefront, the L1 hit latency); an execution with a
    sector L1 does not hold continues to L2 (per 128 B of the sectors it misses); an L2 miss
    continues to DRAM. The rates come from the cache model (`caches.py`). SAAKE assigns each access
    to L2 or DRAM at random with the given hit probability; we do the same deterministically with
    error diffusion, one accumulator per instruction and level, so each instruction's misses match
    its own rates (one accumulator shared by instructions of different rates would send the wrong
    share on, and the pipes would see fewer or more bytes than the traffic report counts).
    Shared: the LD/ST units (the LSU pipe, one admission per instruction), then the shared pipe,
    replayed once per bank-conflict wavefront; it is the L1/shared data array, which a global
    request's wavefronts pass as well. Constant: the constant cache.
    Atomics: the atomic unit after the LSU.
    """

    __slots__ = ("pipes", "_hit_acc", "_l1_acc")

    def __init__(self, pipes: list[Pipe]) -> None:
        self.pipes = pipes
        self._hit_acc: dict[int, float] = {}
        self._l1_acc: dict[int, float] = {}

    @staticmethod
    def _diffuse(acc_of: dict[int, float], rate: float, key: int, first: float = 0.0) -> bool:
        acc = acc_of.get(key, first) + rate
        hit = acc >= 1.0 - 1e-9
        acc_of[key] = acc - 1.0 if hit else acc
        return hit

    def l2_hit(self, rate: float, key: int = -1) -> bool:
        return self._diffuse(self._hit_acc, rate, key)

    def shared_access(self, t: float, wavefronts: float) -> float:
        """A shared-memory instruction: its 32 addresses pass the SMSP's LD/ST units (one LSU
        admission: 4 units per SMSP on TU10x/GA10x/AD10x take 8 cycles, 8 units 4; the
        whitepapers' SM diagrams), then its wavefronts the data array."""
        lsu = self.pipes[RES_ID["lsu"]]
        start = t if t > lsu.admit else lsu.admit
        lsu.admit = start + lsu.gap
        lsu.busy += lsu.gap
        return self.pipes[RES_ID["shared"]].accept(start, wavefronts)

    def global_access(self, t: float, wavefronts: float, requests: float, hit_rate: float, key: int = -1,
                      l1_miss_rate: float = 1.0, dram_scale: float = 1.0, l2_cost: float = 1.0,
                      l1_key: int = -1) -> float:
        """`requests`: the 128 B units an execution that misses L1 sends to L2; DRAM moves
        `dram_scale` times what misses L2 (its fetch granularity)."""
        p = self.pipes
        lsu, l2, dram, data = p[RES_ID["lsu"]], p[RES_ID["l2"]], p[RES_ID["dram"]], p[RES_ID["shared"]]
        fin_lsu = lsu.accept(t, wavefronts)
        # Global, local and shared requests pass the same L1TEX stages, one wavefront per cycle
        # (Nsight Compute's developers: forums.developer.nvidia.com/t/165293), so a global
        # request's wavefronts hold the data array the shared pipe models too; a request that
        # finds it busy with shared wavefronts returns that much later
        late = data.accept(t, wavefronts) - data.latency - (fin_lsu - lsu.latency)
        if late > 0:
            fin_lsu += late
        # a warp's first execution of an instruction misses L1 (its sectors are not there yet),
        # then one in 1/rate: a sampled loop's few trips see the cold miss, not a run of hits
        if l1_miss_rate < 1.0 and not self._diffuse(self._l1_acc, l1_miss_rate, l1_key, 1.0 - l1_miss_rate):
            return fin_lsu  # every sector in L1
        start_l2 = fin_lsu - lsu.latency
        fin = l2.accept(start_l2, requests * l2_cost)
        if requests > 0 and not self.l2_hit(hit_rate, key):
            fin = dram.accept(fin - l2.latency, requests * dram_scale)
        return fin


class InstructionCache:
    """Instruction fetch: an LRU L0 per SM sub-partition over an LRU L1 per SM, in 128 B lines, with
    a stream buffer per sub-partition that prefetches the lines after a miss.

    Jia et al. (Volta 2018, Turing 2019) measured this hierarchy: a small L0 i-cache private to
    each processing block and a larger L1 i-cache per SM. Huerta et al. (2025, §5.2) find that a
    stream buffer prefetching the successive lines on a miss explains Ampere's fetch. Each line
    carries the time its fill completes, so a warp that needs a line another warp (or the stream)
    is already fetching waits for that fill instead of paying a second miss (the miss is merged, as
    an MSHR would). `fetch` returns when the line is available; a time after the warp's next cycle
    is a `no_instruction` stall.

    The stream buffer (Jouppi 1990) holds up to `prefetch_lines` lines in flight or arrived, each
    requested through L1 like a demand miss. An L0 miss that finds its line there takes it (the
    fill already under way) and tops the stream up to `prefetch_lines` past it, so code that runs
    straight on stays ahead of its warps; a miss elsewhere (a branch back to a loop head, another
    warp far away in the code) restarts the stream after that line, dropping what it held.
    """

    __slots__ = ("l0", "l1", "l0_lines", "l1_lines", "l0_miss", "l1_miss", "depth", "stream", "stream_end",
                 "l0_gap", "l1_gap", "l0_port", "l1_port")

    def __init__(self, params: ICacheParams, n_smsp: int) -> None:
        self.l0: list[OrderedDict[int, float]] = [OrderedDict() for _ in range(n_smsp)]
        self.l1: OrderedDict[int, float] = OrderedDict()
        self.l0_lines, self.l1_lines = params.l0_lines, params.l1_lines
        self.l0_miss, self.l1_miss = params.l0_miss_latency, params.l1_miss_latency
        self.depth = params.prefetch_lines
        # per sub-partition: the prefetched lines not yet taken (line -> ready), oldest first, and
        # the last line the stream requested
        self.stream: list[OrderedDict[int, float]] = [OrderedDict() for _ in range(n_smsp)]
        self.stream_end = [-1] * n_smsp
        # fetch bandwidth: a line arrives no sooner than `gap` after the previous one through the
        # same port (each L0's from L1, the SM's L1's from beyond); the time each port is next free
        self.l0_gap, self.l1_gap = params.l0_fill_cycles, params.l1_fill_cycles
        self.l0_port = [-INF] * n_smsp
        self.l1_port = -INF

    def warm(self, lines: list[int]) -> None:
        """Fill with the code image in address order: the wave emulated is a steady one, and the
        waves before it on this SM have fetched the code (what does not fit keeps its tail)."""
        for line in lines:
            for l0 in self.l0:
                self._fill(l0, line, -INF, self.l0_lines)
            self._fill(self.l1, line, -INF, self.l1_lines)

    def fetch(self, smsp: int, line: int, t: float) -> float:
        """The time the instruction line is in the sub-partition's L0 for a fetch at `t`."""
        l0 = self.l0[smsp]
        ready = l0.get(line)
        if ready is not None:
            l0.move_to_end(line)
            return ready
        stream = self.stream[smsp]
        ready = stream.pop(line, None)
        if ready is None:  # not prefetched: a demand miss, and the stream restarts after it
            # the dropped lines' fills not yet begun give their turn on the L0 port back
            if self.l0_port[smsp] > t:
                self.l0_port[smsp] = t
            ready = self._through_l1(smsp, line, t)
            stream.clear()
            self.stream_end[smsp] = line
        self._fill(l0, line, ready, self.l0_lines)
        depth = self.depth
        if depth:
            end = self.stream_end[smsp]
            for nxt in range(end + 1, line + depth + 1):
                if nxt not in l0:
                    stream[nxt] = self._through_l1(smsp, nxt, t)
                    if len(stream) > depth:  # lines the warps jumped over age out first
                        stream.popitem(last=False)
            if line + depth > end:
                self.stream_end[smsp] = line + depth
        return ready

    def _through_l1(self, smsp: int, line: int, t: float) -> float:
        """When a line requested at `t` reaches the sub-partition's L0: from L1, or from beyond it
        (filling L1), each port passing one line per its fill gap."""
        l1 = self.l1
        r1 = l1.get(line)
        if r1 is not None:
            l1.move_to_end(line)
            ready = (r1 if r1 > t else t) + self.l0_miss
        else:
            ready = t + self.l1_miss
            if self.l1_gap:
                ready = max(ready, self.l1_port + self.l1_gap)
                self.l1_port = ready
            self._fill(l1, line, ready, self.l1_lines)
        if self.l0_gap:
            ready = max(ready, self.l0_port[smsp] + self.l0_gap)
            self.l0_port[smsp] = ready
        return ready

    @staticmethod
    def _fill(cache: OrderedDict[int, float], line: int, ready: float, capacity: int) -> None:
        cache[line] = ready
        cache.move_to_end(line)
        if len(cache) > capacity:
            cache.popitem(last=False)


class WarpScheduler:
    """One SMSP's issue slot and its warps.

    Event-driven bookkeeping instead of a scan per cycle: warps whose next instruction is not
    ready wait in a heap keyed by their earliest issue time; `wake(t)` moves the due ones to
    `ready` (kept oldest first). The policy only looks at `ready`.
    """

    __slots__ = ("warps", "greedy", "next_ready", "ready", "future", "ctx")

    def __init__(self, warps: list[WarpState]) -> None:
        self.warps = warps
        self.greedy: WarpState | None = None
        self.next_ready = INF
        self.ready: list[WarpState] = []
        self.future: list[tuple[float, int, WarpState]] = []
        self.ctx = 0

    def park(self, w: WarpState) -> None:
        """The warp's next instruction may issue at w.earl (INF: parked until a barrier release)."""
        if w.earl < INF:
            heappush(self.future, (w.earl, w.age, w))

    def wake(self, t: float) -> None:
        fut, ready = self.future, self.ready
        while fut and fut[0][0] <= t:
            w = heappop(fut)[2]
            if not w.done:
                insort(ready, w, key=_age)

    def take(self, w: WarpState) -> None:
        try:
            self.ready.remove(w)
        except ValueError:  # not in the ready list
            pass

    def drop(self, w: WarpState) -> None:
        if w in self.ready:
            self.ready.remove(w)
        self.warps.remove(w)
        if self.greedy is w:
            self.greedy = None
        if not self.warps:
            self.next_ready = INF


#: the ready list's order (oldest first); a C getter, called at every insertion
_age = operator.attrgetter("age")


class GTOPolicy:
    """Greedy-Then-Oldest (SAAKE §4.2): keep issuing from the last warp while it can; else the oldest."""

    name = "gto"

    def select(self, sched: WarpScheduler, t: float, blocked: list[float]) -> WarpState | None:
        fut = sched.future
        if fut and fut[0][0] <= t:  # most steps wake no warp: no call then
            sched.wake(t)
        ready = sched.ready
        g = sched.greedy
        if g is not None and ready and blocked[g.res] <= t and g.earl <= t and g in ready:
            return g
        return first_unblocked(sched, t, blocked, ready)


class LRRPolicy:
    """Loose round-robin: the next ready warp after the last one issued (an alternative to GTO)."""

    name = "lrr"

    def select(self, sched: WarpScheduler, t: float, blocked: list[float]) -> WarpState | None:
        sched.wake(t)
        ready = sched.ready
        g = sched.greedy
        start = 0
        if g is not None:
            start = next((j for j, w in enumerate(ready) if w.age > g.age), 0)
        return first_unblocked(sched, t, blocked, ready[start:] + ready[:start])


def first_unblocked(sched: WarpScheduler, t: float, blocked: list[float],
                     order: list[WarpState]) -> WarpState | None:
    """The first warp in `order` whose resource is free at `t`; else None, with the scheduler's
    next wake-up set to the earliest time any of them (or a sleeping warp) could issue."""
    best = INF
    for w in order:
        b = blocked[w.res]
        if b <= t:
            return w
        if b > w.throttled_until:
            w.throttled_until = b  # the stall is charged to the resource the warp waits on
        if b < best:
            best = b
    # the sleeping warps' earliest time only when none can issue (the first blocked time that is
    # earlier wins, as when it was the starting value)
    fut = sched.future
    if fut and not best < fut[0][0]:
        best = fut[0][0]
    sched.next_ready = best
    return None


POLICIES = {"gto": GTOPolicy, "lrr": LRRPolicy}


# ---- from the arch data ----------------------------------------------------------------------

#: Values the arch file leaves empty ("no public figure"), used only then and reported as
#: assumptions. Sources: Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
#: Microbenchmarking" (2018) and "...Turing T4..." (2019): L1 hit ≈ 28–33 cycles, MUFU ≈ 14–23,
#: conversions ≈ 14, constant-cache hit ≈ 8–20 (we take the middle); branch, barrier and atomic
#: are rough (ncu docs give none). l2 gap: L2 bandwidth ≈ 2.5 × DRAM on A100/H100 (whitepapers).
FALLBACK_LATENCY: dict[str, float] = {"fp32": 4, "fp64": 8, "fp16": 4, "int": 4, "sfu": 18, "conversion": 14,
                                      "tensor": 32, "lsu": 32, "shared": 24, "l2": 200, "dram": 450,
                                      "constant": 12, "branch": 6, "barrier": 20, "atomic": 20}
FALLBACK_GAP: dict[str, float] = {"fp32": 1, "fp64": 2, "fp16": 1, "int": 2, "sfu": 8, "conversion": 8,
                                  "tensor": 4, "lsu": 4, "shared": 4, "constant": 4, "branch": 2,
                                  "barrier": 4, "atomic": 4}
L2_OVER_DRAM_BANDWIDTH = 2.5


def machine_from_arch(arch, device) -> tuple[MachineModel, tuple[tuple[str, str, float], ...]]:
    """The latency/gap table for `arch` on `device`; also (resource, "latency"/"gap", value) fallbacks used.

    Gaps are per SMSP as `ArchSpec.pipe_gap` defines them; l2/dram gaps are one 128 B warp request
    at the SMSP's share of the device bandwidth (`ArchCatalog.pipe_gap`'s rule).
    """
    from ..machine.arch import WARP_REQUEST_BYTES, Resource

    used: list[tuple[str, str, float]] = []
    sched = arch.schedulers_per_sm
    per_smsp = device.clock_hz * device.sm_count * sched
    dram_gap = WARP_REQUEST_BYTES / (device.dram_bandwidth_gbs * 1e9 / per_smsp)
    l2_bw = device.l2_bandwidth_gbs * 1e9 if device.l2_bandwidth_gbs else None
    params = []
    for name in RESOURCES:
        if name == "l2_atomic":
            # not an arch-file class: the atomic unit's latency, and the SMSP's share of the GPU's
            # one same-address update per cycle as the gap of one lane's update
            lat = arch.instructions[Resource.atomic].latency or FALLBACK_LATENCY["atomic"]
            params.append(ResourceParams(float(lat), device.sm_count * sched / SAME_ADDRESS_UPDATES_PER_CYCLE))
            continue
        cls = Resource(name)
        spec = arch.instructions[cls]
        lat = spec.latency
        if lat is None:
            lat = FALLBACK_LATENCY[name]
            used.append((name, "latency", lat))
        if name == "dram":
            gap = dram_gap
        elif name == "l2":
            if l2_bw is None:
                gap = dram_gap / L2_OVER_DRAM_BANDWIDTH
                used.append((name, "gap", gap))
            else:
                gap = WARP_REQUEST_BYTES / (l2_bw / per_smsp)
        else:
            gap = arch.pipe_gap(cls)
            if gap is None:
                gap = FALLBACK_GAP[name]
                used.append((name, "gap", gap))
        params.append(ResourceParams(float(lat), float(gap)))
    ic = arch.icache
    icache = None if ic is None else ICacheParams(
        l0_lines=ic.l0_bytes // ic.line_bytes, l1_lines=ic.l1_bytes // ic.line_bytes, line_bytes=ic.line_bytes,
        instruction_bytes=ic.instruction_bytes, l0_miss_latency=float(ic.l0_miss_latency),
        l1_miss_latency=float(ic.l1_miss_latency), prefetch_lines=ic.prefetch_lines,
        l0_fill_cycles=float(ic.l0_fill_cycles), l1_fill_cycles=float(ic.l1_fill_cycles))
    return MachineModel(tuple(params), sched, arch.warp_size, icache=icache,
                        tensor_lane_flops=arch.instructions[Resource.tensor].results_per_lane,
                        tensor_fp32_accumulate_ratio=device.tensor_fp32_accumulate_ratio), tuple(used)
