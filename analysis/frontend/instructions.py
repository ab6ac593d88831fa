"""The SASS data model every later stage reads: instructions (with control codes, registers
read and written, branch targets and source lines), functions and the module of one cubin.
`sass.py` fills it from an nvdisasm listing, `cubin/` from the cubin's own bytes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SourceLocation(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    line: int


class ControlCode(BaseModel):
    """The scheduling bits ptxas writes above each sm_70+ instruction.

    Layout (bits 105..125 of the 128-bit word, per the public Volta/Turing
    dissection work by Jia et al. and the maxas/turingas assemblers):
    stall[4] yield[1] write_barrier[3] read_barrier[3] wait_mask[6] reuse[4].
    A barrier index of 7 means "none".
    """

    model_config = ConfigDict(frozen=True)

    stall: int
    yield_: bool
    write_barrier: int | None
    read_barrier: int | None
    wait_mask: int
    reuse: int

    @property
    def waits_on(self) -> tuple[int, ...]:
        return tuple(b for b in range(6) if self.wait_mask & (1 << b))


class Instruction(BaseModel):
    """One SASS instruction with everything later stages need, parsed once."""

    model_config = ConfigDict(frozen=True)

    index: int  # position within its function, 0-based
    pc: int  # byte offset within its function
    opcode: str  # base mnemonic, e.g. "LDG"
    modifiers: tuple[str, ...]  # e.g. ("E", "128", "CONSTANT")
    predicate: str | None  # e.g. "P0", "!P0"; None when unpredicated (or @PT)
    operands: tuple[str, ...]  # raw operand texts, destination first
    defs: tuple[str, ...]  # registers written: R*, UR*, P*, UP* (64/128-bit widths expanded)
    uses: tuple[str, ...]  # registers read, including the predicate guard and address registers
    memory_space: str | None  # "global", "local", "shared", "constant", "generic" or None
    branch_target: int | None  # pc of the target for BRA/BRX/CALL/JMP when static
    location: SourceLocation | None  # innermost source line (the callee's, when inlined)
    inline_chain: tuple[SourceLocation, ...]  # call sites, innermost first; empty if not inlined
    control: ControlCode | None  # None before sm_70 or when encodings were unavailable
    text: str  # the instruction as nvdisasm printed it (without its annotation)
    #: nvdisasm's note on the instruction, from the cubin: "SpillRefill" for a register spill or
    #: refill ptxas inserted (an LDL/STL of a value, not of a local array)
    annotation: str | None = None

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode, *self.modifiers))

    @property
    def line(self) -> int | None:
        return self.location.line if self.location else None


class Subroutine(BaseModel):
    """A non-inlined device function ptxas placed inside a caller's section (`$kernel$callee`).

    Its instructions stay in the section's `SassFunction` (PCs are section offsets, which is
    what PC sampling reports); this records where it starts.
    """

    model_config = ConfigDict(frozen=True)

    mangled_name: str
    name: str
    pc: int


class SassFunction(BaseModel):
    model_config = ConfigDict(frozen=True)

    mangled_name: str
    name: str  # demangled
    is_kernel: bool
    instructions: tuple[Instruction, ...]
    subroutines: tuple[Subroutine, ...] = ()  # non-inlined callees placed in this section

    def at_pc(self, pc: int) -> Instruction | None:
        lo, hi = 0, len(self.instructions)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.instructions[mid].pc < pc:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.instructions) and self.instructions[lo].pc == pc:
            return self.instructions[lo]
        return None


class SassModule(BaseModel):
    """All functions of one cubin."""

    model_config = ConfigDict(frozen=True)

    arch: str  # e.g. "sm_90"
    functions: tuple[SassFunction, ...]

    def function(self, mangled_name: str) -> SassFunction | None:
        return next((f for f in self.functions if f.mangled_name == mangled_name), None)
