"""Map the stall-reason names of Nsight Compute and CUPTI onto `StallReason`.

The names differ by tool and version (measurement.md, "Stall reasons"):
- per-PC ncu metrics say `no_instructions` (plural); the kernel averages say `no_instruction`;
- ncu's CSV source page says `stall_sleep` where the metric says `sleeping`;
- CUPTI's reason table uses the full metric names (`smsp__pcsamp_warps_issue_stalled_<r>`),
  with `_not_issued` variants for the not-issued subset.
A reason the enum does not know (e.g. Hopper's `warpgroup_arrive`, unverified label) is
counted as `misc`, so per-PC totals still equal the sample count.
"""

from __future__ import annotations

from ..profile import StallReason

PCSAMP_PREFIX = "smsp__pcsamp_warps_issue_stalled_"

_ALIASES = {
    "no_instructions": StallReason.no_instruction,
    "sleep": StallReason.sleeping,
}


def stall_reason(name: str) -> StallReason:
    """The enum member for one tool's reason name; unknown names become `misc`."""
    key = name.strip().lower()
    for prefix in (PCSAMP_PREFIX, "stall_"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    if key in _ALIASES:
        return _ALIASES[key]
    try:
        return StallReason(key)
    except ValueError:
        return StallReason.misc


def is_not_issued(name: str) -> bool:
    """`..._not_issued` metrics count a subset of the same samples; adding them would count twice."""
    return name.endswith("_not_issued")


def add_samples(into: dict[StallReason, float], name: str, n: float) -> None:
    reason = stall_reason(name)
    into[reason] = into.get(reason, 0.0) + n
