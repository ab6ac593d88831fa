"""Integer work on real nvcc output: what the INT32 roofline counts, and the bookkeeping it leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.frontend import isa
from kernelscope.analysis.machine import integer_work
from emulator._build import build_example
from frontend.test_isa import _ins
from frontend.test_sass import build

DATA = Path(__file__).resolve().parents[1] / "data"
TRANSPOSE = DATA / "real" / "code-samples" / "transpose.cu"
BITONIC = DATA / "roofline" / "cuda-samples" / "bitonicSort.cu"
COMMON = DATA / "real" / "cuda-samples" / "Common"


@pytest.mark.parametrize("opcode,operands,ops", [
    ("IMAD", "R7,R7,UR4,R0", 2), ("IMAD.WIDE", "R2,R7,0x4,R2", 2), ("IMAD.HI.U32", "R3,R5,R3,R4", 2),
    ("IMAD.MOV.U32", "R4,RZ,RZ,R3", 0), ("IMAD", "R4,RZ,RZ,0x7", 0), ("IMAD.SHL.U32", "R0,R0,0x4,RZ", 1),
    ("IMAD.IADD", "R3,R3,0x1,-R2", 1), ("IADD3", "R0,R1,R2,RZ", 1), ("LOP3.LUT", "R6,R6,R7,RZ,0x3c,!PT", 1),
    ("ISETP.GE.AND", "P0,PT,R7,UR4,PT", 1), ("SHF.R.U32.HI", "R6,RZ,0x10,R7", 1), ("SEL", "R1,R2,R3,P0", 1),
    ("MOV", "R1,R2", 0), ("S2R", "R0,SR_TID.X", 0), ("PLOP3.LUT", "P0,PT,P1,P2,PT,0x80,0x0", 0),
    ("UIADD3", "UR4,UR4,0x1,URZ", 0), ("FFMA", "R0,R1,R2,R3", 0),
])
def test_integer_operations_per_instruction(opcode, operands, ops):
    """isa.int_ops: a multiply-add 2 (as the INT32 peak counts IMAD), other integer ALU work 1,
    moves (IMAD.MOV, RZ·RZ + c), predicate logic and the uniform datapath 0."""
    assert isa.int_ops(_ins(opcode, operands)) == ops


@pytest.fixture(scope="module")
def transpose(toolchain):
    return build_example(TRANSPOSE, toolchain)


@pytest.fixture(scope="module")
def bitonic(toolchain):
    return build_example(BITONIC, toolchain, flags=(f"-I{COMMON}",))


def test_a_copy_does_no_integer_work(transpose):
    """The transpose sample's copies and transposes compute only indices, bounds and loop counters:
    every integer instruction is bookkeeping, so they are memory-only on the roofline."""
    assert len(transpose.kernels) == 5
    for k in transpose.kernels:
        ins = k.sass.instructions
        raw = sum(isa.int_ops(x) for x in ins)
        assert raw > 0, k.name  # there is integer arithmetic to leave out
        assert integer_work.integer_ops(ins) == (0.0,) * len(ins), k.name
        assert {ins[i].opcode for i in integer_work.overhead(ins)} >= {"IMAD", "S2R"}


def test_a_sorting_network_keeps_its_compares_and_drops_its_index_arithmetic(bitonic):
    """bitonicSort's comparator `if ((keyA > keyB) == dir) swap` compares loaded keys and decides,
    through predicated stores or SELs, what is written: its ISETPs and SELs are work. The index
    arithmetic (`pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1))`, byte addresses) and the
    `for (stride ...)` loop control are bookkeeping."""
    assert len(bitonic.kernels) == 4
    for k in bitonic.kernels:
        ins = k.sass.instructions
        ops = integer_work.integer_ops(ins)
        raw = sum(isa.int_ops(x) for x in ins)
        compares = sum(o for x, o in zip(ins, ops) if x.opcode in ("ISETP", "SEL"))
        assert 0 < sum(ops) < raw / 2, k.name
        # the rest is the comparator's direction (`dir ^ ((i & (size / 2)) != 0)`, which decides what is
        # stored) and what the rule errs on (a predicated write that may not happen)
        assert compares >= 0.5 * sum(ops), k.name
        skip = integer_work.overhead(ins)
        assert any(ins[i].opcode == "IMAD" for i in skip), k.name
    (looped,) = [k for k in bitonic.kernels if k.cfg.loops]  # bitonicSortShared: loops over size, stride
    ins = looped.sass.instructions
    assert {x.opcode for x, o in zip(ins, integer_work.integer_ops(ins)) if o} == {"ISETP", "SEL"}
    loop_exits = [i for i, x in enumerate(ins) if x.opcode == "ISETP" and ins[i + 1].opcode == "BRA"]
    assert loop_exits and all(i in integer_work.overhead(ins) for i in loop_exits)


NOINLINE = r"""
__device__ __noinline__ unsigned fmix(unsigned h) {
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; return h ^ (h >> 16);
}
__global__ void hash(const unsigned* in, unsigned* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = fmix(in[i]);
}
"""


def test_a_value_returned_from_a_call_is_work(tmp_path):
    """A non-inlined callee (placed after the kernel's EXIT, entered by CALL, left by RET) returns
    its hash in a register nothing in the callee reads: where it goes is not visible there, so the
    hash is counted (module rule), while the caller's index arithmetic is still bookkeeping."""
    _, module = build(NOINLINE, tmp_path, "hash")
    (fn,) = module.functions
    ins = fn.instructions
    ops = integer_work.integer_ops(ins)
    exit_, ret = (next(i for i, x in enumerate(ins) if x.opcode == op) for op in ("EXIT", "RET"))
    callee = range(exit_ + 1, ret)
    assert [ops[i] for i in callee] == [isa.int_ops(ins[i]) for i in callee]
    assert sum(ops[i] for i in callee) == 10  # 3 SHF + 3 LOP3 (1 each) + 2 IMAD (2 each)
    assert all(ops[i] == 0 for i in range(exit_) if ins[i].opcode == "IMAD")
