"""What-if: a loop's global loads served from shared memory (Starlight Table 1, "increase
shared-memory usage"), the modeled ceiling of tiling that loop.

Eq. 3 (`estimators.line_speedup`) credits a tiling with every stall blamed on the loop's global
loads. How many that is depends on how ptxas schedules the loop, not on what tiling changes:
`#pragma unroll 4` on a naive GEMM batches its loads, moves the FMAs' waits onto them, and took
the estimate from 2.6× to 8.6× with the predicted time unchanged. Re-emulating the same code with
those loads turned into conflict-free shared-memory loads (same registers, same dependences,
the shared pipe's latency and throughput) gives a figure that follows the kernel's time instead.

It is a ceiling, stated as such: the tile's own cost (one global load and one shared store per
element per tile, two barriers per tile) is left out, and the loads are taken as conflict-free.
"""

from __future__ import annotations

import dataclasses
import math

from ..profile import StallReason
from .decode import M_GLOBAL, M_SHARED, R, DecodedKernel, LoopSpec, MemoryShape
from .units import RES_ID

#: bytes one shared-memory wavefront serves (32 banks × 4 B)
_WAVEFRONT_BYTES = 128


def staged_loads(k: DecodedKernel, loop: LoopSpec) -> tuple[int, ...]:
    """Slots of the global loads (not stores, not atomics) in `loop`'s body, nested loops included."""
    return tuple(s for s in sorted(loop.body) if k.mem[s] == M_GLOBAL and not k.is_store[s])


def stage_in_shared(k: DecodedKernel, slots: tuple[int, ...]) -> DecodedKernel:
    """A copy of `k` whose `slots` load from shared memory: the shared pipe, one wavefront per
    128 B the warp requests (conflict-free), no L2 or DRAM traffic, short-scoreboard waits."""
    mem, res, pipe, shape, reason = list(k.mem), list(k.res), list(k.pipe), list(k.shape), list(k.result_reason)
    for s in slots:
        mem[s] = M_SHARED
        res[s] = pipe[s] = RES_ID["shared"]
        wavefronts = max(1.0, math.ceil(shape[s].bytes_l1 / _WAVEFRONT_BYTES))
        shape[s] = MemoryShape(wavefronts=wavefronts, requests=0.0, l2_hit_rate=1.0, bytes_l1=shape[s].bytes_l1,
                               pattern="broadcast" if shape[s].pattern == "broadcast" else "coalesced")
        reason[s] = R[StallReason.short_scoreboard]
    return dataclasses.replace(k, mem=mem, res=res, pipe=pipe, shape=shape, result_reason=reason)


__all__ = ["staged_loads", "stage_in_shared"]
