"""Conditional compilation as nvcc resolves it, so the source model sees what the compiler sees
(issue 20 item 3).

nvcc preprocesses a `.cu` file twice: once for the host (`__CUDACC__` defined, `__CUDA_ARCH__`
not) and once per device architecture (`__CUDA_ARCH__` = 10 × the compute capability). A kernel
body is what the device pass kept; a launch site is what the host pass kept. `resolved` blanks
the branches a pass drops, byte for byte (every byte but line breaks becomes a space), so every
position in the result is the same as in the file.

A condition is decided only on what is known: the compiler's predefined macros, the `-D`/`-U`
flags of the compile, and the file's own `#define`/`#undef` lines above it. What only a compiler
defines is decided too: OpenMP's `_OPENMP` and OpenACC's `_OPENACC` are defined when the compile
turns the feature on (`-Xcompiler -fopenmp`) and undefined otherwise, other compilers' and
platforms' names (`_MSC_VER`, `_WIN32`, `__HIPCC__`) are undefined, `__linux__` is defined on Linux. A name that a header
might define is unknown, and a conditional whose branch cannot be decided keeps all its branches,
as if it were not there (the source model then sees both, as before this module). Directive lines
are found line by line, as the preprocessor itself reads them (translation phase 4 is
line-oriented); the conditions are parsed by tree-sitter-cuda.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from .c_arithmetic import binary, int_literal
from .toolchain import macro_flags
from .treesitter import parser as _parser

#: a macro's replacement text; None for a defined macro whose value cannot be folded (a function-like one)
Definition = str | None


class Macros(BaseModel):
    """What one preprocessing pass knows before the file's first line."""

    model_config = ConfigDict(frozen=True)

    defined: Mapping[str, Definition] = {}
    undefined: frozenset[str] = frozenset()  # known not to be defined (-U, __CUDA_ARCH__ on the host)


class Passes(BaseModel):
    """nvcc's two views of one file: the host pass and the device pass for the analysed arch."""

    model_config = ConfigDict(frozen=True)

    host: Macros
    device: Macros


# Never defined by nvcc for a whole-program compile; code tests them to tell NVRTC or clang apart.
_NEVER = frozenset({"__CUDACC_RTC__", "__clang__", "__CUDA__"})
#: Other compilers' and platforms' predefined macros: no header defines them, and nvcc with GCC on
#: Linux does not either, so a compile leaves them undefined (`#ifdef _WIN32`, `#if defined(__HIPCC__)`).
_OTHER_COMPILERS = frozenset({"_MSC_VER", "_WIN32", "_WIN64", "__APPLE__", "__MINGW32__", "__MINGW64__",
                              "__INTEL_COMPILER", "__INTEL_LLVM_COMPILER", "__NVCOMPILER", "__PGI", "__HIPCC__",
                              "__HIP__", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIP_PLATFORM_NVIDIA__"})
#: Macros the compiler alone defines, when a flag turns its feature on (OpenMP 4.5, OpenACC 2.7):
#: without the flag the name is undefined, whatever the file's headers are.
_FEATURES = {"_OPENMP": ("-fopenmp", "201511"), "_OPENACC": ("-fopenacc", "201711")}


def compile_passes(command: Sequence[str], arch: str, cuda_version: str | None) -> Passes:
    """The predefined macros of nvcc's host and device passes for a compile with `command`'s flags
    (the exact argv), the target `arch` (`sm_90`) and the toolkit's version (`13.5.37`)."""
    common: dict[str, Definition] = {"__CUDACC__": "1", "__NVCC__": "1", "__cplusplus": "201703L"}
    if cuda_version:
        major, _, rest = cuda_version.partition(".")
        common.update(__CUDACC_VER_MAJOR__=major, __CUDACC_VER_MINOR__=rest.partition(".")[0] or "0")
    undefined = set(_NEVER) | _OTHER_COMPILERS
    if sys.platform.startswith("linux"):  # the host compiler's own: GCC and clang define both on Linux
        common.update(__linux__="1", __unix__="1")
    # `-Xcompiler -fopenmp`, `-Xcompiler=-O3,-fopenmp`, or a bare `-fopenmp` in a compile database
    words = {w for arg in command for w in arg.split("=")[-1].split(",")}
    for name, (flag, value) in _FEATURES.items():
        if flag in words:
            common[name] = value
        else:
            undefined.add(name)
    for name, value in macro_flags(command):
        if value is None:
            common.pop(name, None)
            undefined.add(name)
        else:
            common[name] = value
            undefined.discard(name)
    digits = "".join(c for c in arch.removeprefix("sm_").removeprefix("compute_") if c.isdigit())
    device = dict(common)
    if digits:
        device["__CUDA_ARCH__"] = str(int(digits) * 10)
    return Passes(host=Macros(defined=common, undefined=frozenset(undefined | {"__CUDA_ARCH__"})),
                  device=Macros(defined=device, undefined=frozenset(undefined)))


# ------------------------------------------------------------------------------------- resolving

_CONDITIONALS = {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"}


@dataclass
class _Chain:
    """One #if … #endif being read: the state of its current branch, and its directive lines."""

    state: bool | None  # the current branch: compiled, dropped, or undecided
    taken: bool | None  # whether an earlier branch was compiled (None: perhaps)
    undecided: bool = False  # some branch could not be decided: the chain stays in the text
    directives: list[tuple[int, int]] = field(default_factory=list)


def resolved(source: bytes, passes: Passes) -> tuple[bytes, bytes]:
    """`source` as the device pass and as the host pass read it: the branches each drops, and the
    directives of every conditional it decides whole, blanked to spaces; line and byte positions
    unchanged. The directives are found once for both."""
    if b"#" not in source:
        return source, source
    directives = list(_directive_lines(source))
    return _resolved(source, directives, passes.device), _resolved(source, directives, passes.host)


def _resolved(source: bytes, directives: list[tuple[int, int, str, str]], macros: Macros) -> bytes:
    out = bytearray(source)
    known: dict[str, Definition] = dict(macros.defined)
    undefined = set(macros.undefined)
    chains: list[_Chain] = []

    previous = 0  # end of the last directive read: the lines after it have _read(chains)'s state
    for start, end, directive, rest in directives:
        here = _read(chains)
        if here is False:
            _blank(out, previous, start)
        previous = end
        if directive not in _CONDITIONALS:
            if here is False:
                _blank(out, start, end)
            elif directive in ("define", "undef"):
                _record(directive, rest, here, known, undefined)
            continue
        if directive in ("if", "ifdef", "ifndef"):
            state = False if here is False else _condition(directive, rest, known, undefined)
            chains.append(_Chain(state=state, taken=state, undecided=state is None, directives=[(start, end)]))
            continue
        if not chains:
            continue  # an #else or #endif without its #if: nvcc reports it; leave the text as it is
        chain = chains[-1]
        chain.directives.append((start, end))
        if directive == "endif":
            chains.pop()
            if not chain.undecided:  # decided whole: its directives go too, so the kept code parses as plain code
                for s, e in chain.directives:
                    _blank(out, s, e)
            continue
        if chain.taken is True or _read(chains[:-1]) is False:
            state = False
        elif directive == "else":
            state = None if chain.taken is None else True
        else:
            test = _condition(_ELIF_AS_IF[directive], rest, known, undefined)
            state = False if test is False else (None if chain.taken is None else test)
        chain.state = state
        if chain.taken is not True:  # once a branch is compiled, the rest of the chain is not
            chain.taken = True if state is True else (None if state is None or chain.taken is None else False)
        chain.undecided = chain.undecided or state is None
    if _read(chains) is False:
        _blank(out, previous, len(out))
    return bytes(out)


def _read(chains: list[_Chain]) -> bool | None:
    """Whether a line inside `chains`' current branches is compiled (None: perhaps)."""
    if any(c.state is False for c in chains):
        return False
    return None if any(c.state is None for c in chains) else True


_ELIF_AS_IF = {"elif": "if", "elifdef": "ifdef", "elifndef": "ifndef"}


def _blank(out: bytearray, start: int, end: int) -> None:
    for k in range(start, end):
        if out[k] not in (0x0A, 0x0D):  # line breaks stay: every line keeps its number
            out[k] = 0x20


def _record(directive: str, rest: str, here: bool | None, known: dict[str, Definition], undefined: set[str]) -> None:
    """A #define or #undef read in a compiled (here=True) or perhaps-compiled (None) branch."""
    name = _identifier_prefix(rest)
    if not name:
        return
    if here is None:  # perhaps defined, perhaps not: nothing is known of it any more
        known.pop(name, None)
        undefined.discard(name)
    elif directive == "undef":
        known.pop(name, None)
        undefined.add(name)
    else:
        after = rest.lstrip()[len(name):]
        known[name] = None if after.startswith("(") else (after.strip() or "")
        undefined.discard(name)


def _identifier_prefix(text: str) -> str:
    text = text.lstrip()
    n = 0
    while n < len(text) and (text[n] == "_" or text[n].isalnum()):
        n += 1
    return text[:n] if n and not text[0].isdigit() else ""


# ------------------------------------------------------------------------------ directive lines

def _directive_lines(source: bytes):
    """(start, end, directive, rest) for each preprocessing directive, in order: a logical line
    (backslash-continued) whose first token is `#`, outside comments. `end` is the offset of its
    last line break (or of the end of the file)."""
    comments = _comment_spans(source)
    c = 0  # index of the first comment that may still contain a line start
    n = len(source)
    start = 0
    while start < n:
        end = _logical_end(source, start)
        while c < len(comments) and comments[c][1] <= start:
            c += 1
        in_comment = c < len(comments) and comments[c][0] < start < comments[c][1]
        line = source[start:end]
        stripped = line.lstrip(b" \t")
        if not in_comment and stripped.startswith(b"#"):
            text = stripped[1:].replace(b"\\\r\n", b" ").replace(b"\\\n", b" ").decode("utf-8", "replace")
            name = _identifier_prefix(text)
            yield start, end, name, text.lstrip()[len(name):]
        start = end + 1


def _logical_end(source: bytes, start: int) -> int:
    """Offset of the line break that ends the logical line starting at `start`."""
    k = start
    while True:
        nl = source.find(b"\n", k)
        if nl < 0:
            return len(source)
        body_end = nl - 1 if nl > 0 and source[nl - 1] == 0x0D else nl
        if body_end > start and source[body_end - 1] == 0x5C:  # backslash: the line goes on
            k = nl + 1
            continue
        return nl


def _comment_spans(source: bytes) -> list[tuple[int, int]]:
    """Byte spans of the file's comments, from tree-sitter (a `#` inside a block comment is text)."""
    out: list[tuple[int, int]] = []
    stack = [_parser().parse(source).root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            if node.start_point[0] != node.end_point[0]:
                out.append((node.start_byte, node.end_byte))
            continue
        stack.extend(node.children)
    return sorted(out)


# ------------------------------------------------------------------------------------ conditions

def _condition(directive: str, rest: str, known: Mapping[str, Definition], undefined: set[str]) -> bool | None:
    """The value of an #if/#ifdef/#ifndef line: True, False, or None when it depends on an unknown."""
    if directive in ("ifdef", "ifndef"):
        d = _defined(_identifier_prefix(rest), known, undefined)
        return d if d is None or directive == "ifdef" else not d
    value = _evaluate(_expression(rest.strip()), known, undefined, 0)
    return None if value is None else value != 0


def _defined(name: str, known: Mapping[str, Definition], undefined: set[str]) -> bool | None:
    if name in known:
        return True
    return False if name in undefined else None


@lru_cache(maxsize=4096)
def _expression(text: str):
    """The condition's syntax tree (tree-sitter-cuda reads it as the preprocessor would)."""
    tree = _parser().parse(f"#if {text}\n#endif\n".encode())
    node = tree.root_node.named_children[0] if tree.root_node.named_child_count else None
    return node.child_by_field_name("condition") if node is not None and node.type == "preproc_if" else None


def _evaluate(node, known: Mapping[str, Definition], undefined: set[str], depth: int) -> int | None:
    """A preprocessor expression's integer value; None when it depends on something unknown."""
    if node is None or depth > 32:
        return None
    t = node.type
    if t == "number_literal":
        return int_literal(node.text.decode())
    if t == "true":
        return 1
    if t == "false":
        return 0
    if t == "parenthesized_expression":
        return _evaluate(node.named_children[0] if node.named_child_count else None, known, undefined, depth)
    if t == "preproc_defined":
        name = next((c.text.decode() for c in node.named_children if c.type == "identifier"), "")
        d = _defined(name, known, undefined)
        return None if d is None else int(d)
    if t == "identifier":
        name = node.text.decode()
        if name in known:
            body = known[name]
            return None if not body else _evaluate(_expression(body), known, undefined, depth + 1)
        return 0 if name in undefined else None  # an undefined name is 0; one a header may define is unknown
    if t == "unary_expression":
        value = _evaluate(node.child_by_field_name("argument"), known, undefined, depth)
        op = node.child_by_field_name("operator").type
        if value is None:
            return None
        return {"!": int(not value), "-": -value, "+": value, "~": ~value}.get(op)
    if t == "binary_expression":
        op = node.child_by_field_name("operator").type
        left = _evaluate(node.child_by_field_name("left"), known, undefined, depth)
        if op in ("&&", "||"):
            if left is not None and (left == 0) == (op == "&&"):
                return int(op == "||")  # decided by its left side, whatever the right one is
            right = _evaluate(node.child_by_field_name("right"), known, undefined, depth)
            if right is not None and (right == 0) == (op == "&&"):
                return int(op == "||")
            return None if left is None or right is None else int(op == "||" and bool(left or right)
                                                                   or op == "&&" and bool(left and right))
        right = _evaluate(node.child_by_field_name("right"), known, undefined, depth)
        return None if left is None or right is None else binary(op, left, right)
    if t == "conditional_expression":
        test = _evaluate(node.child_by_field_name("condition"), known, undefined, depth)
        if test is None:
            return None
        return _evaluate(node.child_by_field_name("consequence" if test else "alternative"), known, undefined, depth)
    return None  # a function-like macro, __has_include, a character literal: not decided here
