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
  last three values step evenly (induction variables, pointers); any other is unknown.
* Loads give unknown values (data-dependent): the same unknown in every lane when the lanes
  read one address, so a base pointer read from memory still gives exact strides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..frontend import isa
from . import lanes
from .decode import B_BACK, B_EXIT, B_JUMP, K_BRA, K_CALL, K_EXIT, K_OP, K_RET, DecodedKernel
from .lanes import KNOWN, UNIFORM, UNKNOWN, WARP, Launch, Value, WarpState

#: iterations of each loop entry the walk runs; three give two differences to extrapolate from
MAX_ITERATIONS = 3
#: warp-instructions one walk executes at most (the cost bound: 30-60 µs each, so at most about 0.1 s)
MAX_STEPS = 2500


@dataclass(frozen=True)
class Access:
    """One execution of a memory instruction by the walked warp."""

    lanes: int  # lanes that executed it
    addresses: tuple[int, ...] | None  # their byte addresses; None where any is not known
    relative: bool = False  # the addresses hold an unknown uniform part: differences exact
    reason: str = ""  # why the addresses are not known


@dataclass
class WalkResult:
    accesses: dict[int, list[Access]] = field(default_factory=dict)  # slot -> executions
    unknown_branches: dict[int, str] = field(default_factory=dict)  # slot -> why
    steps: int = 0
    truncated: bool = False  # stopped at MAX_STEPS


def _address(ws: WarpState, x, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """(64-bit addresses, per-lane state, reason) of a memory instruction's address operand."""
    inner = None
    for op in x.operands:
        if "[" in op and (op.startswith("[") or op.startswith("desc[")):
            inner = op[op.rindex("[") + 1: op.rindex("]")]
            break
    if inner is None:
        return np.zeros(WARP, np.uint64), np.full(WARP, UNKNOWN, np.int8), "no address operand"
    total = np.zeros(WARP, np.uint64)
    st = np.zeros(WARP, np.int8)
    reason = ""
    for part in (p.strip() for p in inner.split("+")):
        if not part:
            continue
        if part.startswith("0x") or part.lstrip("-").isdigit() or part.startswith("-0x"):
            total = total + np.uint64(int(part, 0) & 0xFFFFFFFFFFFFFFFF)
            continue
        name, _, mods = part.partition(".")
        scale = 1
        if ".X" in "." + mods:
            scale = int(next(m for m in mods.split(".") if m.startswith("X"))[1:] or 1)
        if "64" in mods.split("."):
            lo, hi = ws.pair(name)
            v = (hi.v.astype(np.uint64) << np.uint64(32)) | lo.v.astype(np.uint64)
            s = np.maximum(lo.st, hi.st)
            reason = reason or lo.reason or hi.reason
        else:
            r = ws.reg(name)
            v, s = r.v.astype(np.uint64), r.st
            reason = reason or r.reason
        total = total + v * np.uint64(scale)
        st = np.maximum(st, s)
    return total, st, reason


def walk(k: DecodedKernel, launch: Launch, *, max_iterations: int = MAX_ITERATIONS,
         max_steps: int = MAX_STEPS) -> WalkResult:
    """Walk one warp (`launch.warp` of block `launch.ctaid`) through `k`; loops use `k.loops`' trips."""
    ws = WarpState(launch, [])
    out = WalkResult()
    n = len(k)
    pc = np.full(WARP, k.entry, np.int64)
    alive = ws.live.copy()
    stacks: list[list[int]] = [[] for _ in range(WARP)]
    iters: dict[int, int] = {}
    snaps: dict[int, list[dict[str, Value]]] = {}
    prev_chain: tuple[int, ...] = ()
    while alive.any():
        if out.steps >= max_steps:
            out.truncated = True
            break
        s = int(pc[alive].min())
        at = alive & (pc == s)
        if not 0 <= s < n:
            alive &= ~at
            continue
        out.steps += 1
        chain = k.loop_chain[s]
        for L in prev_chain:
            if L not in chain:  # the walk left loop L: its next entry starts counting again
                iters.pop(L, None)
                snaps.pop(L, None)
        prev_chain = chain
        x = k.instr[s]
        kind = k.kind[s]
        if kind == K_BRA:
            _branch(k, ws, s, x, at, pc, iters, snaps, out, max_iterations)
            continue
        if kind == K_EXIT:
            if x.predicate is None:
                alive &= ~at
            else:
                v, known = ws.pred(x.predicate)
                leave = at & v & known  # an unknown guard passes, as in the engine
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
            info = isa.opcode_info(x.opcode)
            if info.memory_space in ("global", "shared", "generic", "local") and x.opcode not in ("CCTL", "CCTLL"):
                _memory(ws, x, s, at, out)
            else:
                lanes.execute(ws, x, at)
        pc[at] = s + 1
    return out


def _memory(ws: WarpState, x, s: int, at: np.ndarray, out: WalkResult) -> None:
    mask = at.copy()
    if x.predicate is not None:
        v, known = ws.pred(x.predicate)
        mask &= v | ~known  # an unknown guard passes
    if mask.any():
        addr, st, reason = _address(ws, x, mask)
        a, s_ = addr[mask], st[mask]
        if (s_ == UNKNOWN).any():
            acc = Access(int(mask.sum()), None, False, reason or "the address is not known")
        else:
            acc = Access(int(mask.sum()), tuple(int(v) for v in a), bool((s_ == UNIFORM).any()))
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


def _branch(k: DecodedKernel, ws: WarpState, s: int, x, at: np.ndarray, pc: np.ndarray, iters: dict,
            snaps: dict, out: WalkResult, max_iterations: int) -> None:
    t = k.target[s]
    role = k.branch_role[s]
    if t < 0:
        pc[at] = s + 1
        return
    if x.predicate is None:
        take = at.copy()
    else:
        v, known = ws.pred(x.predicate)
        if not known[at].all():
            out.unknown_branches.setdefault(s, f"the predicate {x.predicate} of the branch at pc {x.pc:#x} "
                                               "is not known")
        default = role in (B_JUMP, B_BACK)
        take = at & np.where(known, v, default)
    if role == B_BACK and take.any():
        L = k.branch_loop[s]
        done = iters.get(L, 0) + 1
        iters[L] = done
        snaps.setdefault(L, []).append({r: Value(val.v.copy(), val.st.copy(), val.reason)
                                        for r, val in ws.regs.items()})
        trip = max(1, k.loops[L].trip)
        unknown_here = x.predicate is not None and not ws.pred(x.predicate)[1][at].all()
        if unknown_here and done >= trip:
            take = np.zeros(WARP, bool)  # the engine's trip count ends a loop the walk cannot decide
        elif done >= max_iterations:
            _extrapolate(ws, snaps[L][-3:], trip - done, take, k, L)
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


def _extrapolate(ws: WarpState, snaps: list[dict[str, Value]], remaining: int, lanes_mask: np.ndarray,
                 k: DecodedKernel, L: int) -> None:
    """Carry each register the loop changed to its value after `remaining` more trips, where its
    last values step evenly; otherwise it is unknown from here on."""
    if remaining <= 0:
        return
    why = f"changed by the loop at line {k.loops[L].line or '?'} in a way the walk does not follow"
    last = snaps[-1]
    for r, val in list(ws.regs.items()):
        firsts = [sn.get(r) for sn in snaps]
        if any(f is None for f in firsts):
            if all(f is None for f in firsts[:-1]) and firsts[-1] is not None:
                continue  # written only in the last iteration's tail: leave it
        if all(f is not None and np.array_equal(f.v, val.v) and np.array_equal(f.st, val.st) for f in firsts):
            continue  # loop-invariant
        if len(snaps) >= 3 and all(f is not None for f in firsts):
            a, b, c = (f.v.astype(np.int64) for f in firsts)
            st = np.maximum.reduce([f.st for f in firsts])
            d = (b - a) & 0xFFFFFFFF
            if np.array_equal(d, (c - b) & 0xFFFFFFFF) and np.array_equal(last[r].v, val.v) and (st < UNKNOWN).all():
                nv = ((c + d * remaining) & 0xFFFFFFFF).astype(np.uint32)
                v = val.v.copy()
                v[lanes_mask] = nv[lanes_mask]
                ws.regs[r] = Value(v, val.st.copy(), val.reason)
                continue
        st = val.st.copy()
        st[lanes_mask] = UNKNOWN
        ws.regs[r] = Value(val.v.copy(), st, val.reason or why)
