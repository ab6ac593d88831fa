"""Hand-built instruction streams for the emulator tests (an `Instruction` is a plain model)."""

from __future__ import annotations

from kernelscope.analysis.frontend.cfg import build_cfg
from kernelscope.analysis.emulator.decode import decode
from kernelscope.analysis.emulator.engine import Engine, EngineConfig
from kernelscope.analysis.emulator.listeners import PCSampler
from kernelscope.analysis.emulator.model import _cfg_loops
from kernelscope.analysis.emulator.units import RESOURCES, MachineModel, ResourceParams
from kernelscope.analysis.frontend.program import FunctionProgram, LoopInfo
from kernelscope.analysis.results import Resources
from kernelscope.analysis.frontend.instructions import Instruction, SassFunction


def ins(i: int, op: str, defs=(), uses=(), pred=None, target=None, mods=(), operands=(), space=None) -> Instruction:
    return Instruction(index=i, pc=16 * i, opcode=op, modifiers=tuple(mods), predicate=pred,
                       operands=tuple(operands), defs=tuple(defs), uses=tuple(uses), memory_space=space,
                       branch_target=target, location=None, inline_chain=(), control=None,
                       text=" ".join([op, *operands]))


def phases(P: int, ilp: int, op: str = "FADD") -> list[Instruction]:
    """SAAKE §3.2: P phases of `ilp` independent chains; instruction k of phase p needs k of p−1."""
    out: list[Instruction] = []
    for _ in range(P):
        for k in range(ilp):
            out.append(ins(len(out), op, (f"R{k}",), (f"R{k}",)))
    # EXIT consumes the results, so it does not compete for issue slots with the last phase
    out.append(ins(len(out), "EXIT", (), tuple(f"R{k}" for k in range(ilp))))
    return out


def loop_kernel(ilp: int, body_extra: int = 0) -> list[Instruction]:
    """A counted loop: `ilp` FADD chains, `body_extra` IMADs, counter update, compare, back edge."""
    out = [ins(0, "MOV", ("R20",), (), operands=("R20", "RZ"))]
    header = len(out)
    for k in range(ilp):
        out.append(ins(len(out), "FADD", (f"R{k}",), (f"R{k}",)))
    for j in range(body_extra):
        out.append(ins(len(out), "IMAD", (f"R{30 + j % 8}",), (f"R{30 + j % 8}",)))
    out.append(ins(len(out), "IADD3", ("R20",), ("R20",), operands=("R20", "R20", "0x1", "RZ")))
    out.append(ins(len(out), "ISETP", ("P0",), ("R20",), mods=("NE", "AND"), operands=("P0", "PT", "R20", "c[0x0][0x160]", "PT")))
    out.append(ins(len(out), "BRA", (), ("P0",), pred="P0", target=16 * header, operands=(hex(16 * header),)))
    out.append(ins(len(out), "EXIT", (), tuple(f"R{k}" for k in range(ilp))))
    return out


def function_program(instrs: list[Instruction], trips: tuple[int | None, ...] = (), name: str = "k") -> FunctionProgram:
    fn = SassFunction(mangled_name=name, name=name, is_kernel=True, instructions=tuple(instrs))
    cfg = build_cfg(fn)
    loops = tuple(LoopInfo(index=i, header_line=None, source_line=None, trip_count=t) for i, t in enumerate(trips))
    return FunctionProgram(sass=fn, cfg=cfg, resources=Resources(registers=32), loops=loops)


def machine(L: float, G: float, resource: str = "fp32", schedulers: int = 1) -> MachineModel:
    params = tuple(ResourceParams(L, G) if r == resource else ResourceParams(1.0, 1.0) for r in RESOURCES)
    return MachineModel(params, schedulers_per_sm=schedulers)


def run(instrs: list[Instruction], m: MachineModel, warps: int, *, policy: str = "gto", trips: tuple[int, ...] = (),
        sample: tuple[int, ...] | None = None, blocks: int = 1):
    """Emulate one block of `warps` warps on one scheduler; returns (EngineRun, PCSampler, decoded)."""
    fp = function_program(instrs, trips)
    loops = _cfg_loops(fp)
    loops = [type(L)(L.header, L.latches, L.body, L.parent, trips[i] if i < len(trips) else 1, L.info_index)
             for i, L in enumerate(loops)]
    k = decode([(fp.mangled, fp.sass.instructions)], loops, {})
    sampler = PCSampler()
    emul = list(sample) if sample is not None else [L.trip for L in k.loops]
    r = Engine(k, m, EngineConfig(blocks=blocks, warps_per_block=warps, policy=policy, representative=False),
               emul, [sampler]).run()
    return r, sampler, k
