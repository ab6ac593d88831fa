"""Opcode classification on real sm_90 code and on the table's documented cases."""

from __future__ import annotations

import pytest

from kernelscope.analysis.frontend import isa
from kernelscope.analysis.frontend.isa import Access, InstrClass, Pipe
from kernelscope.analysis.frontend.sass import parse_nvdisasm
from _listing import text_listing
from frontend.test_sass import build

SRC = r"""
__global__ void mix(const float4* a, float* b, double* d, const int* q, int n) {
    __shared__ float t[256];
    int i = threadIdx.x;
    float4 v = a[i];
    t[i] = v.x * v.y + v.z;
    __syncthreads();
    d[i] = d[i] * (double)b[i] + 1.0;
    b[i] = t[255 - i] + (float)(q[i] / n);
}
"""


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    return build(SRC, tmp_path_factory.mktemp("isa"), "mix")[1].function("_Z3mixPK6float4PfPdPKii")


def _first(fn, full_opcode_prefix):
    return next(x for x in fn.instructions if x.full_opcode.startswith(full_opcode_prefix))


def test_real_classification(mix):
    ffma = _first(mix, "FFMA")
    assert (isa.instruction_class(ffma), isa.pipe(ffma), isa.flops(ffma)) == (InstrClass.FP32, Pipe.FP32, 2)
    assert not isa.is_variable_latency(ffma)
    dfma = _first(mix, "DFMA")
    assert (isa.instruction_class(dfma), isa.pipe(dfma), isa.flops(dfma)) == (InstrClass.FP64, Pipe.FP64, 2)
    f2f = _first(mix, "F2F.F64.F32")
    assert isa.is_fp64_conversion(f2f) and isa.instruction_class(f2f) is InstrClass.CONVERSION
    assert isa.is_variable_latency(f2f)
    ld = _first(mix, "LDG.E.128")
    assert isa.access_bytes(ld) == 16 and isa.access_direction(ld) is Access.LOAD
    assert isa.instruction_class(ld) is InstrClass.GLOBAL and isa.is_variable_latency(ld)
    sts = _first(mix, "STS")
    assert isa.instruction_class(sts) is InstrClass.SHARED and isa.access_direction(sts) is Access.STORE
    assert isa.access_bytes(sts) == 4
    bar = _first(mix, "BAR.SYNC")
    assert isa.is_sync(bar) and isa.instruction_class(bar) is InstrClass.BARRIER
    assert not isa.is_sync(ffma)


def test_int_division_sequence_found(mix):
    seqs = isa.find_int_division_sequences(mix)
    assert len(seqs) == 1
    start, end = seqs[0]
    ops = [x.opcode for x in mix.instructions[start:end + 1]]
    assert ops[0] == "I2F" and "MUFU" in ops and "F2I" in ops and end - start >= 8
    b_line = next(i for i, s in enumerate(SRC.splitlines(), 1) if "q[i] / n" in s)
    assert mix.instructions[start].line == b_line


def _ins(opcode: str, operands: str = "", pred: str | None = None):
    d = {"opcode": opcode, "operands": operands} | ({"predicate": f"@{pred}"} if pred else {})
    return parse_nvdisasm(text_listing([d], "f")).functions[0].instructions[0]


@pytest.mark.parametrize("opcode,operands,flops", [
    ("HFMA2", "R0,R1,R2,R3", 4), ("HADD2", "R0,R1,R2", 2), ("FADD", "R0,R1,R2", 1), ("FMUL", "R0,R1,R2", 1),
    ("DADD", "R0,R2,R4", 1), ("MUFU.RCP", "R0,R1", 0), ("HFMA2.MMA", "R9,-RZ,RZ,1.875,0", 0),
    ("HMMA.16816.F32", "R20,R4,R16,RZ", 128), ("HMMA.1688.F32", "R20,R4,R16,RZ", 64),
    ("DMMA.884", "R0,R4,R8,R0", 16), ("HGMMA.64x128x16.F32.BF16", "R24,gdesc[UR4],R24", 2 * 64 * 128 * 16 / 128),
    ("IADD3", "R0,R1,R2,RZ", 0),
])
def test_flops(opcode, operands, flops):
    assert isa.flops(_ins(opcode, operands)) == flops


@pytest.mark.parametrize("opcode,operands,nbytes,direction", [
    ("LDG.E.U8", "R0,desc[UR4][R2.64]", 1, Access.LOAD), ("LDG.E.S16", "R0,desc[UR4][R2.64]", 2, Access.LOAD),
    ("STG.E.64", "desc[UR4][R2.64],R4", 8, Access.STORE), ("LDS.128", "R4,[R0]", 16, Access.LOAD),
    ("ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU", "PT,R5,desc[UR8][R4.64],R11", 4, Access.ATOMIC),
    ("RED.E.ADD.STRONG.GPU", "desc[UR4][R2.64],R5", 4, Access.ATOMIC),
    ("LDSM.16.M88.4", "R4,[R0]", 16, Access.LOAD), ("FADD", "R0,R1,R2", 0, None),
])
def test_memory_bytes(opcode, operands, nbytes, direction):
    ins = _ins(opcode, operands)
    assert isa.access_bytes(ins) == nbytes and isa.access_direction(ins) == direction


@pytest.mark.parametrize("opcode,fp64", [
    ("F2F.F64.F32", True), ("F2F.F32.F64", True), ("I2F.F64", True), ("F2I.F64", True), ("I2F.F64.S64", True),
    ("F2I.FTZ.U32.TRUNC.NTZ", False), ("I2F.RP", False), ("F2F.F16.F32", False), ("DFMA", False),
])
def test_fp64_conversions(opcode, fp64):
    assert isa.is_fp64_conversion(_ins(opcode, "R0,R2")) is fp64


def test_table_consistency():
    for name, info in isa.OPCODES.items():
        assert name.isupper() and "." not in name
        assert (info.access is None) == (info.memory_space is None) or name.startswith("CCTL")
        if info.sync:
            assert info.klass is InstrClass.BARRIER
    assert isa.instruction_class(_ins("UIADD3", "UR4,UR5,0x1,URZ")) is InstrClass.UNIFORM
    assert isa.instruction_class(_ins("FOOBAR", "R0")) is InstrClass.OTHER
    assert isa.memory_space("LDL") == "local" and isa.memory_space("LD") == "generic"
    assert isa.memory_space("ULDC") == "constant" and isa.memory_space("ATOMS") == "shared"
