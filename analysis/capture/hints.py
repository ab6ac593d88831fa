"""A capture reduced to what the model takes per kernel: the most frequent configuration, its
argument bytes, and how many launches and configurations the program made."""

from __future__ import annotations

from collections.abc import Mapping

from ..frontend.kernel_names import mangled_base_name
from ..options import CapturedKernel
from .capture import Capture

def captured_kernels(capture: Capture, names: Mapping[str, str] | None = None) -> dict[str, CapturedKernel]:
    """Kernel name -> its captured launch: its most frequent configuration and launch count.

    Each instance is keyed by its readable name (`names`: mangled -> demangled, as the program
    model names it), so `MatrixMulCUDA<16>` and `MatrixMulCUDA<32>` each keep their own launch,
    and an instance the program never launched has none. The base name's entry stands for every
    instance together (the most launched configuration over all of them), for a lookup by the
    name a user writes."""
    names = names or {}
    groups: dict[str, list] = {}
    for x in capture.launches:
        groups.setdefault(mangled_base_name(x.kernel), []).append(x)
        groups.setdefault(names.get(x.kernel, x.kernel), []).append(x)
    counts: dict[str, int] = {}
    for mangled, n in capture.counts.items():
        for key in {mangled_base_name(mangled), names.get(mangled, mangled)}:
            counts[key] = counts.get(key, 0) + n
    out: dict[str, CapturedKernel] = {}
    for key, launches in groups.items():
        configs: dict[tuple, int] = {}
        for x in launches:
            k = (x.grid, x.block, x.shared_bytes, tuple(a.hex() for a in x.args) if x.args is not None else ())
            configs[k] = configs.get(k, 0) + 1
        (grid, block, smem, args), _ = max(configs.items(), key=lambda kv: kv[1])
        out[key] = CapturedKernel(grid=grid, block=block, dynamic_smem=smem, args=args,
                                  launches=counts.get(key, sum(configs.values())), configurations=len(configs))
    return out
