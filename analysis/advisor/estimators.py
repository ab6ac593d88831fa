"""Performance estimators: how much an optimizer's match could gain (GPA §V-B, Starlight Eq. 2–4).

Optimizers say *what* matched (samples, lines); estimators say *how much*. Each returns an
`Estimate` that carries its formula and inputs, so a user can redo the arithmetic. All are
pure functions of sample counts (GPA §II-A: T all samples, A active/issued samples, M matched
samples), so modeled and measured profiles go through the same code.
"""

from __future__ import annotations

from .advice import Estimate

#: A cap that keeps estimates finite when a match covers (almost) every sample; no code change
#: removes all of a kernel's time.
MAX_SPEEDUP = 20.0


def _finite(s: float) -> float:
    return max(1.0, min(MAX_SPEEDUP, s))


def stall_elimination(total: float, matched: float, fraction: float = 1.0) -> Estimate:
    """GPA Eq. 2: S^e = T / (T − M), assuming the optimization removes the matched stalls.

    `fraction` (default 1) is the share of M the change can remove when a pattern only
    partly goes away (e.g. vectorizing 4 scalar loads into one removes 3/4 of their issue).
    """
    m = max(0.0, min(matched * fraction, total))
    s = total / (total - m) if total > m else MAX_SPEEDUP
    inputs = {"T": total, "M": matched}
    if fraction != 1.0:
        inputs["fraction"] = fraction
    formula = "GPA Eq. 2: T/(T−M)" if fraction == 1.0 else "GPA Eq. 2: T/(T−f·M)"
    return Estimate(speedup=_finite(s), formula=formula, inputs=inputs)


def fewer_sectors(total: float, accesses: list[tuple[float, float, float]], unit: str = "sectors") -> Estimate:
    """GPA Eq. 2 for coalescing: each access (its blamed cost w, the 32 B sectors its warp request
    touches, the sectors its bytes need) keeps ideal/sectors of its cost, so f = 1 − Σ w·ideal/sectors
    / Σ w of the matched M = Σ w goes. The sectors are the executed lanes' (static_facts.executed_shapes).
    The same for a shared-memory bank conflict, over the wavefronts it is served in (`unit`)."""
    m = sum(w for w, _, _ in accesses)
    kept = sum(w * min(1.0, ideal / sectors) for w, sectors, ideal in accesses if sectors > 0)
    fraction = 1.0 - kept / m if m > 0 else 0.0
    est = stall_elimination(total, m, fraction)
    worst = max(accesses, key=lambda a: a[1] / max(a[2], 1.0))
    return est.model_copy(update={"inputs": {**est.inputs, unit: worst[1], f"ideal_{unit}": worst[2]}})


def latency_hiding(total: float, matched_latency: float, active: float, *, scope: str | None = None) -> Estimate:
    """GPA Eq. 4 (kernel scope) / Eq. 5 (loop or function scope): S^h = T / (T − min(A, M^L)).

    Only issued work can fill stall slots, so the gain is bounded by the active samples of the
    scope being rearranged (A summed over the scope and the scopes nested in it, Eq. 5).
    Theorem V.1: at kernel scope the result is at most 2×.
    """
    hidden = max(0.0, min(active, matched_latency))
    s = total / (total - hidden) if total > hidden else MAX_SPEEDUP
    formula = "GPA Eq. 5: T/(T−min(ΣA_scope, M_L))" if scope else "GPA Eq. 4: T/(T−min(A, M_L))"
    return Estimate(speedup=_finite(s), formula=formula, inputs={"T": total, "M_L": matched_latency, "A": active})


def issue_rate(issue_ratio: float, warps: float) -> float:
    """GPA Eq. 8/9: the chance a scheduler issues with W warps each issuing with probability R_I."""
    r = max(0.0, min(1.0, issue_ratio))
    return 1.0 - (1.0 - r) ** max(0.0, warps)


def parallel(warps: float, new_warps: float, issue_ratio: float, factor: float = 1.0) -> Estimate:
    """GPA Eq. 6–10: S^p = (1/C_W) · C_I · f with C_W = W_new/W and C_I = I_new/I.

    W are active warps per scheduler. For block increase the same work is spread over more
    schedulers (each gets C_W of it); thread increase keeps the work per scheduler and passes
    f = C_W so that only the issue-rate change counts (as HPCToolkit's latency estimator does).
    """
    c_w = new_warps / warps if warps > 0 else 1.0
    i_old, i_new = issue_rate(issue_ratio, warps), issue_rate(issue_ratio, new_warps)
    c_i = i_new / i_old if i_old > 0 else 1.0
    s = (1.0 / c_w) * c_i * factor if c_w > 0 else 1.0
    return Estimate(speedup=_finite(s), formula="GPA Eq. 10: (1/C_W)·C_I·f, I = 1−(1−R_I)^W",
                    inputs={"W": warps, "W_new": new_warps, "R_I": issue_ratio, "C_W": c_w, "C_I": c_i, "f": factor})


def line_runtime_share(line_ops: float, line_stalls: float, total: float) -> float:
    """Starlight Eq. 2: (N_op,l + N_stall,l) / Σ_i (N_op,i + N_stall,i), as a fraction (0..1)."""
    return (line_ops + line_stalls) / total if total > 0 else 0.0


def line_speedup(total: float, optype_stalls: float) -> Estimate:
    """Starlight Eq. 3: Σ(N_op+N_stall) / (Σ(N_op+N_stall) − N_optype-stalls,l)."""
    m = max(0.0, min(optype_stalls, total))
    s = total / (total - m) if total > m else MAX_SPEEDUP
    return Estimate(speedup=_finite(s), formula="Starlight Eq. 3: Σ(N_op+N_stall)/(Σ(N_op+N_stall)−N_stalls,l)",
                    inputs={"total": total, "N_stalls_l": optype_stalls})


def new_performance(speedup: float, performance: float) -> float:
    """Starlight Eq. 4: new performance = speedup × original performance (same operation count)."""
    return speedup * performance


def modeled_ratio(duration: float, new_duration: float, what: str) -> Estimate:
    """The emulator's what-if: the same kernel re-modeled with a changed launch (SAAKE §5)."""
    s = duration / new_duration if new_duration > 0 else 1.0
    return Estimate(speedup=_finite(s), formula=f"emulator what-if ({what}): T_now/T_new",
                    inputs={"T_now_s": duration, "T_new_s": new_duration}, remodeled=True)


def balanced_blocks(blocks: int, sms: int) -> Estimate:
    """Block increase when blocks < SMs and nothing else is known: idle SMs could take work.

    HPCToolkit's block-increase estimate: balanced = ⌈B/SMs⌉·SMs, speedup = balanced/B —
    an upper bound that assumes the per-block work splits evenly.
    """
    bal = ((blocks - 1) // sms + 1) * sms if blocks > 0 else sms
    return Estimate(speedup=_finite(bal / max(1, blocks)), formula="⌈B/SMs⌉·SMs / B (idle SMs)",
                    inputs={"B": blocks, "SMs": sms})


def idle_schedulers(warps: int, schedulers: int) -> Estimate:
    """Block increase when the grid has fewer warps than the GPU has warp schedulers (GPA Eq. 6: a
    scheduler without a warp issues nothing), however many blocks: the same work over more threads
    gives every scheduler a warp. The upper bound `balanced_blocks` is for SMs, for schedulers: it
    assumes each thread's work splits evenly and a warp's time scales with its work."""
    return Estimate(speedup=_finite(schedulers / max(1, warps)), formula="schedulers / W_grid (idle schedulers)",
                    inputs={"W_grid": warps, "schedulers": schedulers})


def wave_efficiency(blocks: int, per_wave: int) -> float:
    """W / ⌈W⌉ with W = blocks / blocks per wave: the share of the SM slots the waves keep busy
    when every wave takes as long as a full one (the last, partial wave is the tail)."""
    if blocks <= 0 or per_wave <= 0:
        return 1.0
    waves = blocks / per_wave
    return waves / -(-blocks // per_wave)


def tail(blocks: int, per_wave: int, new_blocks: int, new_per_wave: int) -> Estimate:
    """The same threads in another block shape: the ratio of wave efficiencies (a tail wave costs a
    full wave's time, with part of the SMs idle)."""
    e, e_new = wave_efficiency(blocks, per_wave), wave_efficiency(new_blocks, new_per_wave)
    return Estimate(speedup=_finite(e_new / e) if e > 0 else 1.0, formula="waves: (W'/⌈W'⌉)/(W/⌈W⌉)",
                    inputs={"B": blocks, "B_per_wave": per_wave, "B_new": new_blocks, "B_per_wave_new": new_per_wave,
                            "W": blocks / per_wave, "W_new": new_blocks / new_per_wave})
