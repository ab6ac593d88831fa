"""The one place that says what a SASS opcode is: its class, pipe, FLOPs, bytes and operand roles.

Covers Volta (sm_70) to Blackwell (sm_100/120). Everything is a row in `OPCODES`; the
functions below only look rows up and read width/shape modifiers. The SASS parser
(`sass.py`) reads the operand-role columns (`n_dst`, `carry_out`, `pred_first`) from here
too, so an opcode is described once.

Sources: the opcode lists in NVIDIA's "CUDA Binary Utilities" (Instruction Set Reference,
per generation) and what ptxas 13 emits for sm_90, checked by the tests; pipe names follow
Nsight Compute's `sm__inst_executed_pipe_*` metrics, coarsened to what the emulator models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from .instructions import Instruction, SassFunction


class InstrClass(str, Enum):
    FP32 = "fp32"
    FP64 = "fp64"
    FP16 = "fp16"
    INT = "int"
    SFU = "sfu"
    CONVERSION = "conversion"
    TENSOR = "tensor"
    GLOBAL = "global"
    LOCAL = "local"
    SHARED = "shared"
    CONSTANT = "constant"
    ATOMIC = "atomic"
    BARRIER = "barrier"
    BRANCH = "branch"
    CONTROL = "control"  # scheduling/convergence bookkeeping: NOP, BSSY, YIELD, ...
    UNIFORM = "uniform"  # uniform datapath (one value per warp), e.g. UIADD3, S2UR
    OTHER = "other"  # an opcode this table does not know


class Pipe(str, Enum):
    FP32 = "fp32"
    FP64 = "fp64"
    FP16 = "fp16"
    INT = "int"
    SFU = "sfu"
    CONVERSION = "conversion"
    TENSOR = "tensor"
    LSU = "lsu"
    SHARED = "shared"
    CONSTANT = "constant"
    BRANCH = "branch"
    BARRIER = "barrier"
    ATOMIC = "atomic"


class Access(str, Enum):
    LOAD = "load"
    STORE = "store"
    ATOMIC = "atomic"  # read-modify-write (ATOM*, RED)


@dataclass(frozen=True, slots=True)
class OpcodeInfo:
    klass: InstrClass
    pipe: Pipe
    n_dst: int = 1  # leading operands that are written
    memory_space: str | None = None  # "global", "local", "shared", "constant", "generic"
    access: Access | None = None
    flops: int = 0  # per thread per execution (tensor ops: derived from the shape instead)
    variable_latency: bool = False  # completion signalled through a scoreboard barrier
    sync: bool = False
    pairs: bool = False  # every register operand is a 64-bit pair (FP64 datapath)
    carry_out: bool = False  # predicate carry-outs may follow the first destination: IADD3 R4, P0, ...
    pred_first: bool = False  # an optional predicate destination may precede the register one


def _rows(names: str, **kw) -> dict[str, OpcodeInfo]:
    return {n: OpcodeInfo(**kw) for n in names.split()}


C, P, A = InstrClass, Pipe, Access

# FLOPs follow Nsight Compute's flop_count metrics (the offload thesis §4.3.1: fadd + fmul + 2·ffma):
# a paired-half op counts both lanes. MUFU counts 0: ncu excludes it from flop counts, and an
# SFU op is an approximation step, not an IEEE operation the roofline's FLOP ceiling is about.
OPCODES: dict[str, OpcodeInfo] = {
    # FP32
    **_rows("FADD FADD32I FMUL FMUL32I", klass=C.FP32, pipe=P.FP32, flops=1),
    **_rows("FFMA FFMA32I", klass=C.FP32, pipe=P.FP32, flops=2),
    **_rows("FADD2 FMUL2", klass=C.FP32, pipe=P.FP32, flops=2),  # Blackwell paired FP32
    **_rows("FFMA2", klass=C.FP32, pipe=P.FP32, flops=4),
    **_rows("FMNMX FMNMX3 FSEL FSET FSWZADD FCHK", klass=C.FP32, pipe=P.FP32),
    **_rows("FSETP", klass=C.FP32, pipe=P.FP32, n_dst=2),
    # FP64: ptxas keeps doubles in even/odd register pairs.
    **_rows("DADD DMUL", klass=C.FP64, pipe=P.FP64, flops=1, pairs=True),
    **_rows("DFMA", klass=C.FP64, pipe=P.FP64, flops=2, pairs=True),
    **_rows("DMNMX DSET", klass=C.FP64, pipe=P.FP64, pairs=True),
    **_rows("DSETP", klass=C.FP64, pipe=P.FP64, n_dst=2, pairs=True),
    # FP16x2
    **_rows("HADD2 HMUL2", klass=C.FP16, pipe=P.FP16, flops=2),
    **_rows("HFMA2", klass=C.FP16, pipe=P.FP16, flops=4),
    **_rows("HMNMX2 HSET2", klass=C.FP16, pipe=P.FP16),
    **_rows("HSETP2", klass=C.FP16, pipe=P.FP16, n_dst=2),
    # Integer / logic
    **_rows("IADD3 IADD LEA IMAD", klass=C.INT, pipe=P.INT, carry_out=True),
    **_rows("IADD32I IMAD32I IMADSP IMUL IMUL32I IMNMX VIMNMX IABS ISCADD SHF SHL SHR SEL PRMT "
            "MOV MOV32I BREV BMSK SGXT IDP IDP4A VABSDIFF VABSDIFF4 VIADD VIADDMNMX VHMNMX ISET "
            "P2R R2P LOP LOP32I CS2R LEPC BMOV B2R",
            klass=C.INT, pipe=P.INT),
    **_rows("LOP3", klass=C.INT, pipe=P.INT, pred_first=True),
    **_rows("ISETP PSETP PLOP3", klass=C.INT, pipe=P.INT, n_dst=2),
    **_rows("FLO POPC", klass=C.INT, pipe=P.INT, variable_latency=True),
    **_rows("VOTE", klass=C.INT, pipe=P.INT, n_dst=2),
    **_rows("MATCH REDUX", klass=C.INT, pipe=P.INT, variable_latency=True),
    **_rows("S2R", klass=C.INT, pipe=P.INT, variable_latency=True),
    # Special function unit
    **_rows("MUFU", klass=C.SFU, pipe=P.SFU, variable_latency=True),
    # Conversions. I2FP/F2FP/F2IP/I2IP run on the ALU at fixed latency (Ampere+).
    **_rows("F2F F2I I2F I2I FRND", klass=C.CONVERSION, pipe=P.CONVERSION, variable_latency=True),
    **_rows("I2FP F2FP F2IP I2IP", klass=C.CONVERSION, pipe=P.CONVERSION),
    # Tensor cores; FLOPs come from the shape modifier (see `flops`).
    **_rows("HMMA IMMA BMMA DMMA OMMA QMMA", klass=C.TENSOR, pipe=P.TENSOR),
    **_rows("HGMMA IGMMA QGMMA BGMMA UTCHMMA UTCIMMA UTCQMMA UTCOMMA UTCMMA",
            klass=C.TENSOR, pipe=P.TENSOR, variable_latency=True),
    # Global memory (texture/surface fetches are counted here: they reach global memory through L1/TEX)
    **_rows("LDG", klass=C.GLOBAL, pipe=P.LSU, memory_space="global", access=A.LOAD,
            variable_latency=True, pred_first=True),
    **_rows("TEX TLD TLD4 TMML TXD TXQ SULD", klass=C.GLOBAL, pipe=P.LSU, memory_space="global",
            access=A.LOAD, variable_latency=True),
    **_rows("STG SUST", klass=C.GLOBAL, pipe=P.LSU, n_dst=0, memory_space="global", access=A.STORE,
            variable_latency=True),
    # Async copies global -> shared: counted as global traffic, they write no registers.
    **_rows("LDGSTS UBLKCP UTMALDG UTMAPF UBLKPF", klass=C.GLOBAL, pipe=P.LSU, n_dst=0,
            memory_space="global", access=A.LOAD, variable_latency=True),
    **_rows("UTMASTG UBLKRED UTMAREDG", klass=C.GLOBAL, pipe=P.LSU, n_dst=0, memory_space="global",
            access=A.STORE, variable_latency=True),
    **_rows("CCTL CCTLL", klass=C.GLOBAL, pipe=P.LSU, n_dst=0, memory_space="global"),
    # Generic addressing: the address decides at run time; most generic accesses hit global.
    **_rows("LD", klass=C.GLOBAL, pipe=P.LSU, memory_space="generic", access=A.LOAD,
            variable_latency=True, pred_first=True),
    **_rows("ST", klass=C.GLOBAL, pipe=P.LSU, n_dst=0, memory_space="generic", access=A.STORE,
            variable_latency=True),
    # Local memory (spills, stack arrays)
    **_rows("LDL", klass=C.LOCAL, pipe=P.LSU, memory_space="local", access=A.LOAD, variable_latency=True),
    **_rows("STL", klass=C.LOCAL, pipe=P.LSU, n_dst=0, memory_space="local", access=A.STORE,
            variable_latency=True),
    # Shared memory
    **_rows("LDS LDSM", klass=C.SHARED, pipe=P.SHARED, memory_space="shared", access=A.LOAD,
            variable_latency=True),
    **_rows("STS STSM", klass=C.SHARED, pipe=P.SHARED, n_dst=0, memory_space="shared", access=A.STORE,
            variable_latency=True),
    # Shuffles go through the shared-memory crossbar on Volta+ (ncu counts them on the LSU/MIO pipe).
    **_rows("SHFL", klass=C.SHARED, pipe=P.SHARED, variable_latency=True, pred_first=True),
    # Constant memory
    # LDCU: sm_100/sm_120's load of a constant into a uniform register, where sm_90 writes ULDC
    **_rows("LDC ULDC LDCU", klass=C.CONSTANT, pipe=P.CONSTANT, memory_space="constant", access=A.LOAD,
            variable_latency=True),
    # Atomics and reductions
    **_rows("ATOMG", klass=C.ATOMIC, pipe=P.ATOMIC, memory_space="global", access=A.ATOMIC,
            variable_latency=True, pred_first=True),
    **_rows("ATOM", klass=C.ATOMIC, pipe=P.ATOMIC, memory_space="generic", access=A.ATOMIC,
            variable_latency=True, pred_first=True),
    **_rows("ATOMS", klass=C.ATOMIC, pipe=P.ATOMIC, memory_space="shared", access=A.ATOMIC,
            variable_latency=True, pred_first=True),
    **_rows("RED REDG", klass=C.ATOMIC, pipe=P.ATOMIC, n_dst=0, memory_space="global", access=A.ATOMIC,
            variable_latency=True),
    **_rows("REDAS ATOMAS", klass=C.ATOMIC, pipe=P.ATOMIC, n_dst=0, memory_space="shared",
            access=A.ATOMIC, variable_latency=True),
    **_rows("SUATOM SURED", klass=C.ATOMIC, pipe=P.ATOMIC, memory_space="global", access=A.ATOMIC,
            variable_latency=True),
    # Barriers and memory ordering
    **_rows("BAR MEMBAR DEPBAR WARPSYNC BSYNC ERRBAR FENCE WARPGROUP ARRIVES ACQBULK UCGABAR LDGDEPBAR",
            klass=C.BARRIER, pipe=P.BARRIER, n_dst=0, sync=True),
    # Hopper mbarrier operations (try-wait returns a predicate)
    **_rows("SYNCS", klass=C.BARRIER, pipe=P.BARRIER, sync=True, variable_latency=True),
    # Control flow
    **_rows("BRA BRX BRXU JMP JMX JMXU CALL RET EXIT KILL BREAK BPT RTT", klass=C.BRANCH, pipe=P.BRANCH,
            n_dst=0),
    **_rows("BSSY NOP YIELD NANOSLEEP PMTRIG SETCTAID SETLMEMBASE", klass=C.CONTROL, pipe=P.BRANCH,
            n_dst=0),
    **_rows("ELECT", klass=C.CONTROL, pipe=P.INT, n_dst=2),
    # Uniform datapath
    **_rows("UIADD3 ULEA UIMAD", klass=C.UNIFORM, pipe=P.INT, carry_out=True),
    **_rows("UMOV USEL USHF UPRMT UFLO UPOPC UBREV USGXT UBMSK UP2UR UR2UP ULEPC UCLEA UIMNMX UF2FP "
            "UFMUL UFADD UFFMA USETMAXREG", klass=C.UNIFORM, pipe=P.INT),
    **_rows("ULOP3 ULOP", klass=C.UNIFORM, pipe=P.INT, pred_first=True),
    **_rows("UISETP UPSETP UPLOP3 UFSETP", klass=C.UNIFORM, pipe=P.INT, n_dst=2),
    **_rows("VOTEU", klass=C.UNIFORM, pipe=P.INT, n_dst=2),
    **_rows("S2UR R2UR", klass=C.UNIFORM, pipe=P.INT, variable_latency=True),
}

UNKNOWN = OpcodeInfo(klass=C.OTHER, pipe=P.INT)


def opcode_info(opcode: str) -> OpcodeInfo:
    """Row for a base mnemonic ("LDG", not "LDG.E.128")."""
    return OPCODES.get(opcode, UNKNOWN)


def instruction_class(instr: Instruction) -> InstrClass:
    return opcode_info(instr.opcode).klass


def pipe(instr: Instruction) -> Pipe:
    return opcode_info(instr.opcode).pipe


def is_sync(instr: Instruction) -> bool:
    return opcode_info(instr.opcode).sync


def sets_stack_pointer(instr: Instruction) -> bool:
    """The `LDC R1, c[0x0][0x28]` ptxas puts at every kernel's entry: the calling convention keeps
    the stack pointer in R1 and loads it from the constant bank, whatever the source says. Its
    stalls are part of the kernel's time, but no change to the source removes the load."""
    return instr.opcode == "LDC" and instr.defs == ("R1",)


def call_is_jump(instr: Instruction) -> bool:
    """A `CALL.REL.NOINC` to a local `.L_x_` label, not to a named subroutine, never returns.

    ptxas ends register-blocked loops (sm_80, CUDA 12) with `@P0 CALL.REL.NOINC <after the
    next BRA>; BRA <loop head>`: the call is the loop's exit jump. A call that returns targets
    a subroutine nvdisasm names (`$__internal_..._slowpath`, a `-G` build's `$_Z...` callee,
    or another function), which ends with `RET`.
    """
    if instr.opcode != "CALL" or "REL" not in instr.modifiers:
        return False
    return any(op.strip("`()").startswith(".L") for op in instr.operands)


def calls_subroutine(instr: Instruction) -> bool:
    """A `CALL` that runs a callee and returns to the next instruction: every CALL but the loop
    exits `call_is_jump` names."""
    return instr.opcode == "CALL" and not call_is_jump(instr)


#: the math library's rare-case routines, as ptxas names them: `__cuda_sm3x_div_rn_noftz_f32_slowpath`
#: (IEEE float division), `__cuda_sm20_div_rn_f64_full`, `__cuda_sm20_dsqrt_rn_f64_mediumpath_v1`,
#: `__internal_trig_reduction_slowpathd` (sin/cos of |x| > ~1e5), ... The fast path before each
#: call handles every normal operand; only denormal, huge, zero or special operands take them.
#: `__internal_accurate_pow` is pow()'s main path, not one of them.
_MATH_SLOW_PATH = re.compile(r"__(?:cuda|internal)_\w*(?:slowpath|mediumpath)(?:d|_v\d+)?|__cuda_\w*_full")


#: the math library's float sinf/cosf/tanf/sincosf reduce |x| below this by a three-term Cody-Waite
#: step inline; at or above it they run the Payne-Hanek reduction inline too (a loop over 2/π's bits,
#: nvcc 13.0 through a local array), behind `FSETP.GE.AND Pn, PT, |x|, 105615, PT` and a branch around it.
#: Like the slow-path calls, it handles the rare operands (|x| of 10^5 radians and more).
TRIG_REDUCTION_THRESHOLD_F32 = 105615.0

#: FSETP comparisons that hold for large |x| (`GE`, `GT` and their unordered forms)
_AT_LEAST = frozenset({"GE", "GT", "GEU", "GTU"})


def trig_reduction_guard(instr: Instruction) -> bool | None:
    """For an FSETP of |x| against TRIG_REDUCTION_THRESHOLD_F32 (and no other predicate), whether
    it sets its predicate for large |x| (True) or for small |x| (False); None for any other
    instruction. (A -G build computes |x| into a register and branches through a predicate copy
    and a jump chain: its reduction is run, as any undecided branch's side.)"""
    if instr.opcode != "FSETP" or not instr.modifiers or len(instr.operands) != 5 or instr.operands[4] != "PT":
        return None
    a = instr.operands[2]
    if not (a.startswith("|") and a.endswith("|")):
        return None
    try:
        if float(instr.operands[3]) != TRIG_REDUCTION_THRESHOLD_F32:
            return None
    except ValueError:
        return None
    return instr.modifiers[0] in _AT_LEAST


def math_slow_path(instr: Instruction) -> str | None:
    """The math-library slow-path routine a `CALL` targets, if it targets one (its name without
    nvdisasm's `$kernel$` / `$__internal_N_$` prefixes)."""
    if instr.opcode != "CALL":
        return None
    for op in instr.operands:
        name = op.strip("`() ").rsplit("$", 1)[-1]
        if _MATH_SLOW_PATH.fullmatch(name):
            return name
    return None


def is_variable_latency(instr: Instruction) -> bool:
    """Whether the result arrives through a scoreboard barrier rather than after a fixed stall.

    The control code is the ground truth where present (ptxas sets a write barrier exactly for
    variable-latency producers, and which those are moves between generations: F2I is fixed on
    sm_90). Memory operations count as variable even without a barrier: a store with no
    register to release sets none.
    """
    info = opcode_info(instr.opcode)
    if info.memory_space is not None or info.sync:
        return True
    if instr.control is not None and (instr.control.write_barrier is not None
                                      or instr.control.read_barrier is not None):
        return True
    if instr.control is not None and info.klass is not C.OTHER:
        return False
    return info.variable_latency


# ---- widths -------------------------------------------------------------------------------

_WIDTH_BYTES = {"U8": 1, "S8": 1, "8": 1, "U16": 2, "S16": 2, "16": 2, "32": 4, "64": 8, "U64": 8,
                "S64": 8, "F64": 8, "128": 16}
_LDSM_COUNT = re.compile(r"^(\d)$")


def access_bytes(instr: Instruction) -> int:
    """Bytes one thread moves per execution of a memory instruction (0 if not one).

    Width comes from the modifier (.U8/.S8 = 1, .U16/.S16 = 2, none = 4, .64 = 8, .128 = 16).
    LDSM/STSM move .M88.N 8x8 matrices; each thread holds N 32-bit registers of them.
    """
    info = opcode_info(instr.opcode)
    if info.access is None:
        return 0
    if instr.opcode in ("LDSM", "STSM"):
        counts = [int(m) for m in instr.modifiers if _LDSM_COUNT.match(m)]
        return 4 * (counts[0] if counts else 1)
    return memory_width_bytes(instr.modifiers)


#: the bytes of one row of an 8x8 matrix of 16-bit elements: what one lane's address names in an
#: LDSM/STSM (PTX ISA, ldmatrix/stmatrix)
MATRIX_ROW_BYTES = 16


def address_lanes(instr: Instruction, warp_size: int = 32) -> tuple[int, int]:
    """(lanes whose addresses the access reads, bytes at each address). An LDSM/STSM .M88.N takes
    one 16 B row address from each of lanes 0..8N-1 and ignores the rest (PTX ISA: .x1 uses
    threads 0-7, .x2 threads 0-15, .x4 all); any other access, every lane at its access width."""
    if instr.opcode in ("LDSM", "STSM") and any(m.startswith("M88") or m.startswith("MT88") for m in instr.modifiers):
        counts = [int(m) for m in instr.modifiers if _LDSM_COUNT.match(m)]
        return min(warp_size, 8 * (counts[0] if counts else 1)), MATRIX_ROW_BYTES
    return warp_size, max(1, access_bytes(instr) or 4)


def memory_width_bytes(modifiers: tuple[str, ...]) -> int:
    for m in modifiers:
        if m in _WIDTH_BYTES:
            return _WIDTH_BYTES[m]
    return 4


def access_direction(instr: Instruction) -> Access | None:
    return opcode_info(instr.opcode).access


def memory_space(opcode: str) -> str | None:
    return opcode_info(opcode).memory_space


# ---- FLOPs --------------------------------------------------------------------------------

_SHAPE_X = re.compile(r"^(\d+)x(\d+)x(\d+)$")
# mma.sync shapes as ptxas spells them (m, n, k); per warp.
_MMA_SHAPES = {"16816": (16, 8, 16), "1688": (16, 8, 8), "16832": (16, 8, 32), "8816": (8, 8, 16),
               "8832": (8, 8, 32), "884": (8, 8, 4), "16864": (16, 8, 64), "168128": (16, 8, 128),
               "168256": (16, 8, 256), "1684": (16, 8, 4), "16816A": (16, 8, 16)}
_WARPGROUP = 128  # HGMMA is issued by a warpgroup of four warps


def mma_shape(instr: Instruction) -> tuple[int, int, int] | None:
    return mma_shape_of(instr.modifiers)


def mma_shape_of(modifiers: tuple[str, ...]) -> tuple[int, int, int] | None:
    for m in modifiers:
        if m in _MMA_SHAPES:
            return _MMA_SHAPES[m]
        if (x := _SHAPE_X.match(m)) is not None:
            return int(x[1]), int(x[2]), int(x[3])
    return None


def flops(instr: Instruction) -> float:
    """Floating-point (or integer-MMA) operations per thread per execution.

    Tensor ops: 2·m·n·k per warp (per warpgroup for *GMMA) divided over its threads, e.g.
    HMMA.16816 = 2·16·8·16/32 = 128. Volta's HMMA.884 is issued as several STEP instructions
    per mma; we divide 2·8·8·4·4 (four quad-pairs) evenly over the steps present in the modifiers.
    A shape we cannot read gives 0. Moves ptxas writes as `HFMA2.MMA Rd, -RZ, RZ, imm` give 0.
    """
    info = opcode_info(instr.opcode)
    if info.klass is C.TENSOR:
        shape = mma_shape(instr)
        if shape is None:
            return 0.0
        m, n, k = shape
        if instr.opcode.endswith("GMMA"):
            return 2.0 * m * n * k / _WARPGROUP
        if shape == (8, 8, 4) and instr.opcode == "HMMA":
            steps = 4 if any(s.startswith("STEP") for s in instr.modifiers) else 1
            return 2.0 * m * n * k * 4 / 32 / steps
        return 2.0 * m * n * k / 32
    if info.flops and len(instr.operands) >= 3 and _zero(instr.operands[1]) and _zero(instr.operands[2]):
        return 0.0
    return float(info.flops)


def _zero(operand: str) -> bool:
    return operand.lstrip("-") in ("RZ", "URZ")


# Integer operations, the INT32 roofline's count. The instruction roofline (Ding & Williams,
# "An Instruction Roofline Model for GPUs", 2019) counts integer instructions; the whitepapers'
# INT32 peak (`ArchCatalog.peak_flops`) counts a multiply-add as two. So: a multiply-add counts 2,
# every other per-thread integer instruction that computes a value from its operands counts 1
# (add, logic, shift, compare, min/max, select, permute, bit counts), and what only moves data
# counts 0 (MOV, CS2R, S2R, P2R/R2P, and IMAD used as a move), as do predicate-only logic
# (PLOP3, PSETP), warp-wide ops (VOTE, MATCH, REDUX) and the uniform datapath (one value per
# warp, not per thread). Unlike `flops`, compares and min/max count: ncu's flop counts leave
# FSETP/FMNMX out, but an integer kernel's work is largely compares, selects and bit logic.
_INT_OPS: dict[str, int] = {
    **dict.fromkeys(("IMAD", "IMAD32I", "IMADSP", "IDP", "IDP4A", "VIADDMNMX"), 2),
    **dict.fromkeys(("IADD3 IADD IADD32I LEA ISCADD IMUL IMUL32I IMNMX VIMNMX VHMNMX IABS SHF SHL SHR SEL "
                     "PRMT BREV BMSK SGXT VABSDIFF VABSDIFF4 VIADD ISET ISETP LOP LOP3 LOP32I FLO POPC").split(), 1),
}


def int_ops(instr: Instruction) -> float:
    """Integer operations per thread per execution (the rule above `_INT_OPS`); 0 for non-integer ops.

    ptxas also uses IMAD as a move (`IMAD.MOV`, or RZ·RZ + c: 0), a shift (`IMAD.SHL`: 1) and an
    add (`IMAD.IADD`: 1); only a real multiply-add counts 2.
    """
    n = _INT_OPS.get(instr.opcode, 0)
    if n == 2 and instr.opcode.startswith("IMAD"):
        ops = instr.operands
        if "MOV" in instr.modifiers or (len(ops) >= 3 and _zero(ops[1]) and _zero(ops[2])):
            return 0.0
        if "SHL" in instr.modifiers or "IADD" in instr.modifiers:
            return 1.0
    return float(n)


# ---- double precision and idioms ----------------------------------------------------------

_TYPE = re.compile(r"^[FSU](8|16|32|64)$")


def conversion_types(instr: Instruction) -> tuple[str, str]:
    """(destination type, source type) of F2F/F2I/I2F/I2I, filling defaults nvdisasm omits.

    nvdisasm prints the destination type first and drops defaults: I2F.F64 reads S32,
    F2I.U32 reads F32, F2F always names both.
    """
    return conversion_types_of(instr.opcode, instr.modifiers)


def conversion_types_of(opcode: str, modifiers: tuple[str, ...]) -> tuple[str, str]:
    types = [m for m in modifiers if _TYPE.match(m)]
    default_dst, default_src = {"F2F": ("F32", "F32"), "F2I": ("S32", "F32"), "I2F": ("F32", "S32"),
                                "I2I": ("S32", "S32"), "FRND": ("F32", "F32"), "I2FP": ("F32", "S32"),
                                "F2IP": ("S32", "F32")}.get(opcode, ("S32", "S32"))
    if len(types) >= 2:
        return types[0], types[1]
    if len(types) == 1:
        t = types[0]
        if opcode in ("F2I", "F2IP"):
            return (default_dst, t) if t.startswith("F") else (t, default_src)
        if opcode in ("I2F", "I2FP"):
            return (t, default_src) if t.startswith("F") else (default_dst, t)
        return t, t
    return default_dst, default_src


def is_fp64_conversion(instr: Instruction) -> bool:
    """A conversion to or from double: on consumer GPUs these run on the slow FP64 units."""
    if opcode_info(instr.opcode).klass is not C.CONVERSION:
        return False
    return "F64" in conversion_types(instr)


# nvcc's unsigned division by a run-time value (also the core of signed / and %): a float
# reciprocal estimate refined with integer multiply-high steps.
_DIV_WINDOW = 24  # instructions; the idiom spans ~15-20 with the fix-up steps


def find_int_division_sequences(fn: SassFunction) -> list[tuple[int, int]]:
    """(first, last) instruction indices of each integer division/modulo idiom.

    Anchored on `I2F(.U32).RP` -> `MUFU.RCP` -> `F2I(.FTZ).U32.TRUNC` -> `IMAD.HI`, followed by the
    compare-and-correct steps; the end is the last instruction of the window that uses a register
    the idiom defined (so the fix-up ISETP/IADD3/SEL are included).
    """
    ins = fn.instructions
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(ins):
        if not (ins[i].opcode == "I2F" and "RP" in ins[i].modifiers):
            i += 1
            continue
        window = ins[i:i + _DIV_WINDOW]
        rcp = _first(window, lambda x: x.opcode == "MUFU" and "RCP" in x.modifiers)
        f2i = _first(window, lambda x: x.opcode == "F2I" and "TRUNC" in x.modifiers)
        hi = _first(window, lambda x: x.opcode in ("IMAD", "IMUL") and "HI" in x.modifiers)
        if rcp is None or f2i is None or hi is None or not (rcp < f2i < hi):
            i += 1
            continue
        defined = {r for x in window[:hi + 1] for r in x.defs}
        end = hi
        for j in range(hi + 1, len(window)):
            if set(window[j].uses) & defined and window[j].opcode not in ("I2F", "BRA", "STG", "STS"):
                end = j
                defined.update(window[j].defs)
        found.append((i, i + end))
        i += end + 1
    return found


def _first(window, pred) -> int | None:
    return next((k for k, x in enumerate(window) if pred(x)), None)
