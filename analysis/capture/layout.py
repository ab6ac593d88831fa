"""Kernel parameter layout from the cubin: EIATTR_KPARAM_INFO in `cuobjdump -elf`.

The runtime receives `void** args`, one pointer per parameter, with no sizes; only the compiled
kernel says how many bytes each parameter has (a struct or a `long` is one entry of its own size).
"""

from __future__ import annotations

import re

_SECTION = re.compile(r"^\.nv\.info\.(\S+)\s*$")
_KPARAM = re.compile(r"Ordinal\s*:\s*(0x[0-9a-fA-F]+)\s+Offset\s*:\s*(0x[0-9a-fA-F]+)\s+Size\s*:\s*(0x[0-9a-fA-F]+)")


def kparam_sizes(elf_dump: str) -> dict[str, tuple[int, ...]]:
    """Mangled kernel name -> parameter sizes in declaration order (ordinal order).
    A binary built for several architectures lists each kernel once per cubin; they agree."""
    found: dict[str, dict[int, int]] = {}
    current: str | None = None
    for line in elf_dump.splitlines():
        if m := _SECTION.match(line.strip()):
            current = m.group(1)
            found.setdefault(current, {})
        elif line.startswith(".") and not line.startswith(".nv.info."):
            current = None
        elif current is not None and (m := _KPARAM.search(line)):
            found[current][int(m.group(1), 16)] = int(m.group(3), 16)
    return {k: tuple(v[i] for i in sorted(v)) for k, v in found.items() if v}
