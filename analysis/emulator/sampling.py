"""Loop sampling: run the first iterations of long loops and extrapolate (SAAKE §4.4's shortcut,
made to hold for every loop shape, issue 13).

A loop of T trips is emulated for K ≤ T iterations: `warmup` of them warm the pipes and caches,
the last `cooldown` let the warps drain out, and each steady one in between stands for
(T − w − c)/(K − w − c) real ones. The engine tags every event with a *bucket* (the innermost
loop whose steady state the warp is in) and listeners scale their tallies per bucket.

Calls make the nesting dynamic: a loop inside a `__noinline__` callee runs once per call, so
its iterations stand for its own factor *times* that of the loop the call sits in. Each such
(call-site bucket, callee loop) pair gets a bucket of its own, a *call context*, enumerated here
before the run so that listeners can size their tallies.

What a run costs is counted the same way, structurally: a callee's instructions once per call,
times the emulated trips of the loops around the call. `emulated_trips` lowers K until that
count fits the run's issue budget.
"""

from __future__ import annotations

import math

from .decode import B_BACK, B_EXIT, B_JUMP, K_BRA, K_CALL, K_EXIT, K_RET, CallContexts, DecodedKernel

#: recursion deeper than this is cut: the deeper CALL falls through (an assumption on the result)
MAX_CALL_DEPTH = 8
#: call contexts beyond this many share their callee loop's own bucket (a recursion fanning out);
#: the scale of such a context then misses its call site's factor
MAX_CALL_CONTEXTS = 64


def successors(k: DecodedKernel, s: int) -> tuple[int, ...]:
    """Where the engine may go after slot `s` within its function (a CALL continues after the
    call; the callee is a region of its own). Mirrors `Engine._issue`'s control flow: branches it
    never takes are not followed."""
    kind, n, predicated = k.kind[s], len(k), k.instr[s].predicate is not None
    nxt = (s + 1,) if s + 1 < n else ()
    if kind in (K_EXIT, K_RET):
        return nxt if predicated else ()
    if kind == K_BRA:
        role, t = k.branch_role[s], k.target[s]
        if role == B_JUMP:
            return (t,) if t >= 0 else ()
        if role in (B_BACK, B_EXIT) and t >= 0:
            return (*nxt, t)
    return nxt


def region(k: DecodedKernel, entry: int) -> tuple[int, ...]:
    """The slots a function entered at `entry` can run, in slot order."""
    seen, todo = {entry}, [entry]
    while todo:
        for t in successors(k, todo.pop()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return tuple(sorted(seen))


def _calls(k: DecodedKernel, slots: tuple[int, ...]) -> list[int]:
    return [s for s in slots if k.kind[s] == K_CALL and k.target[s] >= 0]


def call_contexts(k: DecodedKernel) -> CallContexts:
    """Every (call-site bucket, callee loop) pair a run can reach, depth-first from the kernel."""
    n_loops = len(k.loops)
    bucket: dict[tuple[int, int], int] = {}
    order: list[tuple[int, int]] = []
    regions: dict[int, tuple[int, ...]] = {}

    def of(base: int, loop: int) -> int:
        if base == 0:
            return loop + 1
        key = (base, loop)
        if key not in bucket and len(order) < MAX_CALL_CONTEXTS:
            bucket[key] = n_loops + 1 + len(order)
            order.append(key)
        return bucket.get(key, loop + 1)

    seen: set[tuple[int, int]] = set()
    todo = [(k.entry, 0, 0)]
    while todo:
        entry, base, depth = todo.pop()
        if (entry, base) in seen or depth > MAX_CALL_DEPTH:
            continue
        seen.add((entry, base))
        slots = regions.get(entry) or regions.setdefault(entry, region(k, entry))
        for s in slots:  # the callee's loops, in the context of this call site
            for L in k.loop_chain[s]:
                of(base, L)
        for s in _calls(k, slots):
            at = {base} | {of(base, L) for L in k.loop_chain[s]}
            for b in sorted(at):
                todo.append((k.target[s], b, depth + 1))
    return CallContexts(bucket, tuple(order))


def bucket_scales(k: DecodedKernel, emul_trip: list[int], warmup: int, cooldown: int | list[int] = 1,
                  contexts: CallContexts | None = None) -> list[float]:
    """How many real steady iterations each emulated one stands for, per bucket (0 = outside loops).

    A sample in loop L's steady state stands for Π_{M ⊋ L} T_M/K_M · (T_L − w − c)/(K_L − w − c)
    samples, with T the full and K the emulated trip count, w the warm-up and c the cool-down
    iterations (which stay in the enclosing bucket, like the code around the loop). A call
    context multiplies its callee loop's factor by its call site's.
    """
    out = [1.0]
    for i, L in enumerate(k.loops):
        K, T = emul_trip[i], L.trip
        e = warmup + (cooldown[i] if isinstance(cooldown, list) else cooldown)
        f = (T - e) / (K - e) if K > e and T > e else 1.0
        p = L.parent
        while p is not None:
            f *= k.loops[p].trip / max(1, emul_trip[p])
            p = k.loops[p].parent
        out.append(f)
    for base, loop in (contexts.order if contexts else ()):
        out.append(out[base] * out[loop + 1])  # `base` precedes its contexts: enumerated depth-first
    return out


def issues_per_warp(k: DecodedKernel, emul_trip: list[int],
                    regions: dict[int, tuple] | None = None) -> float:
    """Warp-instructions one warp issues with these emulated trips, calls included (an upper
    bound: both sides of a branch the engine falls through are counted). `regions` memoizes each
    function's `_profile` across calls (`emulated_trips` asks again after each one-trip cut)."""
    regions = {} if regions is None else regions
    memo: dict[tuple[int, int], float] = {}

    def cost(entry: int, depth: int) -> float:
        if (entry, depth) in memo:
            return memo[(entry, depth)]
        memo[(entry, depth)] = 0.0  # a recursion reaching itself before the cut counts once
        prof = regions.get(entry)
        if prof is None:
            prof = regions[entry] = _profile(k, entry)
        chains, calls = prof
        # whole numbers, so the sum is exact in any order (the slots' order before) below 2**53
        total = 0.0
        for chain, n in chains:
            total += n * math.prod(emul_trip[L] for L in chain)
        if depth < MAX_CALL_DEPTH:
            for chain, target in calls:
                total += math.prod(emul_trip[L] for L in chain) * cost(target, depth + 1)
        memo[(entry, depth)] = total
        return total

    return cost(k.entry, 0)


def _profile(k: DecodedKernel, entry: int) -> tuple[tuple[tuple[tuple[int, ...], int], ...],
                                                   tuple[tuple[tuple[int, ...], int], ...]]:
    """A function's slots as what their count depends on: (loop chain, slots on it) and, per call
    it makes, (loop chain of the call site, callee entry)."""
    chains: dict[tuple[int, ...], int] = {}
    calls = []
    for s in region(k, entry):
        chain = k.loop_chain[s]
        chains[chain] = chains.get(chain, 0) + 1
        if k.kind[s] == K_CALL and k.target[s] >= 0:
            calls.append((chain, k.target[s]))
    return tuple(chains.items()), tuple(calls)


def _loops_of_deep_nests(k: DecodedKernel) -> set[int]:
    """Every loop of a nest three or more levels deep."""
    chains = []
    for L in k.loops:
        chain, p = [], L.parent
        while p is not None:
            chain.append(p)
            p = k.loops[p].parent
        chains.append(chain)
    roots = {(c[-1] if c else i) for i, c in enumerate(chains) if len(c) >= 2}
    return {i for i, c in enumerate(chains) if (c[-1] if c else i) in roots}


def emulated_trips(k: DecodedKernel, warps: int, *, sample: bool, warmup: int, max_sampled: int,
                   issue_budget: int) -> tuple[list[int], list[int]]:
    """Iterations to run per loop, and each loop's cool-down.

    All iterations without sampling; else warm-up + steady + cool-down iterations, reduced
    (largest first) until the run fits `issue_budget`; a loop with a long body may drop its
    cool-down, whose only purpose is to keep the warps' drain out of the steady state.
    """
    trips = [L.trip for L in k.loops]
    if not sample:
        return trips, [0] * len(trips)
    w = warmup
    # Every loop of a nest three or more deep samples warm-up + one steady + one cool-down
    # iteration: an outer loop's iterations each run the inner loops' own sampled windows, whose
    # steady state is what they repeat, and the windows multiply, so K³ iterations made the cost
    # grow with the nest's trips up to the budget (issue 13). Two-deep nests (GEMM's K loop inside
    # a tile loop) keep their windows: there the outer loop's iterations differ in what the inner
    # one finds in the caches.
    deep = _loops_of_deep_nests(k)
    emul = [min(t, w + 2 if i in deep else max(w + 2, max_sampled)) for i, t in enumerate(trips)]
    cool = [1] * len(trips)
    regions: dict[int, tuple] = {}
    while issues_per_warp(k, emul, regions) * warps > issue_budget:
        # a loop run whole (a short inner loop under two outer ones) is sampled too when the
        # run does not fit: nests multiply, so the innermost trips are what a 3-deep nest costs
        cands = [i for i, e in enumerate(emul) if e > w + 1 + cool[i]]
        if not cands:
            cands = [i for i, e in enumerate(emul) if cool[i] and e == w + 2 and e < trips[i]]
            if not cands:
                break
            i = max(cands, key=lambda j: len(k.loops[j].body))
            cool[i], emul[i] = 0, w + 1
            continue
        i = max(cands, key=lambda j: emul[j])
        emul[i] -= 1
    return emul, cool
