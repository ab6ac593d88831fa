"""A capture reduced to what the model takes per kernel: the most frequent configuration, its
argument bytes, and how many launches and configurations the program made."""

from __future__ import annotations

from ..measure.ncu_report import mangled_base_name
from ..options import CapturedKernel
from .capture import Capture

_UNSIGNED = ("unsigned", "size_t", "uint", "uint8_t", "uint16_t", "uint32_t", "uint64_t")
_INTEGER = ("int", "long", "short", "char", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "bool", *_UNSIGNED)


def captured_kernels(capture: Capture) -> dict[str, CapturedKernel]:
    """Base kernel name -> its captured launch. Template instances of one kernel share a base name:
    the most launched configuration over all of them stands for the kernel, as the model analyses
    one instance (the same rule as a launch site that folds)."""
    by_base: dict[str, dict[tuple, int]] = {}
    launches: dict[str, int] = {}
    for x in capture.launches:
        base = mangled_base_name(x.kernel)
        key = (x.grid, x.block, x.shared_bytes, tuple(a.hex() for a in x.args) if x.args is not None else ())
        by_base.setdefault(base, {})[key] = by_base.setdefault(base, {}).get(key, 0) + 1
    for name, n in capture.counts.items():
        base = mangled_base_name(name)
        launches[base] = launches.get(base, 0) + n
    out: dict[str, CapturedKernel] = {}
    for base, configs in by_base.items():
        (grid, block, smem, args), _ = max(configs.items(), key=lambda kv: kv[1])
        out[base] = CapturedKernel(grid=grid, block=block, dynamic_smem=smem, args=args,
                                   launches=launches.get(base, sum(configs.values())), configurations=len(configs))
    return out


def scalar_value(raw_hex: str, type_text: str) -> int | None:
    """An integer kernel argument from its bytes (little-endian, the CUDA ABI on x86-64 and
    aarch64); floating-point, struct and pointer arguments are not integer values of the model."""
    t = " ".join(w for w in type_text.replace("*", " * ").split() if w not in ("const", "volatile", "__restrict__"))
    if "*" in t or "&" in t or not any(w in _INTEGER for w in t.split()):
        return None
    raw = bytes.fromhex(raw_hex)
    if len(raw) not in (1, 2, 4, 8):
        return None
    return int.from_bytes(raw, "little", signed=not any(w in _UNSIGNED for w in t.split()))
