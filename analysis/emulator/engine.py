"""The event-driven emulation loop: SAAKE Algorithm 1 over the warps of one SM.

Per step, each warp scheduler asks its policy for a warp whose current instruction can issue
now (dependences met: earl_t ≤ t, Alg. 1 lines 5–7; the target unit's queue not full). The
issued instruction enters its pipe at max(t, pipe_admit) and finishes L later (lines 13–14);
its results' ready times feed the warp's next earl_t. When no warp can issue, time jumps to the
earliest next ready time (lines 8–11): nothing is stepped cycle by cycle.

Control flow (SAAKE §4.4): back edges follow trip counts with a per-warp iteration counter;
a conditional branch that leaves a loop is taken once the loop has run its trips; an early-out
guard is jumped over to the work (`decode._early_out`); any other conditional branch falls
through (predicated paths are emulated in lexical order, all lanes on); predicated EXITs are
not taken (guards are assumed to pass). CALL runs the callee's slots and RET returns; a
`CALL.REL.NOINC` to a local label is decoded as the branch it is (`isa.call_is_jump`). BAR.SYNC holds a warp until the block's live warps arrived.

Instruction fetch: a warp moving to a new 128 B code line fetches it through the
`InstructionCache` (L0 per SMSP, L1 per SM, a stream buffer per SMSP prefetching the lines after
a miss); a line not resident holds the warp until its fill completes, a constraint with the
reason `no_instruction` like any other dependence.

Loop sampling: a loop with a large trip count is run for `emul_trip` iterations only; every
event carries the warp's *bucket* (the innermost sampled loop whose steady state it is in,
i.e. iteration ≥ warm-up), and `bucket_scale` says how many real iterations each emulated one
stands for. Listeners scale their per-bucket tallies with it (see docs/emulator.md).

Reports are listeners (llvm-mca's HWEventListener): the engine only calls `on_issue` and
`on_stall`; it never keeps report data itself except wall-clock time per bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappush
from operator import sub
from typing import Protocol

from ..process import CancelToken
from ..profile import StallReason
from .decode import (B_BACK, B_EXIT, B_JUMP, GLOBAL_ROUTE, K_BAR, K_BRA, K_CALL, K_EXIT, K_MEMBAR, K_RET,
                     M_ATOMIC_GLOBAL, M_ATOMIC_SHARED, M_CONSTANT, M_GLOBAL, M_NONE, M_SHARED, R, DecodedKernel,
                     exit_ends_iteration)
from .sampling import MAX_CALL_DEPTH, bucket_scales, call_contexts
from .units import (INF, POLICIES, RES_ID, RESOURCES, SCOPE, THROTTLE_REASON, BlockBarrier, GTOPolicy,
                    InstructionCache, MachineModel, MemoryHierarchy, Pipe, ResourceParams, WarpScheduler, WarpState,
                    first_unblocked, pipe_units)


_WAIT = R[StallReason.wait]
_BARRIER = R[StallReason.barrier]
_BRANCH = R[StallReason.branch_resolving]
_DRAIN = R[StallReason.drain]
_LONG_SCOREBOARD = R[StallReason.long_scoreboard]
# cp.async (sm_80+): LDGSTS copies global to shared, LDGDEPBAR commits the copies since the last
# one as a group on a scoreboard, DEPBAR.LE SBk, N waits until at most N groups are in flight
# (PTX ISA, cp.async.commit_group / cp.async.wait_group; the SASS is ptxas's)
_ASYNC_COPY, _ASYNC_COMMIT = 1, 2
_MEMBAR = R[StallReason.membar]
_NOT_SELECTED = R[StallReason.not_selected]
_NO_INSTRUCTION = R[StallReason.no_instruction]
_THROTTLE = [R[THROTTLE_REASON[r]] for r in RESOURCES] + [R[StallReason.lg_throttle]]


_SHARED, _CONSTANT, _ATOMIC, _L2_ATOMIC = RES_ID["shared"], RES_ID["constant"], RES_ID["atomic"], RES_ID["l2_atomic"]
_LSU, _L2, _DRAM = RES_ID["lsu"], RES_ID["l2"], RES_ID["dram"]


def _overrides(listener, hook: str) -> bool:
    """Only hooks a listener implements are called in the hot loop."""
    fn = getattr(type(listener), hook, None)
    return fn is not None and not getattr(fn, "_noop", False)


def _dispatch(hooks: list):
    """One callable per event for the hot loop: None when no listener implements the hook, the
    bound method itself when one does (the usual case: no loop over a list per event)."""
    if not hooks:
        return None
    if len(hooks) == 1:
        return hooks[0]

    def every(*args) -> None:
        for h in hooks:
            h(*args)
    return every


#: a run looks at its cancel token every this many issues: a cancelled analysis (a save that
#: supersedes a background verification) stops within a few milliseconds, not at the end of a run
#: of tens, whose interpreter time the new analysis's start waits for
CANCEL_CHECK_ISSUES = 1024


class HWEventListener(Protocol):
    """What a report sees of the emulation (llvm-mca `HWEventListener`)."""

    def on_start(self, kernel: DecodedKernel, machine: MachineModel, n_buckets: int) -> None: ...

    def on_issue(self, warp: WarpState, slot: int, cycle: float, bucket: int) -> None: ...

    def on_stall(self, warp: WarpState, slot: int, reason: int, cycles: float, bucket: int) -> None: ...

    def on_end(self, run: EngineRun) -> None: ...


@dataclass(frozen=True)
class EngineConfig:
    blocks: int  # co-resident blocks on the SM (occupancy)
    warps_per_block: int
    #: blocks each of the `blocks` places runs one after another: a block that retires is replaced
    #: at once by the next, as the block scheduler does over a many-wave launch
    rounds: int = 1
    representative: bool = True  # emulate one SMSP's warps (the SMSPs are symmetric), see docs
    policy: str = "gto"
    warmup: int = 1  # loop iterations treated as warm-up before the steady state
    cooldown: int = 1  # last iterations kept out of the steady state (warps drain out of the loop)
    cooldowns: tuple[int, ...] | None = None  # per loop, overriding `cooldown`
    max_issues: int = 5_000_000  # per emulation, a guard against a loop the model cannot end
    #: scheduler steps (issues and time jumps) per emulation: the guard when warps keep waiting
    #: on one another without issuing
    max_events: int = 20_000_000


@dataclass(frozen=True)
class EngineRun:
    cycles: float  # time of one wave on one SM, extrapolated over sampled loops
    emulated_cycles: float
    wall_by_bucket: tuple[float, ...]
    bucket_scale: tuple[float, ...]
    warps_emulated: int
    warps_on_sm: int
    active_smsps: int
    issues: int
    truncated: bool
    recursion_cut: bool = False  # a CALL deeper than MAX_CALL_DEPTH fell through
    rounds: int = 1  # EngineConfig.rounds: each emulated warp's place ran this many warps in turn
    #: with rounds > 1, the (extrapolated) time from the first block's retirement to the retirement
    #: that completes as many more as the SM holds: one wave's worth of blocks through a full SM (every
    #: retirement before it starts a successor), the steady period of a many-wave launch
    steady_period: float | None = None

    @property
    def warp_runs(self) -> int:
        """Warps the run emulated over all its rounds: what its counts are totals of."""
        return self.warps_emulated * self.rounds


class Engine:
    def __init__(self, kernel: DecodedKernel, machine: MachineModel, config: EngineConfig,
                 emul_trip: list[int], listeners: list[HWEventListener], cancel: CancelToken | None = None) -> None:
        self.k = kernel
        self.cancel = cancel
        self.m = machine
        self.cfg = config
        self.emul_trip = emul_trip
        self.listeners = listeners
        self._contexts(1)
        self.last_finish = 0.0
        self.rec = self._records()
        # 1 where a loop exit is its iteration's last test (`decode.exit_ends_iteration`)
        self.exit_last = [int(exit_ends_iteration(kernel, s)) for s in range(len(kernel))]
        async_keep = self._async_waits()
        self.chains, self.loop_of = kernel.loop_chain, kernel.loop_of
        self.n_slots = len(kernel)
        self.branch_latency = self.pipes[RES_ID["branch"]].latency
        self.warmup = config.warmup
        # a loop is in its steady state for iterations warmup <= i < steady_end (see bucket_scales)
        self.cooldowns = list(config.cooldowns) if config.cooldowns is not None else [config.cooldown] * len(emul_trip)
        self.steady_end = [K - c if K > config.warmup + c else config.warmup
                           for K, c in zip(emul_trip, self.cooldowns)]
        self.multi_bucket = bool(kernel.loops)
        if kernel.call_contexts is None:
            kernel.call_contexts = call_contexts(kernel)
        self.contexts = kernel.call_contexts
        self.wall: list[float] = []
        ic = machine.icache
        # the code image is laid out slot after slot (kernel, then its callees): a slot's fetch line
        self.line_of = [s * ic.instruction_bytes // ic.line_bytes for s in range(len(kernel))] if ic else []
        self.icache: InstructionCache | None = None
        # what `_prepare` reads of a slot, in one tuple (one lookup and an unpack per issue); what
        # only an async-copy wait, an EXIT or a MEMBAR needs is one item, None for other slots
        self.prep = [(kernel.uses[s], kernel.waits[s], self.line_of[s] if ic else -1, kernel.res[s],
                      kernel.loop_chain[s],
                      (async_keep[s], kernel.kind[s], kernel.instr[s].predicate is not None)
                      if async_keep[s] >= 0 or kernel.kind[s] in (K_EXIT, K_MEMBAR) else None)
                     for s in range(len(kernel))]
        self.on_issue = _dispatch([lst.on_issue for lst in listeners if _overrides(lst, "on_issue")])
        self.on_stall = _dispatch([lst.on_stall for lst in listeners if _overrides(lst, "on_stall")])
        # the SM's wall time per bucket at each issue only serves splitting stalls (`_others`)
        self.snap_walls = self.multi_bucket and self.on_stall is not None

    def _contexts(self, n_sched: int) -> None:
        """Pipes as each emulated SMSP sees them: its own math pipes; the SM's (and GPU's) memory
        units shared, their per-SMSP gap divided among the emulated SMSPs (the arch gaps are one
        SMSP's share)."""
        m = self.m
        shared: dict[int, Pipe] = {}
        for i, name in enumerate(RESOURCES):
            if SCOPE.get(name):
                p = m.params[i]
                # the queue keeps its depth per SMSP, so the emulated SMSPs throttle as one would
                shared[i] = Pipe(name, ResourceParams(p.latency, p.gap / n_sched), m.queue_depth[i] * n_sched)
        self.ctx_pipes = [[shared.get(i) or Pipe(name, m.params[i], m.queue_depth[i]) for i, name in enumerate(RESOURCES)]
                          for _ in range(n_sched)]
        self.ctx_memory = [MemoryHierarchy(p) for p in self.ctx_pipes]
        # blocked[r]: earliest issue time the unit's queue allows (GLOBAL_ROUTE: LSU, L2 and DRAM)
        self.ctx_blocked = [[-INF] * (len(RESOURCES) + 1) for _ in range(n_sched)]
        self.pipes, self.memory, self.blocked = self.ctx_pipes[0], self.ctx_memory[0], self.ctx_blocked[0]

    # ---------------------------------------------------------------------------------------
    def run(self) -> EngineRun:
        k, cfg, m = self.k, self.cfg, self.m
        S = m.schedulers_per_sm
        total_warps = self.total_warps
        active_smsps = min(S, total_warps)
        warps: list[WarpState] = []
        barriers = [BlockBarrier(0) for _ in range(cfg.blocks)]
        for g in range(total_warps):
            if not self._emulated(g):
                continue
            w = self._new_warp(g, g)
            barriers[w.block].live += 1
            warps.append(w)
        # the places that hold an emulated warp; a block's successor starts when the block retires
        self.rounds_left = [cfg.rounds - 1 if b.live else 0 for b in barriers]
        self.places = sum(1 for b in barriers if b.live)
        self.retired, self.spawned, self.steady_walls = 0, 0, []
        n_sched = 1 if cfg.representative else active_smsps
        scheds = [WarpScheduler([w for w in warps if (w.wid % S) % n_sched == s]) for s in range(n_sched)]
        self._contexts(n_sched)
        if m.icache is not None:
            self.icache = InstructionCache(m.icache, n_sched)
            self.icache.warm(sorted(set(self.line_of)))
        for si, sc in enumerate(scheds):
            sc.ctx = si
            for w in sc.warps:
                w.smsp = si
        self.barriers = barriers
        policy = POLICIES[cfg.policy]()
        scales = bucket_scales(k, self.emul_trip, cfg.warmup, self.cooldowns, self.contexts)
        n_buckets = len(scales)
        for lst in self.listeners:
            lst.on_start(k, m, n_buckets)
        self.sched_of = {}
        for s in scheds:
            for w in s.warps:
                self.sched_of[w.wid] = s
        for w in warps:
            self._prepare(w, -1.0, 0, False)
            self.sched_of[w.wid].park(w)

        self.recursion_cut = False
        wall = [0.0] * n_buckets
        self.wall = wall
        t = 0.0
        live = len(warps)
        issues = 0
        truncated = False
        select = policy.select
        last_bucket = 0
        events = 0
        issue = self._issue
        # each scheduler with its SMSP's view of the units' queues (the lists change in place)
        scheds_blocked = [(s, self.ctx_blocked[s.ctx]) for s in scheds]
        max_events, max_issues = cfg.max_events, cfg.max_issues
        cancel = self.cancel
        # one comparison per issue serves both the issue guard and the cancel check
        limit = min(max_issues, CANCEL_CHECK_ISSUES) if cancel is not None else max_issues
        only = scheds[0] if len(scheds) == 1 else None
        if only is not None and type(policy) is GTOPolicy:
            # one scheduler under GTO (the representative SMSP, the usual run): the steps of the
            # general loop below, with `GTOPolicy.select` written out (its greedy test is most
            # steps' whole choice: a call fewer per step, a tenth of the run's time)
            s, blocked = scheds_blocked[0]
            fut, ready = s.future, s.ready
            while live:
                events += 1
                if events > max_events:
                    truncated = True
                    break
                if fut and fut[0][0] <= t:
                    s.wake(t)
                g = s.greedy
                if g is not None and ready and blocked[g.res] <= t and g.earl <= t and g in ready:
                    w = g
                else:
                    w = first_unblocked(s, t, blocked, ready) if s.warps else None
                if w is not None:
                    issued_bucket = w.bucket
                    s.greedy = w
                    if issue(w, t, s):
                        live += self.spawned - 1
                        self.spawned = 0
                    issues += 1
                    wall[issued_bucket] += 1.0
                    last_bucket = issued_bucket
                    t += 1.0
                    if issues > limit:
                        if issues > max_issues:
                            truncated = True
                            break
                        cancel.check()
                        limit = min(max_issues, issues + CANCEL_CHECK_ISSUES)
                    continue
                nt = s.next_ready
                if nt == INF:
                    truncated = True
                    break
                wall[last_bucket] += nt - t
                t = nt
            live = 0  # done (or truncated): the general loop below has nothing to run
        while live:
            events += 1
            if events > max_events:
                truncated = True
                break
            issued_bucket = -1
            for s, blocked in scheds_blocked:
                if not s.warps:
                    continue
                w = select(s, t, blocked)
                if w is None:
                    continue
                if issued_bucket < 0:
                    issued_bucket = w.bucket
                s.greedy = w
                if issue(w, t, s):
                    live += self.spawned - 1
                    self.spawned = 0
                issues += 1
            if issued_bucket >= 0:
                wall[issued_bucket] += 1.0
                last_bucket = issued_bucket
                t += 1.0
                if issues > limit:
                    if issues > max_issues:
                        truncated = True
                        break
                    cancel.check()
                    limit = min(max_issues, issues + CANCEL_CHECK_ISSUES)
                continue
            nt = only.next_ready if only is not None else min(s.next_ready for s in scheds)
            if nt == INF:  # everyone waits on something that never comes (a barrier the model broke)
                truncated = True
                break
            # idle SM time belongs to the loop the SM is in (the last warp that issued)
            wall[last_bucket] += nt - t
            t = nt
        idle_pending = 0.0
        # Alg. 1 line 19: the wave ends when its last instruction finishes
        tail = max(0.0, self.last_finish - t)
        emulated = t + tail
        extrapolated = sum(wb * sc for wb, sc in zip(wall, scales)) + idle_pending + tail
        steady = [sum(wb * sc for wb, sc in zip(w, scales)) for w in self.steady_walls]
        run = EngineRun(cycles=extrapolated, emulated_cycles=emulated, wall_by_bucket=tuple(wall),
                        bucket_scale=tuple(scales), warps_emulated=len(warps), warps_on_sm=total_warps,
                        active_smsps=active_smsps, issues=issues, truncated=truncated,
                        recursion_cut=self.recursion_cut, rounds=cfg.rounds,
                        steady_period=steady[1] - steady[0] if len(steady) == 2 else None)
        for lst in self.listeners:
            lst.on_end(run)
        return run

    @property
    def total_warps(self) -> int:
        """Warps resident on the SM in one round (every block's, emulated or not)."""
        return self.cfg.blocks * self.cfg.warps_per_block

    def _emulated(self, g: int) -> bool:
        """Whether warp `g` of the resident set is emulated: every warp, or one SMSP's (representative)."""
        return not self.cfg.representative or g % self.m.schedulers_per_sm == 0

    def _new_warp(self, g: int, age: int) -> WarpState:
        """Warp `g` of the SM's resident set (its place: block g // warps per block)."""
        w = WarpState(g, g // self.cfg.warps_per_block, age, self.k.n_regs, len(self.k.loops))
        w.slot = self.k.entry
        return w

    def _retire(self, block: int, t: float) -> None:
        """The block in place `block` retired at `t`: its successor's warps start (rounds > 1)."""
        self.retired += 1
        if self.cfg.rounds > 1 and self.retired in (1, self.places + 1):
            self.steady_walls.append(self.wall[:])
        if self.rounds_left[block] <= 0:
            return
        self.rounds_left[block] -= 1
        wpb = self.cfg.warps_per_block
        barrier = self.barriers[block] = BlockBarrier(0)
        # a successor is younger than every warp already resident (GTO keeps to the oldest)
        age = (self.cfg.rounds - self.rounds_left[block]) * self.total_warps
        for g in range(block * wpb, (block + 1) * wpb):
            if not self._emulated(g):
                continue
            w = self._new_warp(g, age + g)
            w.prev_issue = t - 1.0  # it waits from `t` on, not from the run's start
            sched = self.sched_of[g]
            w.smsp = sched.ctx
            barrier.live += 1
            sched.warps.append(w)
            self._prepare(w, t, 0, False)
            sched.park(w)
            self.spawned += 1

    # ---------------------------------------------------------------------------------------
    def _records(self) -> list[tuple]:
        """One tuple per slot with what `_issue` reads (one unpack instead of many list lookups)."""
        k, m = self.k, self.m
        out = []
        n = len(k)
        for i in range(n):
            op = k.instr[i].opcode
            role = _ASYNC_COPY if op == "LDGSTS" else _ASYNC_COMMIT if op == "LDGDEPBAR" else 0
            # a commit's scoreboard clears when its group's copies land: a long-scoreboard wait
            rr = _LONG_SCOREBOARD if role == _ASYNC_COMMIT else k.result_reason[i]
            # plain: no control flow, control barrier or store, and the next slot in the same loop,
            # so that `_issue` only moves on (most instructions: one test instead of seven)
            plain = (not k.kind[i] and k.wbar[i] < 0 and k.rbar[i] < 0 and not k.is_store[i] and i + 1 < n
                     and k.loop_of[i + 1] == k.loop_of[i])
            out.append((k.kind[i], k.mem[i], k.pipe[i], k.res[i], k.defs[i], k.stall[i], k.wbar[i], k.rbar[i],
                        rr, k.is_store[i], k.branch_role[i], k.target[i], k.branch_loop[i],
                        k.instr[i].predicate is not None, k.shape[i], pipe_units(k.instr[i], k.pipe[i], m), role,
                        bool(SCOPE.get(RESOURCES[k.pipe[i]])), plain))
        return out

    def _async_waits(self) -> list[int]:
        """Per slot: N of a `DEPBAR.LE SBk, N` on a scoreboard an LDGDEPBAR commits to, else -1."""
        k = self.k
        committed = {k.wbar[i] for i in range(len(k)) if k.instr[i].opcode == "LDGDEPBAR" and k.wbar[i] >= 0}
        out = [-1] * len(k)
        for i in range(len(k)):
            ins = k.instr[i]
            if ins.opcode == "DEPBAR" and len(ins.operands) >= 2 and ins.operands[0].startswith("SB"):
                sb = ins.operands[0][2:]
                if sb.isdigit() and int(sb) in committed:
                    try:
                        out[i] = int(ins.operands[1], 0)
                    except ValueError:
                        pass
        return out

    def _issue(self, w: WarpState, t: float, sched: WarpScheduler) -> bool:
        """Issue the warp's current instruction at `t`; return True when the warp exits."""
        i = w.slot
        bucket = w.bucket
        (kind, mem, pipe, res, defs, stall, wbar, rbar, rr, is_store, role, target, bloop, predicated,
         shp, units, arole, shared, plain) = self.rec[i]
        # --- stall attribution for the cycles since this warp last issued (integrated samples)
        cur = w.prev_issue + 1.0
        on_stall = self.on_stall
        if t > cur and on_stall is not None:  # a run that reports no stalls (a what-if point) skips their split
            for ct, rc in w.constraints:
                if ct > cur:
                    end = ct if ct < t else t
                    on_stall(w, i, rc, end - cur, bucket)
                    cur = end
                    if cur >= t:
                        break
            if cur < t:
                th = w.throttled_until
                if th > cur:
                    end = th if th < t else t
                    self._others(w, i, _THROTTLE[res], end - cur, bucket)
                    cur = end
                if cur < t:
                    self._others(w, i, _NOT_SELECTED, t - cur, bucket)
        on_issue = self.on_issue
        if on_issue is not None:
            on_issue(w, i, t, bucket)
        w.prev_issue = t
        w.throttled_until = -1.0
        if self.snap_walls:
            w.wall_snap = self.wall[:]

        # --- execute: SAAKE Alg. 1 lines 12–14 (Pipe.accept inlined for the common case)
        ctx = w.smsp
        if mem == M_NONE:
            p = self.ctx_pipes[ctx][pipe]
            start = t if t > p.admit else p.admit
            if units == 1.0:
                p.admit = start + p.gap
                fin = start + p.latency
            else:  # an MMA of another shape or rate (`pipe_units`): Pipe.accept's hold
                hold = p.gap * units
                p.admit = start + hold
                fin = start + p.latency + (hold - p.gap if hold > p.gap else 0.0)
            if shared:
                for bl in self.ctx_blocked:
                    bl[pipe] = p.admit - p.backlog
            else:
                self.ctx_blocked[ctx][pipe] = p.admit - p.backlog
        else:
            fin = self._memory(mem, t, shp, ctx, i, w.wid)
        if arole:
            if arole == _ASYNC_COPY:
                if fin > w.async_open:
                    w.async_open = fin
            else:  # a commit completes with its group
                if w.async_open > fin:
                    fin = w.async_open
                w.async_open = 0.0
                groups = w.async_groups
                if len(groups) >= 16:  # a kernel that never waits with DEPBAR: keep the ones in flight
                    w.async_groups = groups = [g for g in groups if g > t]
                groups.append(fin)
        sb = w.sb
        if defs:
            ready, reason = sb.reg_ready, sb.reg_reason
            for d in defs:
                ready[d] = fin
                reason[d] = rr
        if fin > self.last_finish:
            self.last_finish = fin
        if plain:  # the usual instruction: on to the next slot, nothing else to do (see `_records`)
            w.slot = i + 1
            self._prepare(w, t, stall, False)
        else:
            if wbar >= 0:
                sb.sb_ready[wbar] = fin
                sb.sb_reason[wbar] = rr
            if rbar >= 0 and t + 1.0 > sb.sb_ready[rbar]:  # sources read as the request leaves issue
                sb.sb_ready[rbar] = t + 1.0
                sb.sb_reason[rbar] = _WAIT
            if is_store and fin > w.stores_done:
                w.stores_done = fin

            # --- control flow
            nxt = i + 1
            branched = False
            if kind:
                if kind == K_BRA:
                    branched = True
                    if role == B_JUMP:
                        nxt = target
                    elif role == B_BACK:
                        cnt = w.loop_count[bloop]
                        if not predicated or cnt + 1 < self.emul_trip[bloop]:
                            w.loop_count[bloop] = cnt + 1
                            nxt = target
                    elif role == B_EXIT:
                        # back edges taken so far, plus this trip when the body is behind the test
                        if w.loop_count[bloop] + self.exit_last[i] >= self.emul_trip[bloop]:
                            nxt = target
                elif kind == K_EXIT:
                    if not predicated:
                        return self._exit(w, t, sched)
                elif kind == K_CALL:
                    # a recursion deeper than MAX_CALL_DEPTH returns at once (docs/emulator.md, budget)
                    if target >= 0 and len(w.call_stack) < MAX_CALL_DEPTH:
                        w.call_stack.append(i + 1)
                        w.call_buckets.append(bucket)
                        nxt = target
                        branched = True
                    elif target >= 0:
                        self.recursion_cut = True
                elif kind == K_RET:
                    if w.call_stack:
                        nxt = w.call_stack.pop()
                        w.call_buckets.pop()
                        branched = True
                    elif not predicated:
                        return self._exit(w, t, sched)
            if nxt >= self.n_slots:
                return self._exit(w, t, sched)
            loop_of = self.loop_of
            # leaving loops resets their counters (nested loops restart); a call does not leave its
            # loop: the callee runs inside the caller's iteration (its cost is charged there)
            if loop_of[nxt] != loop_of[i] and kind != K_CALL:
                chain_n = self.chains[nxt]
                for L in self.chains[i]:
                    if L not in chain_n:
                        w.loop_count[L] = 0
            w.slot = nxt
            self._prepare(w, t, stall, branched)
            if kind == K_BAR:
                w.at_barrier = True
                w.earl = INF
                release = self.barriers[w.block].arrive(w, t)
                if release:
                    self._release(release, t)
                sched.take(w)
                return False
        if w.earl > t + 1.0:  # not ready next cycle: leave the ready list for the timed heap
            # (WarpScheduler.take and .park inlined: this runs at most issues)
            try:
                sched.ready.remove(w)
            except ValueError:
                pass
            if w.earl < INF:
                heappush(sched.future, (w.earl, w.age, w))
        return False

    def _others(self, w: WarpState, i: int, reason: int, cycles: float, bucket: int) -> None:
        """Cycles a warp lost to other warps (not selected, a full queue) belong to what those
        warps were running: split them by the SM's wall time per bucket since this warp last
        issued. Under GTO a young warp can wait a whole loop of older warps at its loop header."""
        on_stall = self.on_stall
        snap = w.wall_snap
        if snap is None:
            on_stall(w, i, reason, cycles, bucket)
            return
        deltas = list(map(sub, self.wall, snap))
        tot = sum(deltas)
        if tot <= 0:
            on_stall(w, i, reason, cycles, bucket)
            return
        for b, d in enumerate(deltas):
            if d > 0:
                on_stall(w, i, reason, cycles * d / tot, b)

    def _memory(self, mem: int, t: float, shp, ctx: int, slot: int, wid: int = 0) -> float:
        pipes = self.ctx_pipes[ctx]
        memory = self.ctx_memory[ctx]
        if mem == M_GLOBAL:
            # L1 misses are diffused per warp (each warp's lanes cross their sectors on their own
            # trips); L2's per instruction
            fin = memory.global_access(t, shp.wavefronts, shp.l2_requests, shp.l2_hit_rate, slot, shp.l1_miss_rate,
                                       shp.dram_scale, shp.l2_cost, (slot << 20) | wid)
        elif mem == M_SHARED:
            fin = memory.shared_access(t, shp.wavefronts)
        elif mem == M_CONSTANT:
            fin = pipes[_CONSTANT].accept(t)
        elif mem == M_ATOMIC_SHARED:
            fin = pipes[_ATOMIC].accept(memory.shared_access(t, shp.wavefronts) - pipes[_SHARED].latency)
        else:  # M_ATOMIC_GLOBAL: performed at L2 (the atomic unit after the memory route)
            fin = memory.global_access(t, shp.wavefronts, shp.requests, 1.0)
            if shp.same_address_lanes:  # every thread of the grid updates one word: one at a time
                fin = pipes[_L2_ATOMIC].accept(fin, shp.same_address_lanes)
            else:
                fin = pipes[_ATOMIC].accept(fin)
        self._update_blocked(mem, pipes)
        return fin

    def _update_blocked(self, mem: int, p: list[Pipe]) -> None:
        # the memory units are shared by the SMSPs: every SMSP's view changes (the same values);
        # Pipe.blocked_until inlined (admit - backlog), as at every memory instruction
        if mem == M_CONSTANT:
            co = p[_CONSTANT]
            constant = co.admit - co.backlog
            for blocked in self.ctx_blocked:
                blocked[_CONSTANT] = constant
            return
        # global and shared requests move the LSU and the data array (the shared pipe), which is
        # on the global route: requests waiting for it wait in the LSU's queue
        lsu, l2, dram, l2_atomic, sh, a = p[_LSU], p[_L2], p[_DRAM], p[_L2_ATOMIC], p[_SHARED], p[_ATOMIC]
        route = max(lsu.admit - lsu.backlog, l2.admit - l2.backlog, dram.admit - dram.backlog,
                    l2_atomic.admit - l2_atomic.backlog, sh.admit - lsu.backlog)
        shared, atomic = sh.admit - sh.backlog, a.admit - a.backlog
        for blocked in self.ctx_blocked:
            blocked[GLOBAL_ROUTE] = route
            blocked[_SHARED] = shared
            blocked[_ATOMIC] = atomic

    def _prepare(self, w: WarpState, t: float, stall: int, branched: bool) -> None:
        """Constraints on the warp's next instruction: its earl_t (Alg. 1 line 6) and why."""
        s = w.slot
        uses, waits, line, res, chain, rare = self.prep[s]
        t1 = t + 1.0
        cons = [(t + stall, _WAIT)] if stall else []
        if branched:
            cons.append((t + self.branch_latency, _BRANCH))
        if uses:
            sb = w.sb
            ready = sb.reg_ready
            for u in uses:
                rt = ready[u]
                if rt > t1:
                    cons.append((rt, sb.reg_reason[u]))
        if waits:
            sb = w.sb
            ready = sb.sb_ready
            for b in waits:
                rt = ready[b]
                if rt > t1:
                    cons.append((rt, sb.sb_reason[b]))
        if rare is not None:
            keep, kind, predicated = rare
            if keep >= 0:
                pending = sorted(g for g in w.async_groups if g > t1)
                w.async_groups = pending
                if len(pending) > keep:
                    cons.append((pending[len(pending) - keep - 1], _LONG_SCOREBOARD))
            if kind == K_EXIT:
                if w.stores_done > t1 and not predicated:
                    cons.append((w.stores_done, _DRAIN))
            elif kind == K_MEMBAR and w.stores_done > t1:
                cons.append((w.stores_done, _MEMBAR))
        if line >= 0 and line != w.iline:  # a new line: fetch it through L0/L1 (the warp holds its current one)
            w.iline = line
            ready = self.icache.fetch(w.smsp, line, t1)
            if ready > t1:
                cons.append((ready, _NO_INSTRUCTION))
        w.constraints = cons
        if cons:
            n = len(cons)
            if n == 2:  # the usual case of several: a compare instead of a sort (the same order)
                if cons[0] > cons[1]:
                    cons.reverse()
            elif n > 2:
                cons.sort()
            w.earl = cons[-1][0]
        else:
            w.earl = t1
        w.res = res
        # sampling bucket: the innermost loop in steady state (warm-up <= iteration < steady end)
        # In a callee the warp starts from its call site's bucket, so the callee's cost is scaled
        # with the caller's loop like the rest of that iteration; a callee loop's steady state is
        # a call context whose scale multiplies both (sampling.py).
        calls = w.call_buckets
        base = calls[-1] if calls else 0
        if chain:
            cnt, warm, ends = w.loop_count, self.warmup, self.steady_end
            for L in chain:
                if warm <= cnt[L] < ends[L]:
                    w.bucket = L + 1 if base == 0 else self.contexts.of(base, L)
                    return
        w.bucket = base

    def _release(self, warps: list[WarpState], t: float) -> None:
        """All live warps of a block arrived: they may go on after the barrier latency."""
        at = max(t, max(x.prev_issue for x in warps)) + self.pipes[RES_ID["barrier"]].latency
        for x in warps:
            x.at_barrier = False
            x.constraints = sorted([*x.constraints, (at, _BARRIER)])
            x.earl = max(at, x.constraints[-1][0])
            self.sched_of[x.wid].park(x)

    def _exit(self, w: WarpState, t: float, sched: WarpScheduler) -> bool:
        w.done = True
        sched.drop(w)
        barrier = self.barriers[w.block]
        release = barrier.leave()
        if release:
            self._release(release, t)
        if barrier.live == 0:
            self._retire(w.block, t)
        return True
