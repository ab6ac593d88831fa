"""ptxas's resource report (`-Xptxas -v`): the one model of what a function uses of the SM.

The compile (nvcc or NVRTC) parses it, the program carries it per function, occupancy and the
advisor read it, and the result reports it: one `Resources` all the way, so no stage converts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict


class Resources(BaseModel):
    """ptxas's resource report for one function (`-Xptxas -v`)."""

    # dynamic shared memory is a launch property, not here

    model_config = ConfigDict(frozen=True)

    registers: int
    barriers: int = 0
    static_smem: int = 0
    constant_bytes: int = 0  # all banks (cmem[0] ...); recent ptxas omits it for sm_90
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    local_bytes: int = 0  # lmem, where ptxas prints it


class KernelResources(BaseModel):
    """ptxas's lines for one function: which function, and its `Resources`."""

    model_config = ConfigDict(frozen=True)

    name: str  # mangled
    is_kernel: bool  # an entry function (__global__)
    arch: str | None = None
    cumulative_stack_bytes: int = 0  # the frame plus its callees' (the call graph's deepest path)
    usage: Resources = Resources(registers=0)


def by_function(reports: Iterable[KernelResources]) -> dict[str, Resources]:
    """Each function's resources by mangled name (what `frontend.program.build_program` takes)."""
    return {r.name: r.usage for r in reports}


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_FUNC = re.compile(r"Compiling function '(?P<name>[^']+)'(?: for '(?P<arch>[^']+)')?")
_PROPS = re.compile(r"Function properties for (?P<name>\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_BYTES = re.compile(r"(\d+) bytes (smem|lmem|cmem\[(\d+)\]|cumulative stack size)")


def parse_resources(output: str) -> tuple[KernelResources, ...]:
    """Every function ptxas -v reports in `output` (nvcc's or NVRTC's log)."""
    funcs: dict[str, dict] = {}
    usage: dict[str, dict] = {}
    current: str | None = None
    for line in output.splitlines():
        if line.startswith("ptxas"):
            if m := _ENTRY.search(line):
                current = m["name"]
                funcs.setdefault(current, {"name": current, "is_kernel": False})
                funcs[current].update(is_kernel=True, arch=m["arch"])
            elif m := _FUNC.search(line):
                current = m["name"]
                funcs.setdefault(current, {"name": current, "is_kernel": False}).update(arch=m["arch"])
            elif m := _PROPS.search(line):
                current = m["name"]
                funcs.setdefault(current, {"name": current, "is_kernel": False})
            elif current is not None and (m := _USED.search(line)):
                u = usage.setdefault(current, {})
                u["registers"] = int(m.group(1))
                if b := _BARRIERS.search(line):
                    u["barriers"] = int(b.group(1))
                for n, kind, _bank in _BYTES.findall(line):
                    if kind == "smem":
                        u["static_smem"] = int(n)
                    elif kind == "lmem":
                        u["local_bytes"] = int(n)
                    elif kind == "cumulative stack size":
                        funcs[current]["cumulative_stack_bytes"] = int(n)
                    else:
                        u["constant_bytes"] = u.get("constant_bytes", 0) + int(n)
        elif current is not None and (m := _STACK.search(line)):
            usage.setdefault(current, {}).update(stack_frame=int(m.group(1)), spill_stores=int(m.group(2)),
                                                 spill_loads=int(m.group(3)))
    return tuple(KernelResources(**f, usage=Resources(**{"registers": 0, **usage.get(name, {})}))
                 for name, f in funcs.items())
