"""SASS: the program as the GPU runs it, read from one nvdisasm listing or decoded from the cubin.

`nvdisasm -gi -hex -c` prints, per instruction, its PC, its text (predicate, opcode,
operands), its 128-bit encoding (whose top bits hold the sm_70+ control codes) and, where
they change, its source line and inline call chain. Every later stage reads the
`SassFunction`s parsed from it. Each nvdisasm run costs ~0.35 s of start-up, so `read_sass`
first decodes the cubin itself (`cubin/`: the same listing, from encoding tables learned
from nvdisasm) and runs nvdisasm only for what those tables do not cover.
"""

from __future__ import annotations

import posixpath
import re
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..process import CancelToken, run_tool
from .instructions import ControlCode, Instruction, SassFunction, SassModule, SourceLocation, Subroutine
from .isa import Access, InstrClass, OpcodeInfo, conversion_types_of, memory_width_bytes, mma_shape_of, opcode_info


class DisassemblyError(RuntimeError):
    pass


def disassemble(cubin_path: Path, nvdisasm: Path, *, cancel: CancelToken | None = None,
                cxxfilt: Path | None = None, timeout: float = 120.0) -> SassModule:
    """Run `nvdisasm -gi -hex -c` on one cubin and parse its listing."""
    flags = ["-gi", "-hex", "-c"]
    res = run_tool([str(nvdisasm), *flags, str(cubin_path)], timeout=timeout, cancel=cancel)
    if res.returncode != 0:
        # No temp path in the text: the same broken nvdisasm gives the same message for every file (shown once).
        last = (res.stderr.strip().splitlines() or [f"exit status {res.returncode}"])[-1]
        raise DisassemblyError(f"{nvdisasm} {' '.join(flags)} failed: {last}. Reinstall nvdisasm "
                               f"(`pip install nvidia-cuda-nvdisasm`) or point kernelscope.analysis.nvccPath "
                               f"at a complete CUDA toolkit.")
    module = parse_nvdisasm(res.stdout)
    names = demangle([f.mangled_name for f in module.functions]
                     + [s.mangled_name for f in module.functions for s in f.subroutines],
                     cxxfilt=cxxfilt, cancel=cancel)
    return with_demangled_names(module, names)


#: (c++filt, mangled name) -> its reading, for this process: a file's kernels keep their names from
#: one save to the next, and each c++filt run is a process start after the compile (1-8 ms here)
_DEMANGLED: dict[tuple[str, str], str] = {}
_DEMANGLED_MAX = 4096
_demangled_lock = threading.Lock()


def demangle(mangled: Sequence[str], *, cxxfilt: Path | None = None,
             cancel: CancelToken | None = None) -> dict[str, str]:
    """Mangled -> readable names through one c++filt call; names it cannot read map to themselves.

    The wheels ship no cu++filt, so binutils' c++filt is used where present (CUDA names are
    Itanium-mangled). `$kernel$callee` subroutine symbols are demangled by their last part.
    A name this process had c++filt read before is not read again.
    """
    parts = {m: m.rsplit("$", 1)[-1] if m.startswith("$") else m for m in mangled}
    tool = cxxfilt or (Path(w) if (w := shutil.which("c++filt")) else None)
    key = str(tool)
    with _demangled_lock:
        readable = {p: r for p in parts.values() if (r := _DEMANGLED.get((key, p))) is not None}
    todo = sorted({p for p in parts.values() if p.startswith("_Z") and p not in readable})
    if todo and tool is not None:
        try:
            res = run_tool([str(tool), *todo], timeout=30, cancel=cancel)
            out = res.stdout.splitlines()
            if res.returncode == 0 and len(out) == len(todo):
                readable.update(zip(todo, out))
                with _demangled_lock:
                    if len(_DEMANGLED) + len(todo) > _DEMANGLED_MAX:
                        _DEMANGLED.clear()
                    _DEMANGLED.update(((key, p), r) for p, r in zip(todo, out))
        except OSError:
            pass
    return {m: readable.get(p, p) for m, p in parts.items()}


def with_demangled_names(module: SassModule, names: Mapping[str, str]) -> SassModule:
    fns = tuple(f.model_copy(update={
        "name": names.get(f.mangled_name, f.name),
        "subroutines": tuple(s.model_copy(update={"name": names.get(s.mangled_name, s.name)})
                             for s in f.subroutines)}) for f in module.functions)
    return module.model_copy(update={"functions": fns})


# -- text listing -------------------------------------------------------------------------------

_TARGET = re.compile(r"^\s*\.target\s+sm_(\d+?)(\d)[a-z]?\s*$")
_SECTION = re.compile(r"^//-+ \.text\.(\S+)\s+-+")
_OTHER = re.compile(r"^\s*\.other\s+([^,\s]+),\s*@\"([^\"]*)\"")
_TYPE_FN = re.compile(r"^\s*\.type\s+([^,\s]+),\s*@function")
_LABEL = re.compile(r"^([^\s/.][^\s]*|\.[^\s]+):\s*$")
_LINE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(.*?)\s*/\*\s*(0x[0-9a-fA-F]+)\s*\*/\s*$")
_WORD = re.compile(r"^\s*/\*\s*(0x[0-9a-fA-F]+)\s*\*/\s*$")
#: a note nvdisasm prints after an instruction, padded to a column: `(*"SpillRefill"*)` (from the
#: function's `.nv.info` instruction annotations, `cubin.listing`); not part of any operand
_ANNOTATION = re.compile(r'\s+\(\*"([^"]*)"\*\)$')


@dataclass
class _TextInstr:
    pc: int
    text: str
    words: list[int]
    inline: tuple[SourceLocation, ...]  # (innermost, call site, call site's caller, ...)
    annotation: str = ""  # nvdisasm's `(*"SpillRefill"*)` after the operands, without its markers


@dataclass
class _TextSection:
    name: str
    is_entry: bool = False
    instrs: list[_TextInstr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    function_symbols: list[str] = field(default_factory=list)


@lru_cache(maxsize=65536)
def _loc(file: str, line: int | str) -> SourceLocation:
    # Cached: a listing names few distinct lines, and each is shared by many instructions.
    return SourceLocation.model_construct(file=posixpath.normpath(file), line=int(line))


def parse_text_listing(text: str) -> tuple[tuple[int, int], dict[str, _TextSection]]:
    """`nvdisasm -gi -hex -c`: the target's (major, minor) and the sections by function name,
    in listing order, with their instructions, encodings, inline chains and labels."""
    target = (0, 0)
    sections: dict[str, _TextSection] = {}
    entries: set[str] = set()
    sec: _TextSection | None = None
    block: list[tuple[str, str, str | None, str | None]] = []
    block_open = False  # `//##` lines since the last instruction form one block
    current: tuple[SourceLocation, ...] = ()
    pending_labels: list[str] = []
    for raw in text.splitlines():
        stripped = raw.lstrip()
        if stripped.startswith("/*"):
            if stripped.startswith("/* 0x"):  # the upper word of the previous instruction
                if sec is not None and sec.instrs and (m := _WORD.match(raw)) is not None:
                    sec.instrs[-1].words.append(int(m[1], 16))
            elif sec is not None and (m := _INSTR.match(raw)) is not None:
                if block_open:
                    current = _chain(block)
                    block, block_open = [], False
                pc = int(m[1], 16)
                for lab in pending_labels:
                    sec.labels[lab] = pc
                pending_labels = []
                body = m[2].rstrip(" ;")
                note = _ANNOTATION.search(body)
                sec.instrs.append(_TextInstr(pc, body[:note.start()] if note else body, [int(m[3], 16)], current,
                                             note[1] if note else ""))
            continue
        if stripped.startswith("//## "):
            if sec is not None and (m := _LINE.match(raw)) is not None:
                if not block_open:
                    block, block_open = [], True
                block.append((m[1], m[2], m[3], m[4]))
            continue
        if sec is None and (m := _TARGET.match(raw)) is not None:
            target = (int(m[1]), int(m[2]))
            continue
        if (m := _SECTION.match(raw)) is not None:
            sec = sections.setdefault(m[1], _TextSection(m[1]))
            current, block, block_open, pending_labels = (), [], False, []
            continue
        if (m := _OTHER.match(raw)) is not None:
            if "STO_CUDA_ENTRY" in m[2]:
                entries.add(m[1])
            continue
        if sec is None:
            continue
        if (m := _TYPE_FN.match(raw)) is not None:
            sec.function_symbols.append(m[1])
            current = ()  # a function appended to the section starts without a line
            continue
        if not raw.startswith((" ", "\t")) and (m := _LABEL.match(raw.strip())) is not None:
            pending_labels.append(m[1])
    for name in entries:
        if name in sections:
            sections[name].is_entry = True
    return target, sections


def _chain(block: list[tuple[str, str, str | None, str | None]]) -> tuple[SourceLocation, ...]:
    # nvdisasm prints the inline stack innermost first: `A inlined at B`, `B inlined at C`, `C`.
    first = block[0]
    locs = [_loc(first[0], first[1])]
    for f, ln, at_f, at_ln in block:
        if at_f is not None:
            locs.append(_loc(at_f, at_ln))
    return tuple(locs)


# -- operands, defs and uses --------------------------------------------------------------------

_BRACKET = re.compile(r"(\w*)\[([^\]]*)\]")
_IN_BRACKET = re.compile(r"\b(UR\d+|R\d+)(\.64)?\b")
_PRED = re.compile(r"^!?(U?P[0-6T])$")
_HEX = re.compile(r"^-?0x[0-9a-fA-F]+$")
_NEVER = frozenset({"RZ", "URZ", "PT", "UPT"})


def top_level_pieces(text: str) -> list[str]:
    """The text between commas outside brackets and parentheses, unstripped (the last piece too)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def split_operands(text: str) -> tuple[str, ...]:
    """Split on commas outside brackets/parentheses: `desc[UR4][R2.64+0x10]` stays whole."""
    pieces = text.split(",") if "[" not in text and "(" not in text and "{" not in text else top_level_pieces(text)
    return tuple(o for o in (p.strip() for p in pieces) if o)


def _expand(base: str, width: int) -> list[str]:
    if base in _NEVER:
        return []
    if base == "PR":  # P2R/R2P move P0..P6 as a bit mask
        return [f"P{i}" for i in range(7)]
    if base == "UPR":
        return [f"UP{i}" for i in range(7)]
    if base.startswith(("P", "UP")) or width == 1:
        return [base]
    prefix = "UR" if base.startswith("UR") else "R"
    n = int(base[len(prefix):])
    return [f"{prefix}{n + k}" for k in range(width)]


_REG_OPERAND = re.compile(r"^[-!~|]*(UR\d+|R\d+|UP\d|P\d|PR|UPR)((?:\.\w+)*)\|?$")


def _operand_regs(op: str, width: int) -> list[str]:
    """Registers named by one operand (`-R5.reuse`, `|R3|`, `!P0`, `R2.64`); brackets are `address_regs`'."""
    m = _REG_OPERAND.match(op)
    if m is None:
        return []
    if width == 1 and not m[2] and m[1] not in ("PR", "UPR"):
        return [m[1]]
    return _expand(m[1], 2 if ".64" in m[2] else width)


def address_regs(op: str) -> list[str]:
    """Registers an operand's brackets read: `R2.64` a pair, a descriptor (`desc[UR4]`) a uniform
    pair, and beside a 64-bit register (`[R2.64+UR6]`, sm_75-sm_89) a uniform register is a 64-bit
    base too, the pointer a `ULDC.64` loaded: UR6 and UR7 (as the walk reads it,
    `emulator.walk._address_terms`)."""
    if "[" not in op:
        return []
    regs: list[str] = []
    for prefix, inner in _BRACKET.findall(op):
        found = list(_IN_BRACKET.finditer(inner))
        if prefix in ("desc", "gdesc", "tmem"):
            # A memory descriptor is a 64-bit uniform pair (ULDC.64 UR4 sets it up).
            regs += [r for m in found for r in _expand(m[1], 2)]
            continue
        wide = any(m[2] for m in found)
        regs += [r for m in found for r in _expand(m[1], 2 if m[2] or (wide and m[1].startswith("UR")) else 1)]
    return regs


def _is_pred(op: str) -> bool:
    return _PRED.match(op) is not None


_TYPE_BYTES = {"F64": 8, "F32": 4, "TF32": 4, "S32": 4, "F16": 2, "BF16": 2, "E4M3": 1, "E5M2": 1,
               "S8": 1, "U8": 1, "S4": 0.5, "U4": 0.5, "B1": 0.125}


@dataclass(frozen=True)
class _Widths:
    dst: int = 1
    src: tuple[int, ...] = ()  # per source operand position (after the destinations); default 1
    src_default: int = 1

    def at(self, k: int) -> int:
        return self.src[k] if k < len(self.src) else self.src_default


@lru_cache(maxsize=4096)
def _widths(opcode: str, mods: tuple[str, ...], info: OpcodeInfo) -> _Widths:
    """Register counts of destination and sources (64-bit pairs, 128-bit quads, MMA fragments)."""
    if info.pairs:
        return _Widths(2, (), 2)
    if info.klass is InstrClass.CONVERSION and opcode in ("F2F", "F2I", "I2F", "I2I", "FRND"):
        dst_t, src_t = conversion_types_of(opcode, mods)
        return _Widths(2 if dst_t.endswith("64") else 1, (), 2 if src_t.endswith("64") else 1)
    if info.klass is InstrClass.TENSOR:
        return _mma_widths(opcode, mods)
    if info.access is not None:
        if opcode in ("LDSM", "STSM"):
            n = next((int(m) for m in mods if m.isdigit() and len(m) == 1), 1)
            return _Widths(n, (), n)
        w = max(1, memory_width_bytes(mods) // 4)
        if info.access is Access.ATOMIC and "CAS" in mods and "64" not in mods and "128" not in mods:
            w = 1
        return _Widths(w, (), w)
    if "WIDE" in mods:  # IMAD.WIDE Rd(64) = Ra * Rb + Rc(64)
        return _Widths(2, (1, 1, 2), 1)
    if "64" in mods:
        return _Widths(2, (), 2)
    if opcode == "CS2R" and "32" not in mods:
        return _Widths(2, (), 1)
    if opcode == "RET":
        return _Widths(1, (), 2)  # the return address is a 64-bit pair
    return _Widths()


def _mma_widths(opcode: str, mods: tuple[str, ...]) -> _Widths:
    # Per-thread fragment sizes of D = A·B + C: bytes of each matrix / (threads · 4 bytes).
    shape = mma_shape_of(mods)
    if shape is None:
        return _Widths()
    m, n, k = shape
    types = [t for t in mods if t in _TYPE_BYTES]
    if opcode == "DMMA":
        acc, inp = 8, 8
    elif opcode in ("IMMA", "IGMMA"):
        acc, inp = 4, _TYPE_BYTES.get(types[0], 1) if types else 1
    else:
        acc = _TYPE_BYTES.get(types[0], 2) if types else 2
        inp = _TYPE_BYTES.get(types[1], 2) if len(types) > 1 else 2
    threads = 128 if opcode.endswith("GMMA") else 32
    d = max(1, int(m * n * acc / threads / 4))
    a = max(1, int(m * k * inp / threads / 4))
    b = max(1, int(k * n * inp / threads / 4))
    return _Widths(d, (a, b, d), 1)


def defs_and_uses(opcode: str, mods: tuple[str, ...], operands: tuple[str, ...],
                  predicate: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Registers written and read. RZ/URZ/PT/UPT are constants, never dependencies."""
    info = opcode_info(opcode)
    n_dst = min(info.n_dst, len(operands))
    if opcode in ("VOTE", "VOTEU"):
        # the voted predicate is the last operand, whatever precedes it is written: `VOTE.ANY R2,
        # PT, !P2` (a ballot and its predicate), `VOTE.ALL P2, P0` (the predicate alone)
        n_dst = len(operands) - 1
    if info.pred_first and operands and _is_pred(operands[0]) and len(operands) > n_dst:
        n_dst += 1
    if info.carry_out and n_dst == 1:
        while n_dst < min(3, len(operands) - 1) and _is_pred(operands[n_dst]) and not operands[n_dst].startswith("!"):
            n_dst += 1
    w = _widths(opcode, mods, info)
    defs: list[str] = []
    uses: list[str] = []
    for k, op in enumerate(operands[:n_dst]):
        defs += _operand_regs(op, w.dst)
        uses += address_regs(op)
    for k, op in enumerate(operands[n_dst:]):
        uses += _operand_regs(op, w.at(k))
        uses += address_regs(op)
    if predicate is not None:
        p = predicate.lstrip("!")
        if p not in _NEVER:
            uses.insert(0, p)
    return tuple(dict.fromkeys(defs)), tuple(dict.fromkeys(uses))


# -- control codes ------------------------------------------------------------------------------

def _construct(cls, values: dict):
    """`model_construct` without its per-field default handling: the parser builds every field
    itself, and at ~20 µs a call `model_construct` alone would exceed the 5,000-instruction budget."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


_CONTROL_CACHE: dict[int, ControlCode] = {}


def decode_control(hi_word: int) -> ControlCode:
    """Decode bits 105..125 of a 128-bit sm_70+ instruction from its upper 64-bit word.

    Verified on ptxas 13 output: an LDG sets write barrier b and its consumer's wait mask has
    bit b. The yield bit is stored inverted (0 = the scheduler may switch warps), so `yield_`
    is True when the bit is clear.
    """
    bits = (hi_word >> 41) & 0x1FFFFF
    cached = _CONTROL_CACHE.get(bits)
    if cached is not None:
        return cached
    wb = (bits >> 5) & 7
    rb = (bits >> 8) & 7
    code = ControlCode.model_construct(stall=bits & 0xF, yield_=not (bits >> 4) & 1,
                                       write_barrier=None if wb == 7 else wb,
                                       read_barrier=None if rb == 7 else rb,
                                       wait_mask=(bits >> 11) & 0x3F, reuse=(bits >> 17) & 0xF)
    return _CONTROL_CACHE.setdefault(bits, code)


# -- from the listing to the model --------------------------------------------------------------

_LABEL_AFTER_SPACE = re.compile(r"(?<=[^,\s])\s+`\(")
_STATIC_BRANCHES = frozenset({"BRA", "JMP", "CALL"})
_INDIRECT_BRANCHES = frozenset({"BRX", "BRXU", "JMX", "JMXU"})


def parse_nvdisasm(text_listing: str) -> SassModule:
    """`nvdisasm -gi -hex -c` output as a `SassModule`; names stay mangled (see `with_demangled_names`)."""
    (major, minor), sections = parse_text_listing(text_listing)
    return module_from_sections((major, minor), sections)


def module_from_sections(target: tuple[int, int], sections: Mapping[str, _TextSection]) -> SassModule:
    """The model of a listing's sections, whoever read them (this parser or `cubin.listing`)."""
    major, minor = target
    return SassModule.model_construct(arch=f"sm_{major}{minor}",
                                      functions=tuple(_function(sec, major) for sec in sections.values()))


def _function(sec: _TextSection, major: int) -> SassFunction:
    # Lines come from `parse_text_listing`, which carries the last printed one forward but not
    # into a subroutine ptxas appended to the section (e.g. libdevice's accurate pow): its code
    # without line records belongs to no line of the caller.
    instrs = tuple(_instruction(i, t, sec.labels, major) for i, t in enumerate(sec.instrs))
    subs = tuple(Subroutine.model_construct(mangled_name=s, name=s, pc=sec.labels[s])
                 for s in sec.function_symbols if s != sec.name and s in sec.labels)
    return SassFunction.model_construct(mangled_name=sec.name, name=sec.name, is_kernel=sec.is_entry,
                                        instructions=instrs, subroutines=subs)


def _instruction(i: int, t: _TextInstr, labels: Mapping[str, int], major: int) -> Instruction:
    head, _, rest = t.text.partition(" ")
    pred = None
    if head.startswith("@"):
        pred = head[1:]
        head, _, rest = rest.lstrip().partition(" ")
        if pred in ("PT", "UPT"):
            pred = None
    opcode, *mods = head.split(".")
    mods_t = tuple(mods)
    # nvdisasm prints a return's target without a comma (`RET.REL.NODEC R2 `(kernel)`).
    operands = split_operands(_LABEL_AFTER_SPACE.sub(", `(", rest))
    if pred is None and opcode == "BRA" and len(operands) > 1 and _PRED_OPERAND.fullmatch(operands[0]):
        # sm_100+ prints a uniform branch's condition as its first operand (`BRA.U !UP0, `(.L_x_0)`),
        # where sm_90 wrote `@!UP0 BRA.U`: it is the branch's guard either way
        pred = operands[0]
    defs, uses = defs_and_uses(opcode, mods_t, operands, pred)
    control = decode_control(t.words[1]) if major >= 7 and len(t.words) >= 2 else None
    return _construct(Instruction, dict(
        index=i, pc=t.pc, opcode=opcode, modifiers=mods_t, predicate=pred, operands=operands,
        defs=defs, uses=uses, memory_space=opcode_info(opcode).memory_space,
        branch_target=_branch_target(opcode, operands, labels), location=t.inline[0] if t.inline else None,
        inline_chain=t.inline[1:], control=control, text=t.text, annotation=t.annotation or None))


_PRED_OPERAND = re.compile(r"!?U?P[0-6]")


def _branch_target(opcode: str, operands: tuple[str, ...], labels: Mapping[str, int]) -> int | None:
    if opcode not in _STATIC_BRANCHES or not operands:
        return None
    last = operands[-1].strip("`() ")
    if _HEX.match(last):
        return int(last, 16)
    return labels.get(last)  # a subroutine in this section; calls to other sections stay None
