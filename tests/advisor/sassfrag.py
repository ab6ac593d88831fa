"""Hand-built SASS fragments for the blamer tests: Instruction models constructed directly."""

from __future__ import annotations

from datetime import datetime, timezone

from kernelscope.analysis.profile import (KernelProfile, LaunchConfig, PCSample, Provenance, StallReason)
from kernelscope.analysis.frontend.instructions import ControlCode, Instruction, SourceLocation

FN = "_Z4fragPf"


def cc(wb: int | None = None, rb: int | None = None, wait: tuple[int, ...] = (), stall: int = 1) -> ControlCode:
    return ControlCode(stall=stall, yield_=False, write_barrier=wb, read_barrier=rb,
                       wait_mask=sum(1 << b for b in wait), reuse=0)


def ins(index: int, opcode: str, defs: tuple[str, ...] = (), uses: tuple[str, ...] = (), *, pred: str | None = None,
        space: str | None = None, control: ControlCode | None = None, target: int | None = None,
        line: int | None = None, modifiers: tuple[str, ...] = ()) -> Instruction:
    uses_all = uses + ((pred.lstrip("!"),) if pred else ())
    return Instruction(index=index, pc=index * 16, opcode=opcode, modifiers=modifiers, predicate=pred,
                       operands=defs + uses, defs=defs, uses=uses_all, memory_space=space,
                       branch_target=target * 16 if target is not None else None,
                       location=SourceLocation(file="frag.cu", line=line if line is not None else 10 + index),
                       inline_chain=(), control=control, text=f"{opcode} {', '.join(defs + uses)}")


def samples(**by_index: dict[StallReason, float]) -> dict[int, PCSample]:
    """samples(i3={StallReason.selected: 2}) -> {pc: PCSample}"""
    return {int(k[1:]) * 16: PCSample(function=FN, pc=int(k[1:]) * 16, samples=v) for k, v in by_index.items()}


def provenance(kind: str = "modeled") -> Provenance:
    return Provenance(kind=kind, device="H100 SXM", arch="sm_90", tool="test", tool_version="0",
                      time=datetime(2026, 1, 1, tzinfo=timezone.utc))


def profile(pcs: dict[int, PCSample], *, kind: str = "modeled", grid=(1024, 1, 1), block=(256, 1, 1),
            occupancy: float = 1.0, flops=None, bytes_=None, duration_s: float = 1e-3, registers: int = 32,
            limiter: str | None = None) -> KernelProfile:
    return KernelProfile(kernel=FN, name="frag", launch=LaunchConfig(grid=grid, block=block), registers_per_thread=registers,
                         occupancy=occupancy, occupancy_limiter=limiter, duration_s=duration_s, pcs=tuple(pcs.values()),
                         lines=(), flops=flops or {}, bytes=bytes_ or {}, provenance=provenance(kind))
