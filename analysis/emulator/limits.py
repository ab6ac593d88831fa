"""Physical limits every modeled profile must respect (issue 20 item 5).

A prediction above the device's peak FLOP/s for a precision, above a memory level's bandwidth
for the traffic the model itself counted, or with fewer FLOPs than the SASS executes for the
trip counts the model assumed, is a bug in the model (loops or control flow reconstructed
wrongly), never something to clamp. `limit_violations` names each broken limit so tests and
benchmarks can assert there are none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..machine.roofline import RooflineModel
from ..profile import KernelProfile
from .decode import K_BRA, K_CALL, K_EXIT, K_RET, DecodedKernel, reachable

_FLOW = (K_BRA, K_CALL, K_EXIT, K_RET)

# profile FLOP keys -> roofline ceiling names
_CEILING = {"fp64": "fp64", "fp32": "fp32", "fp16": "fp16", "int": "int32", "tensor": "tensor_fp16"}
_SLACK = 1.001  # rounding of the emulator's per-warp scaling, not a tolerance for the model


def loop_flops_floor(k: DecodedKernel, warps: int) -> dict[str, float]:
    """FLOPs the SASS must execute for the model's own trip counts, at the least.

    For each loop, the FLOP instructions every iteration runs (the header's straight line up
    to its first branch, and the latch's block back from the latch) times the trips of the loop
    and of the loops around it, times the warps. The largest over the loops is a floor: other
    paths only add work. A loop the emulation cannot reach (in a math slow path it skips,
    `decode.reachable`) executes nothing.
    """
    best: dict[str, float] = {}
    live = reachable(k)
    for i, L in enumerate(k.loops):
        if L.header not in live:
            continue
        mult = float(L.trip)
        p = L.parent
        while p is not None:
            mult *= k.loops[p].trip
            p = k.loops[p].parent
        always: set[int] = set()
        s = L.header
        while s in L.body and (s == L.header or k.kind[s - 1] not in _FLOW):
            always.add(s)
            s += 1
        for latch in L.latches:
            s = latch
            while s in L.body and s not in always and (s == latch or k.kind[s] not in _FLOW):
                always.add(s)
                s -= 1
        own = {x for x in always if k.loop_of[x] == i and k.instr[x].predicate is None}
        per: dict[str, float] = {}
        for x in own:
            for prec, v in k.flops[x].items():
                per[prec] = per.get(prec, 0.0) + v
        for prec, v in per.items():
            best[prec] = max(best.get(prec, 0.0), v * mult * warps)
    return best


def limit_violations(profile: KernelProfile, ceilings: RooflineModel,
                     floor: Mapping[str, float] | None = None) -> tuple[str, ...]:
    """Each physical limit `profile` breaks, as a sentence; empty when it breaks none."""
    out: list[str] = []
    t = profile.duration_s
    if not t or t <= 0 or not math.isfinite(t):
        return (f"{profile.name}: predicted duration {t!r} is not a positive time",)
    for prec, n in profile.flops.items():
        peak = ceilings.peak(_CEILING.get(prec, prec))
        if peak and n / t > peak * _SLACK:
            out.append(f"{profile.name}: {n / t / 1e12:.2f} T{prec} ops/s above the peak {peak / 1e12:.2f}")
    for level, b in profile.bytes.items():
        bw = ceilings.bandwidth(level)
        if bw and b / t > bw * _SLACK:
            out.append(f"{profile.name}: {b / t / 1e9:.0f} GB/s of {level} traffic above its bandwidth {bw / 1e9:.0f}")
    for prec, n in (floor or {}).items():
        if profile.flops.get(prec, 0.0) * _SLACK < n:
            out.append(f"{profile.name}: {profile.flops.get(prec, 0.0):.3g} {prec} FLOPs modeled, fewer than the "
                       f"{n:.3g} its loops execute for their trip counts")
    return tuple(out)
