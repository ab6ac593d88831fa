"""Integer work: the integer operations a kernel computes data with, not its bookkeeping.

The INT32 roofline places a kernel with no floating-point work by its integer operations
(`roofline.dominant_precision`). Counting every integer instruction would give every kernel
integer work, a plain copy included: its index arithmetic (`blockIdx.x * blockDim.x +
threadIdx.x`, `IMAD.WIDE` to a byte address), bounds checks and loop counters are integer
instructions. Those are bookkeeping, not the work the INT32 roof is about (the instruction
roofline of Ding & Williams, 2019, counts them because its y axis is all instructions; ours is
operations of one kind), so here they count 0: a copy is memory-only, while a hash keeps the
operations that compute its values.

The rule, over one function's SASS:
  * an operation is what `isa.int_ops` counts for an integer instruction (a multiply-add 2,
    other arithmetic, logic, shift, compare, select 1, moves 0);
  * an integer (or uniform-datapath) instruction is work when a value it writes reaches data:
    an operand of a store, a floating-point, conversion or shuffle instruction, anything but
    a memory address (registers inside `[...]`), an instruction guard (`@P0`) or a branch,
    followed through other integer instructions. So the `IMAD`s of an index, the `ISETP` of a
    bounds check and the `IADD3` of a loop counter are bookkeeping, and a hash of the thread
    index that is stored is work;
  * it is work too when it computes from loaded data (a load, shuffle, floating-point or
    conversion result; not a constant-bank parameter) and its value reaches a guard or a
    branch: a sort's compare of two keys decides, through a predicated store, what is written;
  * values are followed by reaching definitions over the function's control-flow graph (a
    predicated write does not hide the one before it, which errs towards work), so a register
    reused for a loaded value does not tie that value to the address that was in it before;
  * in a function that calls or returns, a written register nothing in it reads (an argument
    to a non-inlined call, a return value) counts as work: where it goes is not visible here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..frontend import isa
from ..frontend.cfg import build_cfg
from ..frontend.instructions import Instruction, SassFunction
from ..frontend.sass import address_regs

#: Classes whose reads steer control flow or synchronisation, never data.
_CONTROL = (isa.InstrClass.BRANCH, isa.InstrClass.CONTROL, isa.InstrClass.BARRIER)
#: Classes followed through: their values are work only if they reach work (a value loaded,
#: converted, shuffled or computed in floating point is data wherever it goes).
_FOLLOWED = (isa.InstrClass.INT, isa.InstrClass.UNIFORM)


def _value_reads(ins: Instruction) -> tuple[str, ...]:
    """Registers `ins` reads as data: not its guard, not an address, nothing a branch reads."""
    if isa.instruction_class(ins) in _CONTROL:
        return ()
    guard = ins.predicate.lstrip("!") if ins.predicate else None
    # a register both address and data (STG [R2], R2) is taken for an address
    addr = {r for op in ins.operands for r in address_regs(op)}
    return tuple(r for r in ins.uses if r != guard and r not in addr)


@dataclass(frozen=True)
class _Reads:
    """Reaching writes per instruction, split by how the instruction reads them."""

    data: tuple[tuple[int, ...], ...]  # by its data reads (module doc)
    decision: tuple[tuple[int, ...], ...]  # by its guard, or by a branch
    read: frozenset[int]  # every write some read reaches (an address included)


def _reaching(instructions: Sequence[Instruction]) -> _Reads:
    fn = SassFunction(mangled_name="", name="", is_kernel=True, instructions=tuple(instructions))
    cfg = build_cfg(fn)
    sites: list[int] = []  # bit -> index of the writing instruction
    gen: list[int] = []
    of_reg: dict[str, int] = defaultdict(int)  # register -> bits of its writes
    for i, ins in enumerate(instructions):
        g = 0
        for r in ins.defs:
            g |= 1 << len(sites)
            of_reg[r] |= 1 << len(sites)
            sites.append(i)
        gen.append(g)

    def kill(i: int, state: int) -> int:
        for r in instructions[i].defs:
            state &= ~of_reg[r]
        return state

    def step(i: int, state: int) -> int:
        # an unconditional write hides every earlier one; a predicated one may not happen
        return (kill(i, state) if instructions[i].predicate is None else state) | gen[i]

    blocks = cfg.blocks
    out = [0] * len(blocks)
    todo = list(range(len(blocks) - 1, -1, -1))
    while todo:
        b = todo.pop()
        state = 0
        for p in blocks[b].predecessors:
            state |= out[p]
        for i in range(blocks[b].start, blocks[b].end):
            state = step(i, state)
        if state != out[b]:
            out[b] = state
            todo.extend(s for s in blocks[b].successors if s not in todo)
    data: list[tuple[int, ...]] = [()] * len(instructions)
    decision: list[tuple[int, ...]] = [()] * len(instructions)
    read: set[int] = set()
    for b in blocks:
        state = 0
        for p in b.predecessors:
            state |= out[p]
        # Within a block, an instruction under guard g sees the writes made under g as hiding
        # earlier ones (`@!P0 LDS R7` then `@!P0 STS [R8], R7`), until P0 is written again.
        guarded: dict[str, int] = {}
        for i in range(b.start, b.end):
            ins = instructions[i]
            g = ins.predicate
            seen = guarded.get(g, state) if g else state
            values = set(_value_reads(ins))
            decides = set(ins.uses) if isa.instruction_class(ins) in _CONTROL else {ins.predicate.lstrip("!")} \
                if ins.predicate else set()
            d_data, d_decision = [], []
            for r in ins.uses:
                bits = seen & of_reg.get(r, 0)
                while bits:  # one step per reaching write, not per bit
                    low = bits & -bits
                    d = sites[low.bit_length() - 1]
                    read.add(d)
                    if r in values:
                        d_data.append(d)
                    if r in decides:
                        d_decision.append(d)
                    bits ^= low
            data[i], decision[i] = tuple(d_data), tuple(d_decision)
            if g:
                guarded[g] = kill(i, seen) | gen[i]
            guarded = {h: st if h == g else step(i, st) for h, st in guarded.items() if h.lstrip("!") not in ins.defs}
            state = step(i, state)
    return _Reads(data=tuple(data), decision=tuple(decision), read=frozenset(read))


def _back(start: Sequence[int], through: set[int], edges: Sequence[Sequence[int]], work: set[int]) -> None:
    """Add to `work` every instruction of `through` that `start` reaches back along `edges`."""
    todo = list(start)
    while todo:
        i = todo.pop()
        if i in through and i not in work:
            work.add(i)
            todo.extend(edges[i])


def overhead(instructions: Sequence[Instruction]) -> frozenset[int]:
    """Indices (positions in `instructions`) of the integer instructions that are bookkeeping (module doc)."""
    followed = {i for i, ins in enumerate(instructions) if isa.instruction_class(ins) in _FOLLOWED}
    if not followed:
        return frozenset()
    reads = _reaching(instructions)
    work: set[int] = set()
    if any(ins.opcode in ("CALL", "RET") for ins in instructions):  # values leave through registers
        work = {i for i in followed if i not in reads.read and any(r.startswith("R") for r in instructions[i].defs)}
    # 1. values that reach data
    _back([d for j, ds in enumerate(reads.data) if j not in followed for d in ds] +
          [d for j in work for d in reads.data[j]], followed, reads.data, work)
    # 2. decisions on loaded data: integer instructions computing from a load, shuffle, FP or
    # conversion result (constant-bank parameters are not data) that reach a guard or a branch
    sources = {i for i, ins in enumerate(instructions) if i not in followed and ins.defs
               and isa.instruction_class(ins) is not isa.InstrClass.CONSTANT}
    users: dict[int, list[int]] = defaultdict(list)
    for j in followed:
        for d in reads.data[j]:
            users[d].append(j)
    tainted: set[int] = set()
    todo = [j for d in sources for j in users.get(d, ())]
    while todo:
        j = todo.pop()
        if j not in tainted:
            tainted.add(j)
            todo.extend(users.get(j, ()))
    _back([d for ds in reads.decision for d in ds], tainted, reads.data, work)
    return frozenset(i for i in followed if i not in work)


#: id(instructions) -> (instructions, ops): the emulator decodes one function once per what-if
#: run, and a function's instructions are one tuple for the program's life (identity, not
#: equality: hashing thousands of instructions would cost what it saves).
_CACHE: dict[int, tuple[Sequence[Instruction], tuple[float, ...]]] = {}
_CACHE_SIZE = 64


def integer_ops(instructions: Sequence[Instruction]) -> tuple[float, ...]:
    """Integer operations per thread per execution of each instruction: `isa.int_ops`, 0 for overhead."""
    hit = _CACHE.get(id(instructions))
    if hit is not None and hit[0] is instructions:
        return hit[1]
    skip = overhead(instructions)
    ops = tuple(0.0 if i in skip else isa.int_ops(ins) for i, ins in enumerate(instructions))
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(instructions)] = (instructions, ops)
    return ops
