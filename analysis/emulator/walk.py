"""A functional walk of one warp through the decoded kernel: the values it computes and the
addresses each of its memory instructions touches, lane by lane (issue #32).

The walk runs the integer datapath (`lanes.py`) over the decoded image with one program counter
per lane. At each step it runs the lowest program counter that any live lane holds, for the
lanes at it (min-PC reconvergence: ptxas lays code out so that a branch's two sides meet at the
higher address, so lanes that wait there are joined by the others when these get there).

* A conditional branch goes where its executed predicate says, lane by lane: divergence and
  early exits follow. Where the predicate is not known (it compares a loaded or a floating-point
  value, or an argument nobody gave), the lanes go where the timing engine goes
  (`decode.branch_role`: guards pass, the work side of an early-out is taken) and the branch is
  recorded in `WalkResult.unknown_branches`.
* Loops run `max_iterations` trips (or fewer if their own condition ends them), as the engine
  samples only the first iterations. At the cap the lanes leave by the loop's exit, and each
  register the loop changed is carried to its value after the loop's full trip count where its
  last four values step evenly (induction variables, pointers); any other is unknown.
* Loads give unknown values (data-dependent): the same unknown in every lane when the lanes
  read one address, so a base pointer read from memory still gives exact strides.
* Instructions whose results reach no address, branch, exit or local store (`inert_slots`: a
  GEMM's FMAs and MMAs, most of a tiled kernel's K loop) are stepped over, not executed: what the
  walk returns is the same but for the value of an unknown base (stand-ins are numbered in the
  order they are made), and a run of them costs one step of the bound, so a long unrolled body
  gets further before the bound. The accesses keep their place in the warp's time line
  (`Access.step` counts every slot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..frontend import isa
from . import lanes
from .decode import B_BACK, B_EXIT, B_JUMP, K_BRA, K_CALL, K_EXIT, K_OP, K_RET, DecodedKernel, exit_ends_iteration
from .lanes import KNOWN, UNIFORM, UNKNOWN, WARP, Launch, Value, WarpState, all_lanes, any_lane
from .memory import address_operand

#: iterations of each loop entry the walk runs: four give three differences to extrapolate from
#: (three would take a stage index `t % 3` for an even step)
MAX_ITERATIONS = 4
#: warp-instructions one walk executes at most (the cost bound: 6-18 µs each here, 2026-11-27;
#: ~70-90 µs in a register-tiled GEMM's K loop). 3,000 from 2026-11-29: a bounds-checked
#: register-tiled GEMM (Lei Mao's V04-V06) needs ~1,900-2,800 to reach its epilogue, where 1,200
#: stopped inside the K loop; the accuracy set's analyses took 15 % longer (docs/performance.md)
MAX_STEPS = 3000


@dataclass(frozen=True)
class Access:
    """One execution of a memory instruction by the walked warp."""

    lanes: int  # lanes that executed it
    addresses: tuple[int, ...] | None  # their byte addresses; None where any is not known
    relative: bool = False  # the addresses hold an unknown uniform part: differences exact
    reason: str = ""  # why the addresses are not known
    #: the slot count at which it ran, every slot the warp passed counted (stepped over or not):
    #: the warp's time line (caches.py)
    step: int = 0
    spent: int = 0  # the walk's steps (its cost bound) when it ran


@dataclass
class WalkResult:
    accesses: dict[int, list[Access]] = field(default_factory=dict)  # slot -> executions
    unknown_branches: dict[int, str] = field(default_factory=dict)  # slot -> why
    #: loop -> the trips of each entry the walk decided from the loop's own executed condition
    #: (the warp's count: its last lane's)
    trips: dict[int, list[int]] = field(default_factory=dict)
    #: conditional branch slot -> (taken by every lane, taken by none) over its executions
    decisions: dict[int, tuple[bool, bool]] = field(default_factory=dict)
    #: local slot -> executions, each lane's per-thread offset placed as the hardware interleaves
    #: local memory (`interleaved`); kept apart from `accesses`, which the caches read as addresses
    local: dict[int, list[Access]] = field(default_factory=dict)
    steps: int = 0  # the cost bound's count: one per slot executed, one per run stepped over
    clock: int = 0  # every slot passed, the stepped-over ones too (the accesses' `step`)
    truncated: bool = False  # stopped at MAX_STEPS


@lru_cache(maxsize=4096)
def _address_terms(op: str | None) -> tuple[tuple[str, str, int, bool], ...] | None:
    """The address operand's text read once (a walk reads it at every execution): per term
    ("imm", "", value, False) or ("reg", name, scale, 64-bit); None where nothing is bracketed."""
    inner = op[op.rindex("[") + 1: op.rindex("]")] if op is not None and "[" in op else None
    if inner is None:
        return None
    parts = [p.strip() for p in inner.split("+")]
    # `[R2.64+UR6]` (sm_75-sm_89): with a 64-bit register part the uniform register is a 64-bit
    # base too (the pointer a ULDC.64 loaded), not its low word
    wide = any("64" in p.split(".")[1:] for p in parts)
    terms = []
    for part in parts:
        if not part:
            continue
        imm = lanes.immediate(part)
        if imm is not None:
            terms.append(("imm", "", imm & 0xFFFFFFFFFFFFFFFF, False))
            continue
        name, _, mods = part.partition(".")
        scale = 1
        if ".X" in "." + mods:
            scale = int(next(m for m in mods.split(".") if m.startswith("X"))[1:] or 1)
        terms.append(("reg", name, scale, "64" in mods.split(".") or (wide and name.startswith("UR") and name != "URZ")))
    return tuple(terms)


def _address(ws: WarpState, x, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """(64-bit addresses, per-lane state, reason) of a memory instruction's address operand."""
    terms = _address_terms(address_operand(x))
    if terms is None:
        return np.zeros(WARP, np.uint64), lanes.UNKNOWN_LANES.copy(), "no address operand"
    total = np.zeros(WARP, np.uint64)
    st = np.zeros(WARP, np.int8)
    reason = ""
    for kind, name, value, pair in terms:
        if kind == "imm":
            total = total + np.uint64(value)
            continue
        if pair:
            lo, hi = ws.pair(name)
            v = (hi.v.astype(np.uint64) << np.uint64(32)) | lo.v.astype(np.uint64)
            s = np.maximum(lo.st, hi.st)
            reason = reason or lo.reason or hi.reason
        else:
            r = ws.reg(name)
            v, s = r.v.astype(np.uint64), r.st
            reason = reason or r.reason
        total = total + v * np.uint64(value)
        st = np.maximum(st, s)
    return total, st, reason


#: walks by what they depend on (`_key`): one analysis prepares a kernel's launch for its quick
#: stage, its sensitivity and its what-if base alike (nest3 of bounded_shapes.cu: 30 of 64 walks
#: repeated one launch). Bounded; a result is never changed after it is made.
_MEMO: dict[tuple, WalkResult] = {}
_MEMO_SIZE = 256


def _code_key(k: DecodedKernel) -> tuple:
    """The code image as a key: its instructions' text and the function of each slot."""
    return tuple(i.text for i in k.instr), tuple(k.fn)


def _key(k: DecodedKernel, launch: Launch, max_iterations: int, max_steps: int) -> tuple:
    return (*_code_key(k), tuple(k.branch_role), tuple(L.trip for L in k.loops),
            launch.block, launch.grid, launch.ctaid, launch.warp, tuple(sorted(launch.bank0.items())),
            max_iterations, max_steps)


def walk(k: DecodedKernel, launch: Launch, *, max_iterations: int = MAX_ITERATIONS,
         max_steps: int = MAX_STEPS) -> WalkResult:
    """Walk one warp (`launch.warp` of block `launch.ctaid`) through `k`; loops use `k.loops`' trips."""
    key = _key(k, launch, max_iterations, max_steps)
    hit = _MEMO.get(key)
    if hit is None:
        hit = _walk(k, launch, max_iterations, max_steps)
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = hit
    return hit


def _walk(k: DecodedKernel, launch: Launch, max_iterations: int, max_steps: int) -> WalkResult:
    ws = WarpState(launch, [])
    out = WalkResult()
    n = len(k)
    pc = np.full(WARP, k.entry, np.int64)
    alive = ws.live.copy()
    stacks: list[list[int]] = [[] for _ in range(WARP)]
    entry = _LoopEntry(max_iterations)
    deciders = _deciders(k)
    local: dict[tuple[int, int], tuple[int, int, str]] = {}  # (lane, address) -> a stored word
    entered: dict[int, int] = {}  # loop the walk is in -> the call depth it entered it at
    inert_end = inert_slots(k)  # slot -> end of its run of instructions the walk steps over
    memory_op: dict[int, bool] = {}  # slot -> whether `_memory` runs it
    # straight-line code keeps every live lane together: after an instruction all of them ran,
    # the next step is the next slot, for the same lanes at the same call depth (no search)
    together: int | None = None
    depth = 0
    while any_lane(alive):
        if out.steps >= max_steps:
            out.truncated = True
            first = int(pc[alive].min())
            here = together if together is not None else first if np.all(pc[alive] == first) else None
            _solve_unfinished(k, entered, entry, alive, ws, out, here)
            break
        if together is not None:
            s, at = together, alive.copy()
        else:
            s = min(pc[alive].tolist())
            at = alive & (pc == s)
        whole, together = together is not None, None
        if not 0 <= s < n:
            alive &= ~at
            continue
        out.steps += 1
        if not whole:
            depth = len(stacks[int(at.argmax())])  # the first lane at `s`
        chain = k.loop_chain[s]
        for L in list(entered) if entered else ():
            # the walk left loop L (not into a call made from its body): its next entry counts anew
            if L not in chain and depth <= entered[L]:
                del entered[L]
                done = entry.iters.pop(L, 0)
                if entry.decided.pop(L, False):
                    out.trips.setdefault(L, []).append(done + 1)
                entry.snaps.pop(L, None)
                entry.compares.pop(L, None)
        for L in chain:
            entered.setdefault(L, depth)
        end = inert_end.get(s)
        if end is not None:
            others = alive & ~at
            if any_lane(others):  # lanes waiting inside the run join there
                end = min(end, int(pc[others].min()))
            out.clock += end - s
            pc[at] = end
            if whole or not any_lane(others):
                together = end
            continue
        out.clock += 1
        x = k.instr[s]
        kind = k.kind[s]
        if kind == K_BRA:
            _branch(k, ws, s, x, at, pc, entry, out)
            continue
        if kind == K_EXIT:
            if x.predicate is None:
                alive &= ~at
            else:
                v, known = ws.pred(x.predicate)
                leave = at & v & known  # an unknown guard passes, as in the engine
                if not all_lanes(known[at]):  # an early exit nobody can decide: a guess to name
                    why = ws.pred_reason.get(x.predicate.lstrip("!"), "")
                    out.unknown_branches.setdefault(s, f"the predicate {x.predicate} of the exit at pc {x.pc:#x} "
                                                       "is not known" + (f": {why}" if why else ""))
                alive &= ~leave
            pc[at & alive] = s + 1
            continue
        if kind == K_CALL:
            t = k.target[s]
            if t >= 0:
                for i in np.flatnonzero(at):
                    stacks[i].append(s + 1)
                pc[at] = t
            else:
                pc[at] = s + 1
            continue
        if kind == K_RET:
            for i in np.flatnonzero(at):
                if stacks[i]:
                    pc[i] = stacks[i].pop()
                else:
                    alive[i] = False
            continue
        if kind == K_OP:
            mem = memory_op.get(s)
            if mem is None:
                mem = memory_op[s] = _is_access(x)
            if mem:
                _memory(ws, x, s, at, out, local)
            else:
                if s in deciders:
                    _record_compare(ws, x, at, entry.compares.setdefault(deciders[s], []))
                lanes.execute(ws, x, at)
        pc[at] = s + 1
        if whole or np.count_nonzero(at) == np.count_nonzero(alive):  # `at` is every live lane
            together = s + 1
    return out


_INERT: dict[tuple, dict[int, int]] = {}
_INERT_SIZE = 64


def inert_slots(k: DecodedKernel) -> dict[int, int]:
    """The instructions whose results the walk's outputs never read, each mapped to the end of
    its run of such instructions (the next slot that is not one, or that lies in another loop or
    function): dead code with respect to what the walk reports, by backward liveness over the
    control flow graph, with the successors the walk itself follows.

    What is read: every register of a branch, exit, call, return or barrier; a load's address and
    guard (its value may become an address); a store's or atomic's address and guard, not its
    data (shared and global memory hold no values in the walk); all of a local store (a spilled
    index is read back). An instruction is live where it writes a register read later on some
    path, and then reads its own registers. Flow-sensitive, because ptxas reuses a GEMM's
    accumulator registers for the epilogue's addresses."""
    key = _code_key(k)
    hit = _INERT.get(key)
    if hit is not None:
        return hit
    n = len(k)
    bit: dict[str, int] = {}

    def mask(regs) -> int:
        m = 0
        for r in regs:
            m |= 1 << bit.setdefault(r, len(bit))
        return m

    roots, uses, kills, op = [0] * n, [0] * n, [0] * n, [False] * n
    succ: list[tuple[int, ...]] = [()] * n
    returns: dict[str, list[int]] = {}  # function -> the slots its calls return to
    for s in range(n):
        if k.kind[s] == K_CALL and k.target[s] >= 0:
            returns.setdefault(k.fn[k.target[s]], []).append(s + 1)
    for s in range(n):
        x, kind = k.instr[s], k.kind[s]
        if kind == K_BRA:
            # the successors the walk gives it: a branch with no target slot falls through (`_branch`)
            t = k.target[s]
            succ[s] = (s + 1,) if t < 0 else (t,) if x.predicate is None else (t, s + 1)
        elif kind == K_EXIT:
            succ[s] = () if x.predicate is None else (s + 1,)
        elif kind == K_RET:
            succ[s] = tuple(returns.get(k.fn[s], ()))
        elif kind == K_CALL:
            succ[s] = (k.target[s], s + 1) if k.target[s] >= 0 else (s + 1,)
        else:
            succ[s] = (s + 1,)
        succ[s] = tuple(t for t in succ[s] if 0 <= t < n)
        if kind != K_OP:
            roots[s] = mask(x.uses)
            continue
        if _is_access(x):
            info = isa.opcode_info(x.opcode)
            if info.access is isa.Access.LOAD or info.memory_space == "local":
                roots[s] = mask(x.uses) | mask(_address_reads(x))
            else:
                roots[s] = mask(_address_reads(x) | ({x.predicate.lstrip("!")} if x.predicate else set()))
        else:
            op[s] = True
            uses[s] = mask(x.uses)
        if x.predicate is None:
            kills[s] = mask(x.defs)
    defs = [mask(k.instr[s].defs) if op[s] else 0 for s in range(n)]
    live_in = [0] * n
    live = [False] * n
    changed = True
    while changed:
        changed = False
        for s in range(n - 1, -1, -1):
            out = 0
            for t in succ[s]:
                out |= live_in[t]
            used = op[s] and bool(defs[s] & out)
            new = (out & ~kills[s]) | roots[s] | (uses[s] if used else 0)
            if used != live[s] or new != live_in[s]:
                live[s], live_in[s] = used, new
                changed = True
    inert = [op[s] and not live[s] for s in range(n)]
    found: dict[int, int] = {}
    end = n
    for s in range(n - 1, -1, -1):
        if not inert[s]:
            continue
        if s + 1 >= n or not inert[s + 1] or k.loop_chain[s + 1] != k.loop_chain[s] or k.fn[s + 1] != k.fn[s]:
            end = s + 1
        found[s] = end
    if len(_INERT) >= _INERT_SIZE:
        _INERT.pop(next(iter(_INERT)))
    _INERT[key] = found
    return found


def _is_access(x) -> bool:
    """Whether the walk runs `x` as a memory access (`_memory`): a global, shared, generic or local
    one. A `__threadfence`'s `CCTL.IVALL` has no address."""
    return isa.opcode_info(x.opcode).memory_space in ("global", "shared", "generic", "local") \
        and x.opcode not in ("CCTL", "CCTLL")


def _address_reads(x) -> set[str]:
    """The registers `_address` reads for `x`'s address: each register term, and the next one where
    the term is a 64-bit pair (`[R2.64+UR6]` reads UR7 too, as `sass.address_regs` has it). Not
    that function itself: a descriptor (`desc[UR4]`) is no term the walk reads."""
    out: set[str] = set()
    for kind, name, _scale, pair in _address_terms(address_operand(x)) or ():
        if kind != "reg" or name in ("RZ", "URZ"):
            continue
        out.add(name)
        prefix = "UR" if name.startswith("UR") else "R"
        if pair and name[len(prefix):].isdigit():
            out.add(f"{prefix}{int(name[len(prefix):]) + 1}")
    return out


def _back_edge_predicate(k: DecodedKernel, latch: int) -> str | None:
    """The predicate under which the back edge at `latch` is taken: its own, or, for an
    unconditional back edge right after its iteration's exit test (`@P0 CALL.REL.NOINC exit;
    BRA head`, `decode.exit_ends_iteration`: how ptxas closes register-blocked loops from sm_80),
    the exit's, negated."""
    p = k.instr[latch].predicate
    if p is not None or latch == 0 or not exit_ends_iteration(k, latch - 1):
        return p
    q = k.instr[latch - 1].predicate
    return None if q is None else q[1:] if q.startswith("!") else "!" + q


def _deciders(k: DecodedKernel) -> dict[int, int]:
    """The ISETP that decides each loop's back edge (the last definition of the latch's predicate
    before it in the loop), by slot -> loop: its operands, recorded per iteration, give the trips."""
    out: dict[int, int] = {}
    for L, spec in enumerate(k.loops):
        for latch in spec.latches:
            p = _back_edge_predicate(k, latch)
            if p is None or k.branch_role[latch] != B_BACK:
                continue
            name = p.lstrip("!")
            for s in range(latch - 1, spec.header - 1, -1):
                if s in spec.body and name in k.instr[s].defs:
                    if k.instr[s].opcode in ("ISETP", "UISETP") and "EX" not in k.instr[s].modifiers:
                        out[s] = L
                    break
    return out


def _record_compare(ws: WarpState, x, at: np.ndarray, into: list) -> None:
    ops = [o.replace(".reuse", "").strip() for o in x.operands]
    if len(ops) < 4:
        return
    a, b = ws.operand(ops[2]), ws.operand(ops[3])
    into.append((a.v.copy(), b.v.copy(), (a.st == KNOWN) & (b.st == KNOWN)))


def _solve_trips(k: DecodedKernel, s: int, recs: list, done: int, lanes_mask: np.ndarray,
                 ws: WarpState) -> np.ndarray | None:
    """Per lane, the iteration at which the latch at `s` stops taking its back edge, from the
    exit compare's operands in the last three iterations (each stepping evenly): the loop's own
    condition carried forward, e.g. `i < numTiles` with `numTiles = (K + 63) / 64`. None where the
    compare is not a plain one of known, evenly stepping values."""
    if len(recs) < 3:
        return None
    (a1, b1, k1), (a2, b2, k2), (a3, b3, k3) = (tuple(np.asarray(v, np.int64) if i < 2 else v for i, v in
                                                     enumerate(r)) for r in recs[-3:])
    ok = k1 & k2 & k3
    if not all_lanes(ok[lanes_mask]):
        return None
    da, db = (a2 - a1) & 0xFFFFFFFF, (b2 - b1) & 0xFFFFFFFF
    if not (np.array_equal(((a3 - a2) & 0xFFFFFFFF)[lanes_mask], da[lanes_mask])
            and np.array_equal(((b3 - b2) & 0xFFFFFFFF)[lanes_mask], db[lanes_mask])):
        return None
    d = _decider_of(k, s)
    if d is None:
        return None
    ins = k.instr[d]
    ops = [o.replace(".reuse", "").strip() for o in ins.operands]
    mods = ins.modifiers
    cmp = next((m for m in mods if m in ("EQ", "NE", "LT", "LE", "GT", "GE")), None)
    comb = next((m for m in mods if m in ("AND", "OR", "XOR")), "AND")
    if cmp is None or len(ops) < 5 or (ops[4], comb) not in (("PT", "AND"), ("!PT", "OR"), ("!PT", "XOR")):
        return None
    back = _back_edge_predicate(k, s)
    name = back.lstrip("!")
    if name == ops[0]:
        flip = False
    elif name == ops[1]:
        flip = True
    else:
        return None
    flip ^= back.startswith("!")
    unsigned = "U32" in mods
    test = {"EQ": lambda p, q: p == q, "NE": lambda p, q: p != q, "LT": lambda p, q: p < q,
            "LE": lambda p, q: p <= q, "GT": lambda p, q: p > q, "GE": lambda p, q: p >= q}[cmp]

    def taken(lane: int, i: int) -> bool:
        # iteration `done + i`, i = 0 being the last recorded one
        p = (int(a3[lane]) + i * int(da[lane])) & 0xFFFFFFFF
        q = (int(b3[lane]) + i * int(db[lane])) & 0xFFFFFFFF
        if not unsigned:
            p, q = p - (p >> 31 << 32), q - (q >> 31 << 32)
        return test(p, q) != flip

    # taken while the two differ: ptxas's unrolled loop counts a remainder up to zero by its
    # unroll factor (`R9 = R19 + 4k`, `ISETP.NE R9, RZ`), not monotonic in the iteration: the
    # first equal one solves a congruence mod 2^32
    until_equal = (cmp == "NE") != flip and cmp in ("EQ", "NE")
    out = np.zeros(WARP, np.int64)
    for lane in np.flatnonzero(lanes_mask):
        if not taken(lane, 0):
            out[lane] = done
            continue
        if until_equal:
            i = _first_equal(int(b3[lane]) - int(a3[lane]), int(da[lane]) - int(db[lane]))
            if i is None:
                return None
            out[lane] = done + i
            continue
        hi = 1
        while hi < 1 << 31 and taken(lane, hi):
            hi <<= 1
        if hi >= 1 << 31:
            return None
        lo = hi >> 1  # taken at lo, not at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if taken(lane, mid):
                lo = mid
            else:
                hi = mid
        out[lane] = done + hi
    return out


def _solve_unfinished(k: DecodedKernel, entered: dict[int, int], entry: "_LoopEntry", alive: np.ndarray,
                      ws: WarpState, out: WalkResult, here: int | None) -> None:
    """At the step bound, the trips of each loop the walk is inside: a counter stepped by a
    constant in the body against a bound the body does not change. A long unrolled body (a
    register-blocked GEMM's K loop, thousands of instructions per trip) spends the bound inside
    its first iterations, before the three the evenly-stepping rule of `_solve_trips` reads; the
    SASS's own step stands in for the differences not yet seen. Where the exit compare has not
    run yet (the bound spent inside the first trip), its operands are the registers' values now,
    the counter's step added if its update lies between `here` (the slot every live lane is at;
    None where they are apart) and the compare."""
    for L in entered:
        if L in out.trips:
            continue
        spec = k.loops[L]
        decided = next(((x, d) for x in spec.latches if (d := _decider_of(k, x)) is not None), None)
        if decided is None:
            continue
        latch, d = decided
        ops = [o.replace(".reuse", "").strip() for o in k.instr[d].operands]
        steps = [_constant_step(k, spec.body, o, d) for o in ops[2:4]]
        if None in steps or steps.count(0) != 1:
            continue  # not one counter stepped by a constant against one bound the body leaves alone
        recs = entry.compares.get(L) or _pending_compare(k, L, d, ops, steps, here, ws)
        if not recs:
            continue
        a, b, ok = recs[-1]
        lanes_ok = alive & ok
        if not any_lane(lanes_ok):
            continue
        da, db = steps
        made = [(np.asarray(a, np.int64) + j * da, np.asarray(b, np.int64) + j * db, ok) for j in range(3)]
        solved = _solve_trips(k, latch, made, len(recs) + 2, lanes_ok, ws)
        if solved is not None:
            out.trips.setdefault(L, []).append(int(solved[lanes_ok].max()))


def _reloaded_constant(k: DecodedKernel, defs: list[int], at: int) -> str | None:
    """The constant-bank word (`c[0x0][0x230]`) the last of a register's definitions `defs` before
    slot `at`, in the same loop, loads unconditionally: what the register holds at `at` on every
    trip. None where that definition is anything else."""
    before = [s for s in defs if s < at and k.loop_chain[s][:1] == k.loop_chain[at][:1]]
    if not before:
        return None
    x = k.instr[max(before)]
    if x.opcode not in ("LDC", "ULDC", "LDCU") or x.predicate is not None or "64" in x.modifiers:
        return None
    word = x.operands[-1]
    fixed = lanes.fixed_constant(word)
    return word if fixed is not None and fixed[0] == 0 else None


def _pending_compare(k: DecodedKernel, L: int, d: int, ops: list[str], steps: list[int], here: int | None,
                     ws: WarpState) -> list:
    """The first execution of loop L's exit compare at slot `d`, not yet reached, as `_record_compare`
    would record it: from the slot `here` to `d` the code runs straight through L's own body (no
    inner loop or call holds the counter's update), so each operand is its register's value now,
    plus its step if its update lies in between. [] where that does not hold."""
    if here is None or not here <= d or k.loop_chain[d][:1] != (L,):
        return []
    vals = []
    for reg, step in zip(ops[2:4], steps):
        defs = [s for s in k.loops[L].body if reg in k.instr[s].defs]
        word = _reloaded_constant(k, defs, d) if defs else None
        v = ws.operand(word if word is not None else reg)
        if step:
            upd = defs[0]  # a stepped counter has its one update in the body (`_constant_step`)
            if k.loop_chain[upd][:1] != (L,):
                return []  # stepped inside an inner loop: more than once per trip
            if here <= upd < d:
                v = lanes.known(v.v.astype(np.uint64) + np.uint64(step & 0xFFFFFFFF)) if v.worst == KNOWN else v
        vals.append(v)
    a, b = vals
    return [(a.v.copy(), b.v.copy(), (a.st == KNOWN) & (b.st == KNOWN))]


def _constant_step(k: DecodedKernel, body, reg: str, at: int) -> int | None:
    """What one trip of a loop adds to `reg` as its exit compare at slot `at` reads it: 0 for an
    immediate, a register the body does not write, or one a kernel argument is loaded into again
    before the compare (`_reloaded_constant`: ptxas reuses the bound's register in a long body);
    the immediate of its one `IADD3 R, R, imm` (`UIADD3`, `VIADD`) in the body; None otherwise."""
    if reg in ("RZ", "URZ") or lanes.immediate(reg) is not None:
        return 0
    defs = [s for s in body if reg in k.instr[s].defs]
    if not defs or _reloaded_constant(k, defs, at) is not None:
        return 0
    if len(defs) != 1:
        return None
    x = k.instr[defs[0]]
    if x.opcode not in ("IADD3", "UIADD3", "VIADD") or x.predicate is not None:
        return None
    srcs = [o.replace(".reuse", "").strip() for o in x.operands[1:]]
    rest = [o for o in srcs if o not in (reg, "RZ", "URZ", "PT", "UPT", "!PT", "!UPT")]
    if srcs.count(reg) != 1 or len(rest) != 1:
        return None
    return lanes.immediate(rest[0])


def _first_equal(gap: int, step: int) -> int | None:
    """The least i >= 0 with i·step ≡ gap (mod 2^32): when a value stepping by `step` each
    iteration meets one `gap` above it; None when it never does."""
    m = 1 << 32
    gap, step = gap % m, step % m
    g = math.gcd(step, m)  # m when step is 0: met only if already equal
    if gap % g:
        return None
    mg = m // g
    return (gap // g) * pow(step // g, -1, mg) % mg if mg > 1 else 0


def _decider_of(k: DecodedKernel, latch: int) -> int | None:
    back = _back_edge_predicate(k, latch)
    if back is None:
        return None
    name = back.lstrip("!")
    spec = next((L for L in k.loops if latch in L.latches), None)
    if spec is None:
        return None
    for s in range(latch - 1, spec.header - 1, -1):
        if s in spec.body and name in k.instr[s].defs:
            return s if k.instr[s].opcode in ("ISETP", "UISETP") else None
    return None


def interleaved(offsets: np.ndarray, lane_ids: np.ndarray, width: int) -> tuple[int, ...]:
    """Where the lanes' per-thread local offsets fall in the warp's local memory: word w of lane l
    is at w·g·32 + l·g, g = max(width, 4), so a thread's consecutive words are a warp's words apart
    (the Programming Guide's "consecutive 32-bit words are accessed by consecutive thread IDs").
    A sub-word access stays in its lane's 32-bit word: a warp's 2-byte store spans 128 bytes, four
    sectors, as `memory_shapes` takes it. Wider accesses interleave at their width, which touches
    the same sectors as 32-bit interleaving. Lanes at the same offset then fill one line; lanes
    whose offsets differ land in lines of their own."""
    g = max(width, 4)
    o = offsets.astype(np.int64)
    return tuple(((o // g) * g * WARP + lane_ids.astype(np.int64) * g + o % g).tolist())


def _local(ws: WarpState, x, mask: np.ndarray, local: dict, s: int, out: WalkResult) -> bool:
    """Local memory is each thread's own: a value stored there (a spilled pointer, a local array
    of pointers) is what a later load of the same word reads back. False if not a local access.
    Each execution is recorded in `out.local` with the interleaved addresses of its lanes."""
    if x.opcode not in ("STL", "LDL"):
        return False
    addr, st, reason = _address(ws, x, mask)
    width = max(1, isa.access_bytes(x) or 4)
    words = max(1, width // 4)
    active = np.flatnonzero(mask)
    if len(active):
        if any_lane(st[mask] == UNKNOWN):
            acc = Access(len(active), None, False, reason or "the address is not known", out.clock, out.steps)
        else:
            acc = Access(len(active), interleaved(addr[active], active, width), False, "", out.clock, out.steps)
        out.local.setdefault(s, []).append(acc)
    ops = [o.replace(".reuse", "").strip() for o in x.operands]
    if x.opcode == "STL":
        data = ops[-1]
        name = data.split(".")[0]
        prefix = "UR" if name.startswith("UR") else "R"
        base = int("".join(c for c in name if c.isdigit()) or 0) if name not in ("RZ", "URZ") else None
        for w in range(words):
            val = ws.reg(f"{prefix}{base + w}") if base is not None else lanes.known(0)
            for i in np.flatnonzero(mask):
                if st[i] == UNKNOWN:
                    continue
                local[(int(i), int(addr[i]) + 4 * w)] = (int(val.v[i]), int(val.st[i]), val.reason)
        return True
    regs = [d for d in x.defs if d.startswith("R")]
    for w, d in enumerate(regs):
        v = np.zeros(WARP, np.uint32)
        sts = lanes.UNKNOWN_LANES.copy()
        why = f"a local-memory word the walk did not see stored (line {x.line})"
        for i in np.flatnonzero(mask):
            hit = local.get((int(i), int(addr[i]) + 4 * w)) if st[i] != UNKNOWN else None
            if hit is not None:
                v[i], sts[i] = hit[0], hit[1]
                why = hit[2] or why
        ws.write(d, Value(v, sts, why), mask)
    return True


def _memory(ws: WarpState, x, s: int, at: np.ndarray, out: WalkResult, local: dict) -> None:
    mask = at.copy()
    if x.predicate is not None:
        v, known = ws.pred(x.predicate)
        mask &= v | ~known  # an unknown guard passes
    if _local(ws, x, mask, local, s, out):
        return
    if any_lane(mask):
        addr, st, reason = _address(ws, x, mask)
        read = mask
        rows = isa.address_lanes(x)[0]
        if rows < WARP and any_lane(mask[:rows]):  # an ldmatrix reads lanes 0..8N-1's addresses only
            read = mask.copy()
            read[rows:] = False
        a, s_ = addr[read], st[read]
        if any_lane(s_ == UNKNOWN):
            acc = Access(int(np.count_nonzero(read)), None, False, reason or "the address is not known",
                         out.clock, out.steps)
        else:
            acc = Access(int(np.count_nonzero(read)), tuple(a.tolist()), any_lane(s_ == UNIFORM), "",
                         out.clock, out.steps)
        out.accesses.setdefault(s, []).append(acc)
        uniform = acc.addresses is not None and len(set(acc.addresses)) == 1
    else:
        uniform = True
    where = f"line {x.line}" if x.line is not None else f"pc {x.pc:#x}"
    why = f"the value loaded by {x.opcode} at {where}"
    for d in x.defs:
        if d.startswith("P") or d.startswith("UP"):
            continue
        val = ws.stand_in(why) if uniform else lanes.unknown(why)
        ws.write(d, val, mask)


@dataclass
class _LoopEntry:
    """What the walk keeps of each loop's current entry (from entering it to leaving it)."""

    max_iterations: int  # iterations walked before the rest is extrapolated
    iters: dict[int, int] = field(default_factory=dict)  # loop -> iterations so far
    snaps: dict[int, list[dict[str, Value]]] = field(default_factory=dict)  # loop -> registers per iteration
    decided: dict[int, bool] = field(default_factory=dict)  # loop -> every latch decision came from known predicates
    compares: dict[int, list] = field(default_factory=dict)  # loop -> its exit compare's operands, per iteration


def _branch(k: DecodedKernel, ws: WarpState, s: int, x, at: np.ndarray, pc: np.ndarray, entry: _LoopEntry,
            out: WalkResult) -> None:
    iters, snaps, decided, compares = entry.iters, entry.snaps, entry.decided, entry.compares
    t = k.target[s]
    role = k.branch_role[s]
    if t < 0:
        pc[at] = s + 1
        return
    known_all = True
    if x.predicate is None:
        take = at.copy()
    else:
        v, known = ws.pred(x.predicate)
        known_all = all_lanes(known[at])
        if not known_all:
            why = ws.pred_reason.get(x.predicate.lstrip("!"), "")
            out.unknown_branches.setdefault(s, f"the predicate {x.predicate} of the branch at pc {x.pc:#x} "
                                               "is not known" + (f": {why}" if why else ""))
        default = role in (B_JUMP, B_BACK)
        take = at & np.where(known, v, default)
        if known_all and role != B_BACK:
            all_, none = out.decisions.get(s, (True, True))
            out.decisions[s] = (all_ and all_lanes(take[at]), none and not any_lane(take[at]))
    if role == B_BACK:
        L = k.branch_loop[s]
        decided[L] = decided.get(L, True) and known_all
    if role == B_BACK and any_lane(take):
        L = k.branch_loop[s]
        done = iters.get(L, 0) + 1
        iters[L] = done
        # a register's Value is replaced on every write, never changed in place: a shallow copy
        snaps.setdefault(L, []).append(dict(ws.regs))
        trip = max(1, k.loops[L].trip)
        if not known_all and done >= trip:
            take = np.zeros(WARP, bool)  # the engine's trip count ends a loop the walk cannot decide
        elif done >= entry.max_iterations:
            solved = _solve_trips(k, s, compares.get(L, []), done, take, ws) if known_all else None
            if solved is not None:
                out.trips.setdefault(L, []).append(int(solved[take].max()))
                remaining = solved - done
            else:
                remaining = np.full(WARP, trip - done, np.int64)
            decided[L] = False  # recorded here (or not decidable): not again when the walk leaves
            _extrapolate(ws, snaps[L][-4:], remaining, take, k, L)
            exit_slot = _exit_slot(k, L, s)
            pc[take] = exit_slot
            pc[at & ~take] = s + 1
            return
    pc[take] = t
    pc[at & ~take] = s + 1


def _exit_slot(k: DecodedKernel, L: int, latch: int) -> int:
    """Where lanes leave loop L when the walk stops it: past the latch, else an exit branch's target."""
    body = k.loops[L].body
    if latch + 1 not in body:
        return latch + 1
    for s in sorted(body):
        if k.kind[s] == K_BRA and k.branch_role[s] == B_EXIT and k.target[s] not in body:
            return k.target[s]
    return max(body) + 1


def _extrapolate(ws: WarpState, snaps: list[dict[str, Value]], remaining: np.ndarray, lanes_mask: np.ndarray,
                 k: DecodedKernel, L: int) -> None:
    """Carry each register the loop changed to its value after `remaining` more trips (per lane),
    where its last values step evenly; otherwise it is unknown from here on."""
    lanes_mask = lanes_mask & (remaining > 0)
    if not any_lane(lanes_mask):
        return
    why = f"changed by the loop at line {k.loops[L].line or '?'} in a way the walk does not follow"
    last = snaps[-1]
    for r, val in list(ws.regs.items()):
        firsts = [sn.get(r) for sn in snaps]
        if any(f is None for f in firsts):
            if all(f is None for f in firsts[:-1]) and firsts[-1] is not None:
                continue  # written only in the last iteration's tail: leave it
        if all(f is not None and (f is val or (all_lanes(f.v == val.v) and all_lanes(f.st == val.st)))
               for f in firsts):
            continue  # loop-invariant (a register not written since a snapshot is the same Value)
        if len(snaps) >= 3 and all(f is not None for f in firsts):
            seq = [f.v.astype(np.int64) for f in firsts]
            st = np.maximum.reduce([f.st for f in firsts])
            d = (seq[1] - seq[0]) & 0xFFFFFFFF
            even = all(all_lanes(((b - a) & 0xFFFFFFFF) == d) for a, b in zip(seq[1:], seq[2:]))
            if even and all_lanes(last[r].v == val.v) and all_lanes(st < UNKNOWN):
                nv = ((seq[-1] + d * np.maximum(remaining, 0)) & 0xFFFFFFFF).astype(np.uint32)
                v = val.v.copy()
                v[lanes_mask] = nv[lanes_mask]
                ws.regs[r] = Value(v, val.st.copy(), val.reason)
                continue
        st = val.st.copy()
        st[lanes_mask] = UNKNOWN
        ws.regs[r] = Value(val.v.copy(), st, val.reason or why)
