"""Reports over one emulation, as listeners (llvm-mca `HWEventListener` + its Views).

Each listener tallies per sampling bucket and scales by `EngineRun.bucket_scale` at the end,
so the loop-sampling shortcut is invisible to the reports. Adding a report never touches the
engine.
"""

from __future__ import annotations

import numpy as np

from ..profile import StallReason
from .decode import M_ATOMIC_GLOBAL, M_ATOMIC_SHARED, M_CONSTANT, M_GLOBAL, M_NONE, M_SHARED, REASONS, R, DecodedKernel
from .engine import EngineRun
from .units import RES_ID, RESOURCES, MachineModel, WarpState, pipe_units

_SELECTED = R[StallReason.selected]
_NR = len(REASONS)


class HWEventListenerBase:
    """No-op hooks; subclasses override what they need."""

    def on_start(self, kernel: DecodedKernel, machine: MachineModel, n_buckets: int) -> None:
        pass

    def on_issue(self, warp: WarpState, slot: int, cycle: float, bucket: int) -> None:
        pass

    def on_stall(self, warp: WarpState, slot: int, reason: int, cycles: float, bucket: int) -> None:
        pass

    on_issue._noop = True  # type: ignore[attr-defined]
    on_stall._noop = True  # type: ignore[attr-defined]

    def on_end(self, run: EngineRun) -> None:
        pass


class PCSampler(HWEventListenerBase):
    """Per-PC warp-state samples (GPA §II-A), integrated: a stall of k cycles is k samples.

    Every resident warp contributes one sample per cycle: "selected" when it issued, otherwise
    the reason it could not. Units are warp-cycles on the emulated warps.
    """

    def on_start(self, kernel: DecodedKernel, machine: MachineModel, n_buckets: int) -> None:
        self.n = len(kernel)
        self.acc = [0.0] * (n_buckets * self.n * _NR)
        self.exec = [0.0] * (n_buckets * self.n)

    def on_issue(self, warp: WarpState, slot: int, cycle: float, bucket: int) -> None:
        # an issue is a "selected" sample: that column is filled from `exec` at the end
        self.exec[bucket * self.n + slot] += 1.0

    def on_stall(self, warp: WarpState, slot: int, reason: int, cycles: float, bucket: int) -> None:
        self.acc[(bucket * self.n + slot) * _NR + reason] += cycles

    def on_end(self, run: EngineRun) -> None:
        # bucket by bucket, as sums of Python floats would add them (the same IEEE operations in
        # the same order, so the same values), each row only where its bucket has any
        acc = np.asarray(self.acc).reshape(-1, self.n, _NR)
        ex = np.asarray(self.exec).reshape(-1, self.n)
        acc[:, :, _SELECTED] += ex  # no stall has the reason "selected": 0.0 + count, exactly
        samples = np.zeros((self.n, _NR))
        executed = np.zeros(self.n)
        for b, sc in enumerate(run.bucket_scale):
            e = ex[b]
            some = e != 0
            executed[some] += e[some] * sc
            a = acc[b]
            rows = a.any(axis=1)
            samples[rows] += a[rows] * sc
        self.samples = samples.tolist()
        self.executed = executed.tolist()
        self.total = sum(sum(r) for r in self.samples)


class ExecutionCounter(HWEventListenerBase):
    """Warp-level executions per slot (scaled): the basis of utilization and traffic."""

    def on_start(self, kernel: DecodedKernel, machine: MachineModel, n_buckets: int) -> None:
        self.kernel, self.machine = kernel, machine
        self.n = len(kernel)
        self.raw = [0.0] * (n_buckets * self.n)

    def on_issue(self, warp: WarpState, slot: int, cycle: float, bucket: int) -> None:
        self.raw[bucket * self.n + slot] += 1.0

    def on_end(self, run: EngineRun) -> None:
        raw = np.asarray(self.raw).reshape(-1, self.n)
        executed = np.zeros(self.n)
        for b, sc in enumerate(run.bucket_scale):  # as `PCSampler.on_end` adds them
            v = raw[b]
            some = v != 0
            executed[some] += v[some] * sc
        self.executed = executed.tolist()
        self.run = run


class _CountView(HWEventListenerBase):
    """A report computed at the end from another listener's scaled execution counts.

    It subscribes only to on_start/on_end, so it costs nothing per event; list it after the
    counter it reads (a `PCSampler` or an `ExecutionCounter`).
    """

    def __init__(self, counter: PCSampler | ExecutionCounter) -> None:
        self.counter = counter

    def on_start(self, kernel: DecodedKernel, machine: MachineModel, n_buckets: int) -> None:
        self.kernel, self.machine = kernel, machine

    @property
    def executed(self) -> list[float]:
        return self.counter.executed


class Utilization(_CountView):
    """Busy cycles per resource / emulated time (SAAKE Alg. 1 line 15, in gap units).

    A unit admitting one request every G cycles is 100 % busy, so busy = Σ admissions × G.
    """

    def on_end(self, run: EngineRun) -> None:
        k, m = self.kernel, self.machine
        busy = [0.0] * len(RESOURCES)
        for s, e in enumerate(self.executed):
            if not e:
                continue
            for r, units in resource_units(k, s, m):
                busy[r] += e * units * m.params[r].gap
        cycles = max(run.cycles, 1.0)
        n_smsp = _smsps(run)
        self.busy = {RESOURCES[r]: b for r, b in enumerate(busy)}
        self.utilization = {RESOURCES[r]: min(1.0, b / cycles / n_smsp) for r, b in enumerate(busy) if b}

    def busiest_cycles(self, run: EngineRun) -> float:
        """The time the busiest unit needs for the run's (scaled) work: a floor under the run's time."""
        return max(self.busy.values(), default=0.0) / _smsps(run)


def _smsps(run: EngineRun) -> int:
    """The emulated warps are one SMSP's when representative; busy is per SMSP either way."""
    return 1 if run.warps_emulated < run.warps_on_sm else max(1, run.active_smsps)


def resource_units(k: DecodedKernel, s: int, m: MachineModel) -> list[tuple[int, float]]:
    """(resource, admissions) one execution of slot `s` costs (expected value for L2 hits)."""
    mem = k.mem[s]
    shp = k.shape[s]
    if mem == M_NONE:
        return [(k.pipe[s], pipe_units(k.instr[s], k.pipe[s], m))]
    if mem in (M_GLOBAL, M_ATOMIC_GLOBAL):
        hit = 1.0 if mem == M_ATOMIC_GLOBAL else shp.l2_hit_rate
        to_l2 = shp.requests * (1.0 - shp.l1_hit_rate)
        out = [(RES_ID["lsu"], shp.wavefronts), (RES_ID["l2"], to_l2 * shp.l2_cost),
               (RES_ID["dram"], to_l2 * (1.0 - hit) * shp.dram_scale)]
        if mem == M_ATOMIC_GLOBAL:
            out.append((RES_ID["l2_atomic"], float(shp.same_address_lanes)) if shp.same_address_lanes
                       else (RES_ID["atomic"], 1.0))
        return out
    if mem == M_SHARED:
        return [(RES_ID["shared"], shp.wavefronts)]
    if mem == M_ATOMIC_SHARED:
        return [(RES_ID["shared"], shp.wavefronts), (RES_ID["atomic"], 1.0)]
    if mem == M_CONSTANT:
        return [(RES_ID["constant"], 1.0)]
    return []


class TrafficCounter(_CountView):
    """FLOPs per precision and bytes per memory level for the emulated warps (scaled)."""

    def on_end(self, run: EngineRun) -> None:
        k = self.kernel
        ws = self.machine.warp_size
        flops: dict[str, float] = {}
        byts: dict[str, float] = {}
        # the SMs' sectors at L2 and the loads' that miss (a store's sector never misses), in
        # sectors' bytes: `requests` counts 128 B units, which a one-lane store overstates 4x
        sent_sectors = load_miss = 0.0
        for s, e in enumerate(self.executed):
            if not e:
                continue
            for prec, f in k.flops[s].items():
                flops[prec] = flops.get(prec, 0.0) + e * f * ws
            mem = k.mem[s]
            shp = k.shape[s]
            if mem in (M_GLOBAL, M_ATOMIC_GLOBAL):
                hit = 1.0 if mem == M_ATOMIC_GLOBAL else shp.l2_hit_rate
                byts["l1"] = byts.get("l1", 0.0) + e * shp.bytes_l1
                to_l2 = e * shp.requests * 128.0 * (1.0 - shp.l1_hit_rate)
                byts["l2"] = byts.get("l2", 0.0) + to_l2
                byts["dram"] = byts.get("dram", 0.0) + to_l2 * (1.0 - hit) * shp.dram_scale
                sent = e * shp.bytes_l1 * (1.0 - shp.l1_hit_rate)
                sent_sectors += sent
                if not k.is_store[s]:
                    load_miss += sent * (1.0 - hit)
            elif mem in (M_SHARED, M_ATOMIC_SHARED) and k.instr[s].opcode != "SHFL":
                byts["shared"] = byts.get("shared", 0.0) + e * shp.bytes_l1
        self.flops = flops
        self.bytes = byts
        # L2's hit rate as ncu counts it (lts__t_sectors_srcunit_tex_lookup_miss over the SMs'
        # sectors): a store allocates its sector and hits, its write-back to DRAM is later traffic
        self.hit_rates = {"l2": 1.0 - load_miss / sent_sectors} if sent_sectors > 0 else {}
