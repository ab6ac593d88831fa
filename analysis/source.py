"""Source structure of a `.cu` file, read from the tree-sitter-cuda syntax tree.

Optimizers need to know what the programmer wrote (a kernel's parameters, a loop's
`#pragma unroll`, a `0.25` without `f`, the `<<<grid, block>>>` a kernel is launched
with) and where, so that advice lands on the right line and a code action can edit it.
Everything here comes from the syntax tree, never from regexes over C++: comments,
strings and macros would fool those. Integer constants are folded by a small evaluator
over expression nodes (`_fold`), so `(n + threads - 1) / threads` becomes a number when
`n` and `threads` are file constants or locals assigned once.

Positions: lines are 1-based, columns 0-based in characters of the line (Python `str`
indices); byte offsets are into the UTF-8 encoding of the text. The language server
converts columns to UTF-16 itself.

Anything inside an ERROR node is skipped, so broken or binary input yields a partial
or empty model instead of an exception.
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from collections.abc import Callable
from typing import Literal, Protocol

import tree_sitter_cuda
from pydantic import BaseModel, ConfigDict
from tree_sitter import Language, Node, Parser

from .conditional import Passes, resolved
from .profile import LaunchConfig

_log = logging.getLogger(__name__)

_LANGUAGE = Language(tree_sitter_cuda.language())
# A Parser keeps per-parse state, and the server may parse from several threads.
_PARSERS = threading.local()


def _parser() -> Parser:
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = Parser(_LANGUAGE)
    return parser


# ---------------------------------------------------------------------------- models


class Position(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int  # 1-based
    col: int  # 0-based, in characters of the line


class Span(BaseModel):
    model_config = ConfigDict(frozen=True)

    start: Position
    end: Position  # exclusive
    start_byte: int
    end_byte: int

    @property
    def first_line(self) -> int:
        return self.start.line

    @property
    def last_line(self) -> int:
        return self.end.line

    def contains_line(self, line: int) -> bool:
        return self.start.line <= line <= self.end.line


class Parameter(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # "" for an unnamed parameter
    type_text: str  # the declaration without the name, e.g. "const float* __restrict__"
    span: Span
    is_pointer: bool  # a pointer, or an array parameter (which decays to one)
    is_restrict: bool  # the pointer itself is __restrict__
    is_const_pointee: bool  # points to const data
    restrict_insert: Position | None  # just after the `*`: insert " __restrict__" here
    const_insert: Position  # start of the declaration: insert "const " here


class LaunchBounds(BaseModel):
    model_config = ConfigDict(frozen=True)

    args: tuple[str, ...]  # texts: maxThreadsPerBlock[, minBlocksPerMultiprocessor[, maxBlocksPerCluster]]
    values: tuple[int | None, ...]  # folded where constant
    span: Span

    @property
    def max_threads(self) -> int | None:
        return self.values[0] if self.values else None

    @property
    def min_blocks(self) -> int | None:
        return self.values[1] if len(self.values) > 1 else None


FunctionKind = Literal["kernel", "device", "host"]


class Function(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kind: FunctionKind  # "device" includes __host__ __device__
    qualifiers: tuple[str, ...]  # as written, e.g. ("static", "__device__", "__forceinline__")
    inlining: Literal["noinline", "forceinline"] | None
    span: Span  # the definition, from its first qualifier to the closing brace
    name_span: Span
    params: tuple[Parameter, ...]
    launch_bounds: LaunchBounds | None
    launch_bounds_insert: Position  # before the name: insert "__launch_bounds__(N) " here
    body: Span | None
    template_params: str | None  # "<int BS, typename T>" for a template
    #: pointers the body stores through: `p[i] = …`, `*p = …`, `p->f = …`, `++p[i]`, `atomicAdd(&p[i], …)`,
    #: `atomicAdd(p + i, …)`, or `&p[i]` handed to any callee (which may write it)
    stores: tuple[str, ...] = ()

    @property
    def is_kernel(self) -> bool:
        return self.kind == "kernel"

    @property
    def is_device_code(self) -> bool:
        return self.kind != "host"

    def param(self, name: str) -> Parameter | None:
        return next((p for p in self.params if p.name == name), None)


class UnrollPragma(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int
    text: str  # the pragma's argument, e.g. "unroll 4"
    factor_text: str  # "" for a bare `#pragma unroll`
    factor: int | None  # None when bare or not a constant

    @property
    def is_bare(self) -> bool:
        return self.factor_text == ""

    @property
    def is_rolled(self) -> bool:
        # `#pragma unroll 1` is how CUDA code asks for a loop not to be unrolled.
        return self.factor == 1


LoopKind = Literal["for", "range_for", "while", "do"]


class Loop(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int  # position in SourceModel.loops
    kind: LoopKind
    span: Span
    header_line: int  # line of the `for`/`while`/`do` keyword
    condition_line: int | None  # where the exit test is written (the `while` of a do loop)
    body: Span | None
    function: str | None
    depth: int  # 1 for an outermost loop of its function
    parent: int | None  # index of the enclosing loop
    unroll: UnrollPragma | None  # a `#pragma unroll` written just before the loop
    induction_var: str | None  # for `for` loops of the simple counted form
    bound_text: str | None  # the other side of the exit comparison, e.g. "N" or "n"
    trip_count: int | None  # constant trip count, when the header folds
    # How far the induction variable moves, as source text: "n" for `i = 0; i < n`, "(n - 1) - (0)
    # + 1" for `i = n - 1; i >= 0; --i`; the bound alone when the start is a thread's own index
    extent_text: str | None = None
    step_text: str | None = None  # the additive step: "1" for ++/--, "3" for `i += 3`, "stride"


class FloatLiteral(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    span: Span
    suffix: Literal["", "f", "l"]  # lower-cased; "" is a double
    value: float | None
    function: str | None

    @property
    def has_f_suffix(self) -> bool:
        return self.suffix == "f"

    @property
    def is_double(self) -> bool:
        return self.suffix == ""

    @property
    def line(self) -> int:
        return self.span.start.line

    @property
    def col_start(self) -> int:
        return self.span.start.col

    @property
    def col_end(self) -> int:
        return self.span.end.col


class Call(BaseModel):
    model_config = ConfigDict(frozen=True)

    callee: str  # as written without template arguments: "pow", "std::sqrt", "helper"
    span: Span
    callee_span: Span
    arg_count: int
    args: tuple[str, ...]
    function: str  # the device function or kernel containing the call


class SharedDecl(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type_text: str  # element type, e.g. "float", "unsigned char"
    dims: tuple[str, ...]  # one text per [], outermost first; "" for `[]`
    dim_values: tuple[int | None, ...]
    is_extern: bool  # `extern __shared__`: sized at launch (dynamic shared memory)
    bytes: int | None  # static size, when the element type and every dim are known
    span: Span
    function: str | None

    @property
    def line(self) -> int:
        return self.span.start.line

    @property
    def dims_text(self) -> str:
        return "".join(f"[{d}]" for d in self.dims)


class LaunchConfigArg(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    dims: tuple[int, int, int] | None  # folded x, y, z (an integer is (v, 1, 1))
    span: Span

    @property
    def value(self) -> int | None:
        """The folded total: x*y*z for a dim3, the integer itself otherwise."""
        if self.dims is None:
            return None
        return self.dims[0] * self.dims[1] * self.dims[2]


class LaunchSite(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str  # without template arguments
    kernel_text: str  # as written, e.g. "reduce<256>"
    span: Span
    name_span: Span
    config: tuple[LaunchConfigArg, ...]  # grid, block[, smem[, stream]]
    args: tuple[str, ...]
    # Each argument folded like the config is (literals, file constants, #defines, locals of the
    # launching function assigned once), so the emulator knows e.g. a stride the kernel reads.
    arg_values: tuple[int | None, ...] = ()
    function: str | None

    @property
    def line(self) -> int:
        return self.span.start.line

    @property
    def col(self) -> int:
        return self.span.start.col

    def _config(self, i: int) -> LaunchConfigArg | None:
        return self.config[i] if len(self.config) > i else None

    @property
    def grid(self) -> LaunchConfigArg | None:
        return self._config(0)

    @property
    def block(self) -> LaunchConfigArg | None:
        return self._config(1)

    @property
    def shared_mem(self) -> LaunchConfigArg | None:
        return self._config(2)

    @property
    def stream(self) -> LaunchConfigArg | None:
        return self._config(3)

    def launch_config(self) -> LaunchConfig | None:
        """The launch as the profile models it, when grid, block and smem all fold."""
        grid, block, smem = self.grid, self.block, self.shared_mem
        if grid is None or block is None or grid.dims is None or block.dims is None:
            return None
        dynamic = 0 if smem is None else smem.value
        if dynamic is None:
            return None
        return LaunchConfig(grid=grid.dims, block=block.dims, dynamic_smem=dynamic)


class Pragma(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int
    text: str  # after `#pragma`, e.g. "unroll 4"
    span: Span
    function: str | None


class AnnotationValue(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    text: str
    value: int | None  # folded over the file's constants


class Annotation(BaseModel):
    """`// kernelscope: grid=4096 block=256 n=1<<24`: facts the user states for the analysis."""

    model_config = ConfigDict(frozen=True)

    line: int
    span: Span
    entries: tuple[AnnotationValue, ...]
    function: str | None  # the function the comment is in, else the next one defined

    def get(self, key: str) -> AnnotationValue | None:
        return next((e for e in self.entries if e.key == key), None)

    def value(self, key: str) -> int | None:
        entry = self.get(key)
        return None if entry is None else entry.value


class Include(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int
    path: str  # without quotes or angle brackets
    is_system: bool  # `<...>`
    span: Span


class Constant(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    value: int


class Branch(BaseModel):
    """An `if` in a function: what its condition reads, for divergence (`optimizers/static.py`)."""

    model_config = ConfigDict(frozen=True)

    span: Span  # the whole statement
    condition: Span  # the parenthesized condition, parentheses included
    condition_text: str  # inside the parentheses, whitespace squashed
    names: tuple[str, ...]  # identifiers and members it reads: "tid", "threadIdx.x"
    #: each `%` and `&` in it: (operator, right operand), e.g. ("%", "2 * s"), ("&", "31")
    masks: tuple[tuple[str, str], ...]
    body_lines: tuple[int, int]  # first and last line of the taken branch
    function: str | None

    @property
    def line(self) -> int:
        return self.span.start.line


class Division(BaseModel):
    """A `/` or `%` (or `/=`, `%=`) in a function, and whether its divisor folds to a power of two
    (which the compiler turns into a shift or a mask)."""

    model_config = ConfigDict(frozen=True)

    line: int
    operator: str  # "/", "%", "/=", "%="
    divisor: str  # the right operand's text, whitespace squashed
    power_of_two: bool
    function: str | None


class SourceModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    functions: tuple[Function, ...] = ()  # every definition in the file, host ones too
    loops: tuple[Loop, ...] = ()
    literals: tuple[FloatLiteral, ...] = ()  # floating literals anywhere in the file
    calls: tuple[Call, ...] = ()  # calls in device code, kernel launches excluded
    shared_decls: tuple[SharedDecl, ...] = ()
    branches: tuple[Branch, ...] = ()  # `if` statements in functions
    divisions: tuple[Division, ...] = ()  # in functions
    #: lines of statements that only compute a thread index from the built-ins (`blockIdx.x *
    #: blockDim.x + threadIdx.x`): no call, no division
    index_lines: tuple[int, ...] = ()
    launch_sites: tuple[LaunchSite, ...] = ()
    pragmas: tuple[Pragma, ...] = ()
    annotations: tuple[Annotation, ...] = ()
    includes: tuple[Include, ...] = ()
    constants: tuple[Constant, ...] = ()  # file-scope integer constants that fold
    # The other files of the translation unit (analysis/inclusion.py): the local headers this file
    # includes, and the file that includes it when it is analysed in that file's context. Their
    # spans are lines of their own files, so only name lookups (`definition`, `launches_of`,
    # `unit_annotations`) read them; every line-based lookup is this file's alone.
    context: tuple[IncludedSource, ...] = ()

    @property
    def kernels(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.kind == "kernel")

    @property
    def device_functions(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.kind == "device")

    def function_at(self, line: int) -> Function | None:
        """The innermost function whose definition spans `line`."""
        inside = [f for f in self.functions if f.span.contains_line(line)]
        return min(inside, key=lambda f: f.span.end_byte - f.span.start_byte, default=None)

    def loop_at(self, line: int) -> Loop | None:
        """The innermost loop whose statement spans `line`."""
        inside = [lp for lp in self.loops if lp.span.contains_line(line)]
        return max(inside, key=lambda lp: (lp.depth, lp.span.start_byte), default=None)

    def kernel(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.kind == "kernel" and f.name == name), None)

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)

    def loops_in(self, function: str) -> tuple[Loop, ...]:
        return tuple(lp for lp in self.loops if lp.function == function)

    def constant(self, name: str) -> int | None:
        return next((c.value for c in self.constants if c.name == name), None)

    def definition(self, name: str) -> Function | None:
        """Kernel `name` as defined in this file, else in another file of the translation unit."""
        return self.kernel(name) or next((k for c in self.context if (k := c.source.kernel(name))), None)

    def launches_of(self, kernel: str) -> tuple[tuple[str | None, LaunchSite], ...]:
        """Launches of `kernel` (a base name) in this file (path None), then in the other files of
        the translation unit, each with the path of the file it is in."""
        own = tuple((None, s) for s in self.launch_sites if s.kernel == kernel)
        return own + tuple((c.path, s) for c in self.context for s in c.source.launch_sites if s.kernel == kernel)

    def context_model(self, path: str) -> SourceModel | None:
        """The model of another file of the translation unit, by its path (None when not held)."""
        want = os.path.normpath(path)
        return next((c.source for c in self.context if os.path.normpath(c.path) == want), None)

    @property
    def unit_annotations(self) -> tuple[Annotation, ...]:
        return self.annotations + tuple(a for c in self.context for a in c.source.annotations)


class IncludedSource(BaseModel):
    """Another file of a translation unit and its source model (its own context left empty)."""

    model_config = ConfigDict(frozen=True)

    path: str
    source: SourceModel


SourceModel.model_rebuild()


# ---------------------------------------------------------------------------- positions


class _Locator:
    """Tree-sitter points are (row, byte column); the models want character columns."""

    def __init__(self, source: bytes, ascii_only: bool) -> None:
        self._source = source
        self._ascii = ascii_only
        self._line_starts = [0]
        if not ascii_only:
            at = source.find(b"\n")
            while at != -1:
                self._line_starts.append(at + 1)
                at = source.find(b"\n", at + 1)

    def position(self, point: tuple[int, int]) -> Position:
        row, byte_col = point
        if self._ascii or row >= len(self._line_starts):
            return Position(line=row + 1, col=byte_col)
        start = self._line_starts[row]
        prefix = self._source[start : start + byte_col]
        try:
            chars = len(prefix.decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            chars = len(prefix.decode("utf-8", "replace"))
        return Position(line=row + 1, col=chars)

    def span(self, node: Node) -> Span:
        return Span(
            start=self.position(node.start_point),
            end=self.position(node.end_point),
            start_byte=node.start_byte,
            end_byte=node.end_byte,
        )


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _squash(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------- constant folding

Value = int | tuple[int, int, int]  # an integer, or a dim3's (x, y, z)


class _Env(Protocol):
    def get(self, name: str) -> Value | None: ...

    # a function-like #define's parameters and body, as the preprocessor would expand it
    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None: ...


class _FileConstants:
    """File-scope constants, folded on first use: a #define may refer to one defined later."""

    def __init__(self, raw: dict[str, Callable[[_Env], Value | None]],
                 macros: dict[str, tuple[tuple[str, ...], str]]) -> None:
        self._raw = raw
        self._macros = macros
        self._done: dict[str, Value | None] = {}
        self._busy: set[str] = set()

    def get(self, name: str) -> Value | None:
        if name in self._done:
            return self._done[name]
        thunk = self._raw.get(name)
        if thunk is None or name in self._busy:  # unknown, or a cycle like `#define A A`
            return None
        self._busy.add(name)
        value = thunk(self)
        self._busy.discard(name)
        self._done[name] = value
        return value

    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None:
        return self._macros.get(name)

    def folded(self) -> tuple[Constant, ...]:
        out = []
        for name in self._raw:
            value = self.get(name)
            if isinstance(value, int):
                out.append(Constant(name=name, value=value))
        return tuple(out)


class _Scope:
    """A name lookup inside a function at one position: its parameters and its locals as C++
    scoping sees them there, over the file's constants."""

    def __init__(self, locals_: _FunctionLocals | None, parent: _Env, values: dict[str, Value],
                 hidden: set[str], at: int | None = None) -> None:
        self._locals = locals_
        self._parent = parent
        self._values = values  # names bound directly (a macro's parameters)
        self._hidden = hidden
        self._at = at

    def get(self, name: str) -> Value | None:
        if name in self._values:
            return self._values[name]
        if self._locals is not None and self._at is not None:
            local = self._locals.visible(name, self._at)
            if local is not None:
                return self._locals.value(local)
        if name in self._hidden:
            return None
        return self._parent.get(name)

    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None:
        return self._parent.macro(name)


class _Local:
    """One declaration of a local variable, and the block it is visible in."""

    __slots__ = ("name", "value", "start", "scope_start", "scope_end")

    def __init__(self, name: str, value: Node | None, start: int, scope: Node) -> None:
        self.name = name
        self.value = value  # the initialiser that folds, when the declaration is a constant one
        self.start = start
        self.scope_start = scope.start_byte
        self.scope_end = scope.end_byte


class _FunctionLocals:
    """A function's locals that fold: an integer or dim3 declared with a constant initialiser and
    never written anywhere in the function. Each use sees the innermost declaration before it
    (`{ dim3 grid(1); k<<<grid, ...>>>(); } { dim3 grid(2); ... }` are two variables)."""

    def __init__(self, parent: _Env, params: set[str], declared: list[_Local], written: set[str]) -> None:
        self._parent = parent
        self._params = params
        self._by_name: dict[str, list[_Local]] = {}
        for d in declared:
            self._by_name.setdefault(d.name, []).append(d)
        self._written = written
        self._done: dict[int, Value | None] = {}
        self._busy: set[int] = set()

    def visible(self, name: str, at: int) -> _Local | None:
        seen = [d for d in self._by_name.get(name, ()) if d.start < at and d.scope_start <= at < d.scope_end]
        return max(seen, key=lambda d: d.scope_start, default=None)

    def value(self, local: _Local) -> Value | None:
        key = id(local)
        if key in self._done:
            return self._done[key]
        if local.value is None or local.name in self._written or key in self._busy:
            return None
        self._busy.add(key)
        value = _fold_local(local.value, self.at(local.start))
        self._busy.discard(key)
        self._done[key] = value
        return value

    def at(self, position: int) -> _Scope:
        return _Scope(self, self._parent, {}, self._params, position)


# Results past 64 bits cannot be launch sizes or trip counts; refusing them keeps `1 << 1000000`
# from building huge integers out of hostile input.
_LIMIT = 1 << 64
_MAX_DEPTH = 64

# sizeof on the LP64 ABI nvcc uses on Linux; vector types from CUDA's vector_types.h.
_SIZEOF = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "char1": 1, "uchar1": 1, "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
    "half": 2, "__half": 2, "__nv_bfloat16": 2, "char2": 2, "uchar2": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4, "uint32_t": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "char4": 4, "uchar4": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "size_t": 8,
    "int64_t": 8, "uint64_t": 8, "double": 8, "int2": 8, "uint2": 8, "float2": 8,
    "int3": 12, "uint3": 12, "float3": 12, "dim3": 12,
    "int4": 16, "uint4": 16, "float4": 16, "double2": 16, "longlong2": 16,
}

_INTEGRAL_TYPES = {
    "int", "unsigned", "signed", "long", "short", "char", "size_t", "int8_t", "uint8_t",
    "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "auto", "bool",
    "ptrdiff_t", "unsigned int", "long long", "unsigned long", "unsigned long long",
    "long int", "unsigned long int", "long long int", "unsigned long long int", "short int",
    "unsigned short", "unsigned char", "signed char",
}


def _int_literal(text: str) -> int | None:
    t = text.replace("'", "").lower()
    t = t.rstrip("ulz")
    try:
        if t.startswith("0x"):
            return int(t[2:], 16)
        if t.startswith("0b"):
            return int(t[2:], 2)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return int(t[1:], 8)
        if t.isdigit():
            return int(t)
    except ValueError:
        return None
    return None


def _c_div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _binary(op: str, a: int, b: int) -> int | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return _c_div(a, b)
    if op == "%":
        q = _c_div(a, b)
        return None if q is None else a - q * b
    if op in ("<<", ">>"):
        if not 0 <= b < 64:
            return None
        return a << b if op == "<<" else a >> b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    comparisons = {
        "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b,
        "&&": bool(a) and bool(b), "||": bool(a) or bool(b),
    }
    result = comparisons.get(op)
    return None if result is None else int(result)


def _type_name(node: Node) -> str:
    """The text of a type, stripped of parentheses, qualifiers and extra spaces."""
    text = _squash(_text(node)).strip("() ")
    for qualifier in ("const ", "volatile "):
        text = text.replace(qualifier, "")
    return text.strip()


def _is_integral(type_text: str) -> bool:
    return type_text in _INTEGRAL_TYPES


def _fold(node: Node | None, env: _Env, depth: int = 0) -> int | None:
    """An integer constant expression's value, or None. Never evaluates anything but arithmetic."""
    value = _fold_value(node, env, depth)
    return value if isinstance(value, int) else None


def _fold_value(node: Node | None, env: _Env, depth: int = 0) -> Value | None:
    if node is None or depth > _MAX_DEPTH or node.has_error:
        return None
    t = node.type
    d = depth + 1
    if t == "number_literal":
        return _int_literal(_text(node))
    if t == "true":
        return 1
    if t == "false":
        return 0
    if t == "identifier":
        return env.get(_text(node))
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _fold_value(inner[0], env, d) if len(inner) == 1 else None
    if t == "field_expression":
        # `block.x` of a dim3 the same function folded.
        base = env.get(_text(node.child_by_field_name("argument")))
        field = _text(node.child_by_field_name("field"))
        if isinstance(base, tuple) and field in ("x", "y", "z"):
            return base["xyz".index(field)]
        return None
    if t == "binary_expression":
        op = _text(node.child_by_field_name("operator"))
        left = _fold(node.child_by_field_name("left"), env, d)
        if left is None:
            return None
        right = _fold(node.child_by_field_name("right"), env, d)
        if right is None:
            return None
        result = _binary(op, left, right)
        return result if result is not None and -_LIMIT < result < _LIMIT else None
    if t == "unary_expression":
        op = _text(node.child_by_field_name("operator"))
        arg = _fold(node.child_by_field_name("argument"), env, d)
        if arg is None:
            return None
        return {"-": -arg, "+": arg, "~": ~arg, "!": int(not arg)}.get(op)
    if t == "conditional_expression":
        cond = _fold(node.child_by_field_name("condition"), env, d)
        if cond is None:
            return None
        branch = "consequence" if cond else "alternative"
        return _fold(node.child_by_field_name(branch), env, d)
    if t == "cast_expression":
        if not _is_integral(_type_name(node.child_by_field_name("type"))):
            return None
        return _fold(node.child_by_field_name("value"), env, d)
    if t == "sizeof_expression":
        operand = node.child_by_field_name("type") or node.child_by_field_name("value")
        return _SIZEOF.get(_type_name(operand)) if operand is not None else None
    if t == "call_expression":
        return _fold_call(node, env, d)
    if t in ("initializer_list", "argument_list"):
        return _fold_dims(node, env, d)
    return None


def _fold_call(node: Node, env: _Env, depth: int) -> Value | None:
    function = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if function is None or args is None:
        return None
    if function.type == "identifier" and _text(function) == "dim3":
        return _fold_dims(args, env, depth)
    macro = env.macro(_text(function)) if function.type == "identifier" else None
    if macro is not None:
        # `CEIL_DIV(M, 32)`: the body folded with each parameter bound to its argument's value,
        # which is what expanding it gives for the arithmetic macros that size launches
        params, body = macro
        values = [_fold_value(c, env, depth) for c in args.named_children if c.type != "comment"]
        if len(values) != len(params) or any(v is None for v in values):
            return None
        bound = _Scope(None, env, {p: v for p, v in zip(params, values) if v is not None}, set())
        return _fold_value(_parse_expression(body), bound, depth)
    if function.type == "template_function" and _text(function.child_by_field_name("name")) == "static_cast":
        template_args = function.child_by_field_name("arguments")
        target = template_args.named_children if template_args is not None else []
        values = [c for c in args.named_children if c.type != "comment"]
        if len(target) == 1 and _is_integral(_type_name(target[0])) and len(values) == 1:
            return _fold(values[0], env, depth)
    return None


def _fold_dims(node: Node | None, env: _Env, depth: int = 0) -> tuple[int, int, int] | None:
    """A launch dimension: `dim3(x, y)`, `{x, y}`, a dim3 variable, or an integer."""
    if node is None:
        return None
    if node.type in ("argument_list", "initializer_list"):
        parts = [_fold(c, env, depth + 1) for c in node.named_children if c.type != "comment"]
        if not 1 <= len(parts) <= 3 or any(p is None for p in parts):
            return None
        padded = [p for p in parts if p is not None] + [1] * (3 - len(parts))
        return (padded[0], padded[1], padded[2])
    if node.type == "compound_literal_expression":
        # `dim3{64, 2}`, or a bare `{64, 2}`, which tree-sitter reads with a MISSING type.
        type_node = node.child_by_field_name("type")
        if type_node is not None and (type_node.is_missing or _text(type_node) == "dim3"):
            return _fold_dims(node.child_by_field_name("value"), env, depth + 1)
        return None
    value = _fold_value(node, env, depth)
    if isinstance(value, tuple):
        return value
    if isinstance(value, int):
        return (value, 1, 1)
    return None


def _parse_expression(text: str) -> Node | None:
    """Parse a bare expression (a #define body, a pragma or annotation argument) on its own.

    The newlines keep a trailing `// comment` in the text from swallowing the closing `);`.
    """
    text = text.replace("\\\n", " ").strip()
    if not text or len(text) > 400:
        return None
    try:
        tree = _parser().parse(f"int __ks =\n(\n{text}\n);".encode("utf-8", "surrogatepass"))
    except (UnicodeEncodeError, ValueError):
        return None
    root = tree.root_node
    if root.has_error or root.named_child_count != 1:
        return None
    declaration = root.named_children[0]
    init = declaration.child_by_field_name("declarator")
    value = init.child_by_field_name("value") if init is not None else None
    return value


def _fold_text(text: str, env: _Env) -> int | None:
    return _fold(_parse_expression(text), env)


# ---------------------------------------------------------------------------- the walk


_LOOP_KINDS: dict[str, LoopKind] = {
    "for_statement": "for",
    "for_range_loop": "range_for",
    "while_statement": "while",
    "do_statement": "do",
}


class _RawLoop:
    __slots__ = ("node", "function", "parent", "depth")

    def __init__(self, node: Node, function: int | None, parent: int | None, depth: int) -> None:
        self.node = node
        self.function = function
        self.parent = parent
        self.depth = depth


class _Collected:
    """The nodes of interest, each with the index of its enclosing function (None at file scope)."""

    def __init__(self) -> None:
        self.functions: list[Node] = []
        self.loops: list[_RawLoop] = []
        self.numbers: list[tuple[Node, int | None]] = []
        self.calls: list[tuple[Node, int | None]] = []
        self.declarations: list[tuple[Node, int | None]] = []
        self.pragmas: list[tuple[Node, int | None]] = []
        self.includes: list[Node] = []
        self.defines: list[Node] = []
        self.macros: list[Node] = []
        self.enums: list[Node] = []
        self.comments: list[tuple[Node, int | None]] = []
        # (name, start_byte) of every write to a plain variable, per function: an assignment,
        # ++/--, or `&x` (which lets a callee write it, e.g. scanf or cudaMemcpyFromSymbol).
        self.writes: dict[int | None, list[tuple[str, int]]] = {}
        # pointers stored through, per function (`Function.stores`)
        self.stores: dict[int | None, list[str]] = {}
        self.branches: list[tuple[Node, int | None]] = []
        self.divisions: list[tuple[Node, int | None]] = []
        self.statements: list[tuple[Node, int | None]] = []  # declarations and expression statements in functions


def _written_name(node: Node | None) -> str | None:
    """The variable an lvalue writes to: `x`, `x.y`, `x[i]` all write `x`."""
    while node is not None:
        if node.type == "identifier":
            return _text(node)
        if node.type == "field_expression":
            node = node.child_by_field_name("argument")
        elif node.type == "subscript_expression":
            node = node.child_by_field_name("argument")
        elif node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        else:
            return None
    return None


def _base_pointer(node: Node | None) -> str | None:
    """The pointer an address is based on: `p`, `p + i`, `(p)`, `(T*)p`, `p[i]` (a row of a 2-D array)."""
    while node is not None:
        if node.type == "identifier":
            return _text(node)
        if node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        elif node.type == "binary_expression" and _text(node.child_by_field_name("operator")) in ("+", "-"):
            node = node.child_by_field_name("left")
        elif node.type in ("subscript_expression", "field_expression"):
            node = node.child_by_field_name("argument")
        elif node.type == "cast_expression":
            node = node.child_by_field_name("value")
        else:
            return None
    return None


def _stored_through(node: Node | None) -> str | None:
    """The pointer an lvalue stores through (`p[i]`, `*p`, `*(p + i)`, `p->f`, `p[i].f`); None for a
    plain variable or a member of one."""
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node is None:
        return None
    if node.type == "subscript_expression":
        return _base_pointer(node.child_by_field_name("argument"))
    if node.type == "pointer_expression" and _text(node.child_by_field_name("operator")) == "*":
        return _base_pointer(node.child_by_field_name("argument"))
    if node.type == "field_expression":
        if _text(node.child_by_field_name("operator")) == "->":
            return _base_pointer(node.child_by_field_name("argument"))
        return _stored_through(node.child_by_field_name("argument"))
    return None


# The most common nodes, none of which holds anything _collect looks for.
_LEAVES = frozenset({
    "identifier", "field_identifier", "type_identifier", "primitive_type", "namespace_identifier",
    "string_content", "escape_sequence", "system_lib_string", "char_literal", "type_qualifier",
    "storage_class_specifier", "sized_type_specifier",
})


def _collect(root: Node) -> _Collected:
    out = _Collected()
    # Iterative, because garbage input can nest deeper than Python's recursion limit.
    stack: list[tuple[Node, int | None, int | None, int]] = [(root, None, None, 0)]
    while stack:
        node, fn, loop, depth = stack.pop()
        t = node.type
        if t == "ERROR":
            continue
        if t == "function_definition":
            fn = len(out.functions)
            out.functions.append(node)
            loop, depth = None, 0
        elif t in _LOOP_KINDS:
            depth += 1
            out.loops.append(_RawLoop(node, fn, loop, depth))
            loop = len(out.loops) - 1
        elif t == "number_literal":
            out.numbers.append((node, fn))
            continue
        elif t == "comment":
            out.comments.append((node, fn))
            continue
        elif t == "call_expression":
            out.calls.append((node, fn))
            args = node.child_by_field_name("arguments")
            if _text(node.child_by_field_name("function")).split("::")[-1].startswith("atomic") and args is not None \
                    and args.named_child_count and (ptr := _base_pointer(args.named_children[0])):
                out.stores.setdefault(fn, []).append(ptr)  # atomicAdd(p + i, v) stores through p
        elif t == "if_statement":
            out.branches.append((node, fn))
        elif t == "expression_statement" and fn is not None:
            out.statements.append((node, fn))
        elif t == "declaration":
            out.declarations.append((node, fn))
            if fn is not None:
                out.statements.append((node, fn))
        elif t == "preproc_call":
            out.pragmas.append((node, fn))
        elif t == "preproc_include":
            out.includes.append(node)
        elif t == "preproc_def":
            out.defines.append(node)
        elif t == "preproc_function_def":
            out.macros.append(node)
        elif t == "enumerator_list":
            out.enums.append(node)
        if t in ("binary_expression", "assignment_expression") and fn is not None and \
                _text(node.child_by_field_name("operator")) in ("/", "%", "/=", "%="):
            out.divisions.append((node, fn))
        if t in ("assignment_expression", "update_expression"):
            field = "left" if t == "assignment_expression" else "argument"
            target = node.child_by_field_name(field)
            name = _written_name(target)
            if name:
                out.writes.setdefault(fn, []).append((name, node.start_byte))
            if ptr := _stored_through(target):
                out.stores.setdefault(fn, []).append(ptr)
        elif t == "pointer_expression" and _text(node.child_by_field_name("operator")) == "&":
            name = _written_name(node.child_by_field_name("argument"))
            if name:
                out.writes.setdefault(fn, []).append((name, node.start_byte))
            if ptr := _stored_through(node.child_by_field_name("argument")):
                out.stores.setdefault(fn, []).append(ptr)  # &p[i] handed on: the callee may store
        for child in reversed(node.named_children):
            if child.type not in _LEAVES:
                stack.append((child, fn, loop, depth))
    return out


# ---------------------------------------------------------------------------- branches


def _power_of_two(value: int | None) -> bool:
    return value is not None and value > 0 and value & (value - 1) == 0


def _branch(node: Node, loc: _Locator, function: str | None) -> Branch | None:
    clause = node.child_by_field_name("condition")
    taken = node.child_by_field_name("consequence")
    if clause is None or taken is None:
        return None
    value = clause.child_by_field_name("value") or (clause.named_children[-1] if clause.named_child_count else None)
    if value is None:
        return None
    names: list[str] = []
    masks: list[tuple[str, str]] = []
    stack = [value]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            names.append(_text(n))
        elif n.type == "field_expression":
            names.append(_squash(_text(n)))
        elif n.type == "binary_expression" and (op := _text(n.child_by_field_name("operator"))) in ("%", "&"):
            masks.append((op, _squash(_text(n.child_by_field_name("right")))))
        stack.extend(reversed(n.named_children))
    span = loc.span(taken)
    return Branch(span=loc.span(node), condition=loc.span(clause), condition_text=_squash(_text(value)),
                  names=tuple(dict.fromkeys(names)), masks=tuple(masks), body_lines=(span.start.line, span.end.line),
                  function=function)


_BUILTIN_INDEX = frozenset({"blockIdx", "threadIdx", "blockDim", "gridDim"})


def _index_only(node: Node) -> bool:
    """A statement that reads a built-in index and computes with nothing but arithmetic on it: no
    call (a cast is not one), no division."""
    reads_builtin = False
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression" and not _is_cast(n):
            return False
        if n.type in ("binary_expression", "assignment_expression") and \
                _text(n.child_by_field_name("operator")) in ("/", "%", "/=", "%="):
            return False
        if n.type == "field_expression" and _text(n.child_by_field_name("argument")) in _BUILTIN_INDEX:
            reads_builtin = True
        stack.extend(n.named_children)
    return reads_builtin


# ---------------------------------------------------------------------------- declarations


def _declarator_chain(node: Node | None) -> list[Node]:
    """Declarator nodes from the outside in, ending at the declared name when there is one."""
    chain: list[Node] = []
    while node is not None and len(chain) < _MAX_DEPTH:
        chain.append(node)
        if node.type in ("identifier", "field_identifier", "qualified_identifier", "template_function",
                         "destructor_name", "operator_name"):
            break
        inner = node.child_by_field_name("declarator")
        if inner is None:
            # parenthesized_declarator has no field; `__align__(16)` also lands here after an ERROR.
            inner = next((c for c in node.named_children if c.type not in ("ERROR", "comment",
                          "type_qualifier", "primitive_type", "ms_pointer_modifier")), None)
        node = inner
    return chain


def _declared_name(chain: list[Node]) -> Node | None:
    last = chain[-1] if chain else None
    return last if last is not None and last.type in ("identifier", "field_identifier") else None


def _leaves_before(node: Node, limit: int) -> list[Node]:
    leaves: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.start_byte >= limit:
            continue
        if current.child_count == 0:
            leaves.append(current)
        else:
            stack.extend(reversed(current.children))
    return leaves


def _type_text_before(declaration: Node, name: Node | None, drop: set[str]) -> str:
    """The tokens of a declaration before its name, minus `drop` and any `__align__(...)`.

    Tokens rather than the `type` field, because tree-sitter-cuda does not know `__align__(16)`
    and misparses it as the type, pushing the real one into an ERROR node.
    """
    limit = name.start_byte if name is not None else declaration.end_byte
    words = [_text(leaf) for leaf in _leaves_before(declaration, limit) if leaf.type != "comment"]
    kept: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "__align__" and i < len(words) and words[i] == "(":
            depth = 0
            while i < len(words):
                depth += (words[i] == "(") - (words[i] == ")")
                i += 1
                if depth == 0:
                    break
        elif word and word not in drop and word not in ("(", ")"):
            kept.append(word)
    return " ".join(kept)


def _parameter(node: Node, loc: _Locator) -> Parameter:
    chain = _declarator_chain(node.child_by_field_name("declarator"))
    name = _declared_name(chain)
    pointers = [d for d in chain if d.type == "pointer_declarator"]
    arrays = [d for d in chain if d.type == "array_declarator"]
    # The qualifiers on the `*` nearest the name are the ones that apply to the parameter itself.
    own = pointers[-1] if pointers else None
    own_qualifiers = {_text(c) for c in own.children if c.type == "type_qualifier"} if own else set()
    star = next((c for c in own.children if c.type == "*"), None) if own else None
    is_pointer = bool(pointers or arrays)
    pointee_const = any(c.type == "type_qualifier" and _text(c) == "const" for c in node.children)
    text = node.text or b""
    if name is not None:
        lo, hi = name.start_byte - node.start_byte, name.end_byte - node.start_byte
        text = text[:lo] + b" " + text[hi:]
    return Parameter(
        name=_text(name),
        type_text=_squash(text.decode("utf-8", "replace")).replace(" [", "["),
        span=loc.span(node),
        is_pointer=is_pointer,
        is_restrict=bool(own_qualifiers & {"__restrict__", "__restrict", "restrict"}),
        is_const_pointee=is_pointer and pointee_const,
        restrict_insert=loc.position(star.end_point) if star is not None else None,
        const_insert=loc.position(node.start_point),
    )


_FUNCTION_QUALIFIERS = {"__global__", "__device__", "__host__", "__noinline__", "__forceinline__"}


def _function(node: Node, loc: _Locator, constants: _Env) -> Function | None:
    chain = _declarator_chain(node.child_by_field_name("declarator"))
    declarator = next((d for d in chain if d.type == "function_declarator"), None)
    if declarator is None:
        return None
    name_node = declarator.child_by_field_name("declarator")
    if name_node is None:
        return None
    qualifiers: list[str] = []
    bounds: LaunchBounds | None = None
    for child in node.children:
        if child.start_byte >= declarator.start_byte:
            break
        word = _text(child)
        if child.type in _FUNCTION_QUALIFIERS or child.type in ("storage_class_specifier", "type_qualifier"):
            qualifiers.append(word)
        elif child.type == "launch_bounds":
            args = [c for c in child.named_children if c.type != "comment"]
            bounds = LaunchBounds(
                args=tuple(_text(a) for a in args),
                values=tuple(_fold(a, constants) for a in args),
                span=loc.span(child),
            )
    kind: FunctionKind = (
        "kernel" if "__global__" in qualifiers else "device" if "__device__" in qualifiers else "host"
    )
    inlining: Literal["noinline", "forceinline"] | None = (
        "noinline" if "__noinline__" in qualifiers else "forceinline" if "__forceinline__" in qualifiers else None
    )
    params_node = declarator.child_by_field_name("parameters")
    params = tuple(
        _parameter(p, loc)
        for p in (params_node.named_children if params_node is not None else [])
        if p.type in ("parameter_declaration", "optional_parameter_declaration")
    )
    parent = node.parent
    in_template = parent is not None and parent.type == "template_declaration"
    template = parent.child_by_field_name("parameters") if in_template else None
    body = node.child_by_field_name("body")
    name = name_node.child_by_field_name("name") if name_node.type == "template_function" else name_node
    return Function(
        name=_text(name),
        kind=kind,
        qualifiers=tuple(qualifiers),
        inlining=inlining,
        span=loc.span(node),
        name_span=loc.span(name_node),
        params=params,
        launch_bounds=bounds,
        launch_bounds_insert=loc.position(declarator.start_point),
        body=loc.span(body) if body is not None else None,
        template_params=_text(template) if template is not None else None,
    )


def _declarators(declaration: Node) -> list[Node]:
    return declaration.children_by_field_name("declarator")


def _has_qualifier(declaration: Node, words: set[str]) -> bool:
    return any(
        c.type in ("type_qualifier", "storage_class_specifier") and _text(c) in words
        for c in declaration.children
    )


def _file_constants(found: _Collected) -> _FileConstants:
    raw: dict[str, Callable[[_Env], Value | None]] = {}
    for define in found.defines:
        name = _text(define.child_by_field_name("name"))
        body = _text(define.child_by_field_name("value"))
        if name and body:
            raw[name] = lambda env, body=body: _fold_text(body, env)
    for declaration, fn in found.declarations:
        # Only const/constexpr: a plain global may be changed by host code before the launch.
        if fn is not None or not _has_qualifier(declaration, {"const", "constexpr"}):
            continue
        if not _is_integral(_type_name(declaration.child_by_field_name("type"))):
            continue
        for init in _declarators(declaration):
            if init.type != "init_declarator":
                continue
            name = init.child_by_field_name("declarator")
            value = init.child_by_field_name("value")
            if name is not None and name.type == "identifier" and value is not None:
                raw[_text(name)] = lambda env, value=value: _fold(value, env)
    for enum in found.enums:
        previous: str | None = None
        for enumerator in enum.named_children:
            if enumerator.type != "enumerator":
                continue
            name = _text(enumerator.child_by_field_name("name"))
            value = enumerator.child_by_field_name("value")
            if value is not None:
                raw[name] = lambda env, value=value: _fold(value, env)
            elif previous is None:
                raw[name] = lambda env: 0
            else:
                raw[name] = lambda env, previous=previous: _successor(env.get(previous))
            previous = name
    macros = {}
    for m in found.macros:
        name = _text(m.child_by_field_name("name"))
        params = m.child_by_field_name("parameters")
        body = _text(m.child_by_field_name("value"))
        if name and params is not None and body:
            macros[name] = (tuple(_text(c) for c in params.named_children if c.type == "identifier"), body)
    return _FileConstants(raw, macros)


def _successor(value: Value | None) -> int | None:
    return value + 1 if isinstance(value, int) else None


# The nodes that open a C++ block scope: a local declared in one is visible until its end.
_BLOCKS = frozenset({"compound_statement", "for_statement", "for_range_loop", "if_statement", "while_statement",
                     "switch_statement", "catch_clause", "lambda_expression", "function_definition"})


def _block_of(node: Node) -> Node:
    scope = node.parent
    while scope is not None and scope.type not in _BLOCKS:
        scope = scope.parent
    return scope if scope is not None else node


def _function_scopes(found: _Collected, functions: list[Function | None],
                     constants: _Env) -> dict[int, _FunctionLocals]:
    """Each function's locals that fold, by the block each is declared in."""
    declared: dict[int, list[_Local]] = {}
    for declaration, fn in found.declarations:
        if fn is None:
            continue
        type_name = _type_name(declaration.child_by_field_name("type"))
        foldable = _is_integral(type_name) or type_name == "dim3"
        scope = _block_of(declaration)
        for declarator in _declarators(declaration):
            initialised = declarator.type == "init_declarator"
            target = declarator.child_by_field_name("declarator") if initialised else declarator
            chain = _declarator_chain(target)
            name = _declared_name(chain)
            if name is None:
                continue
            plain = len(chain) == 1 and initialised
            value = declarator.child_by_field_name("value") if plain and foldable else None
            if declarator.type == "function_declarator" and type_name == "dim3":
                # `dim3 block(TILE, TILE);` parses as a function declaration whose parameters
                # are the types TILE and TILE (C++'s "most vexing parse").
                value = declarator.child_by_field_name("parameters")
            declared.setdefault(fn, []).append(_Local(_text(name), value, declarator.start_byte, scope))
    return {
        fn: _FunctionLocals(constants, {p.name for p in function.params} if function is not None else set(),
                            declared.get(fn, []), {name for name, _ in found.writes.get(fn, [])})
        for fn, function in enumerate(functions)
    }


def _fold_local(node: Node, env: _Env) -> Value | None:
    if node.type == "parameter_list":
        names = [p.child_by_field_name("type") for p in node.named_children if p.type != "comment"]
        parts = [env.get(_text(n)) if n is not None and n.type == "type_identifier" else None for n in names]
        if not 1 <= len(parts) <= 3 or not all(isinstance(p, int) for p in parts):
            return None
        padded = [p for p in parts if isinstance(p, int)] + [1] * (3 - len(parts))
        return (padded[0], padded[1], padded[2])
    if node.type in ("argument_list", "initializer_list"):
        return _fold_dims(node, env)
    return _fold_value(node, env)


# ---------------------------------------------------------------------------- loops


def _loop_var_init(initializer: Node | None, env: _Env) -> tuple[str, int | None] | None:
    if initializer is None:
        return None
    if initializer.type == "declaration":
        declarators = _declarators(initializer)
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            return None
        name = declarators[0].child_by_field_name("declarator")
        value = declarators[0].child_by_field_name("value")
    elif initializer.type == "assignment_expression" and _text(initializer.child_by_field_name("operator")) == "=":
        name = initializer.child_by_field_name("left")
        value = initializer.child_by_field_name("right")
    else:
        return None
    if name is None or name.type != "identifier":
        return None
    return _text(name), _fold(value, env)


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "!=": "!="}


def _loop_condition(condition: Node | None, var: str) -> tuple[str, Node] | None:
    """(operator, bound) with the induction variable on the left."""
    if condition is None or condition.type != "binary_expression":
        return None
    op = _text(condition.child_by_field_name("operator"))
    left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
    if op not in _FLIP or left is None or right is None:
        return None
    if left.type == "identifier" and _text(left) == var:
        return op, right
    if right.type == "identifier" and _text(right) == var:
        return _FLIP[op], left
    return None


def _loop_step(update: Node | None, var: str, env: _Env) -> tuple[str, int] | None:
    """("+", s) for additive steps (s may be negative), ("*", k) / ("/", k) for geometric ones."""
    if update is None:
        return None
    if update.type == "update_expression":
        if _written_name(update.child_by_field_name("argument")) != var:
            return None
        return ("+", 1) if _text(update.child_by_field_name("operator")) == "++" else ("+", -1)
    if update.type != "assignment_expression" or _written_name(update.child_by_field_name("left")) != var:
        return None
    op = _text(update.child_by_field_name("operator"))
    right = update.child_by_field_name("right")
    if op == "=" and right is not None and right.type == "binary_expression":
        # `i = i + 4`
        left_of = right.child_by_field_name("left")
        if left_of is None or left_of.type != "identifier" or _text(left_of) != var:
            return None
        op = _text(right.child_by_field_name("operator")) + "="
        right = right.child_by_field_name("right")
    amount = _fold(right, env)
    if amount is None:
        return None
    steps = {
        "+=": ("+", amount), "-=": ("+", -amount), "*=": ("*", amount), "/=": ("/", amount),
        "<<=": ("*", 1 << amount if 0 <= amount < 63 else 0), ">>=": ("/", 1 << amount if 0 <= amount < 63 else 0),
    }
    return steps.get(op)


def _compare(op: str, a: int, b: int) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b}[op]


def _trip_count(start: int, op: str, bound: int, step: tuple[str, int]) -> int | None:
    kind, amount = step
    if kind == "+":
        if amount == 0:
            return None
        if not _compare(op, start, bound):
            return 0
        if op == "!=":
            distance = bound - start
            return distance // amount if distance % amount == 0 and distance // amount > 0 else None
        inclusive = op in ("<=", ">=")
        if (op in ("<", "<=")) != (amount > 0):
            return None  # moves away from the bound: runs until overflow
        distance = abs(bound - start) + (1 if inclusive else 0)
        return -(-distance // abs(amount))
    # Geometric steps (s *= 2, s >>= 1) are short: count them.
    if amount < 2:
        return None
    count, value = 0, start
    while _compare(op, value, bound):
        count += 1
        value = value * amount if kind == "*" else _c_div(value, amount) or 0
        if count > 128:
            return None
    return count


class _ForHeader:
    """What `for (int i = A; i < B; i += C)` says about its trips."""

    __slots__ = ("var", "bound_text", "trip", "extent_text", "step_text")

    def __init__(self, var: str | None = None, bound_text: str | None = None, trip: int | None = None,
                 extent_text: str | None = None, step_text: str | None = None) -> None:
        self.var, self.bound_text, self.trip = var, bound_text, trip
        self.extent_text, self.step_text = extent_text, step_text


# A start written with these is each thread's own index: it offsets the thread, not the extent.
_THREAD_INDEX = ("threadIdx", "blockIdx", "laneid", "thread_rank")


def _loop_var_start(initializer: Node | None) -> Node | None:
    if initializer is not None and initializer.type == "declaration":
        declarators = _declarators(initializer)
        return declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
    return initializer.child_by_field_name("right") if initializer is not None else None


def _extent(op: str, start: Node | None, start_value: int | None, bound_text: str, step: int) -> str | None:
    """The distance the induction variable moves, as source text, for an additive step towards the bound."""
    inclusive = " + 1" if op in ("<=", ">=") else ""
    start_text = _squash(_text(start)) if start is not None else ""
    per_thread = any(w in start_text for w in _THREAD_INDEX)
    if step > 0 and op in ("<", "<="):
        if start_value == 0 or per_thread:
            return f"{bound_text}{inclusive}"
        return f"({bound_text}) - ({start_text}){inclusive}" if start_text else None
    if step < 0 and op in (">", ">=") and start_text and not per_thread:
        return f"({start_text}) - ({bound_text}){inclusive}"
    return None


def _step_text(update: Node | None) -> str | None:
    """The additive step as written: `++i` is "1", `i += stride` is "stride", `i = i - 2` is "2"."""
    if update is None:
        return None
    if update.type == "update_expression":
        return "1"
    if update.type != "assignment_expression":
        return None
    op = _text(update.child_by_field_name("operator"))
    right = update.child_by_field_name("right")
    if op == "=" and right is not None and right.type == "binary_expression":
        op = _text(right.child_by_field_name("operator")) + "="
        right = right.child_by_field_name("right")
    return _squash(_text(right)) if op in ("+=", "-=") and right is not None else None


def _for_header(node: Node, env: _Env, writes: list[tuple[str, int]]) -> _ForHeader:
    """The induction variable, bound, trip count and extent of `for (int i = A; i < B; i += C)`."""
    initializer = node.child_by_field_name("initializer")
    start = _loop_var_init(initializer, env)
    if start is None:
        return _ForHeader()
    var, start_value = start
    cond = _loop_condition(node.child_by_field_name("condition"), var)
    if cond is None:
        return _ForHeader()
    op, bound_node = cond
    bound_text = _text(bound_node)
    update = node.child_by_field_name("update")
    step = _loop_step(update, var, env)
    step_text = _step_text(update) if step is None or step[0] == "+" else None
    direction = step[1] if step is not None and step[0] == "+" else (1 if step_text else 0)
    if update is not None and update.type == "update_expression" and _text(update.child_by_field_name("operator")) == "--":
        direction = -1
    elif update is not None and _text(update.child_by_field_name("operator")) == "-=":
        direction = -1
    extent = _extent(op, _loop_var_start(initializer), start_value, bound_text, direction) if direction else None
    bound = _fold(bound_node, env)
    body = node.child_by_field_name("body")
    # A write to the induction variable in the body breaks the closed form.
    written = body is not None and any(n == var and body.start_byte <= at < body.end_byte for n, at in writes)
    if written:
        return _ForHeader(var, bound_text)
    if step is None or start_value is None or bound is None:
        return _ForHeader(var, bound_text, None, extent, step_text)
    return _ForHeader(var, bound_text, _trip_count(start_value, op, bound, step), extent, step_text)


def _previous_statement(node: Node) -> Node | None:
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type == "comment":
        sibling = sibling.prev_named_sibling
    return sibling


def _pragma_text(node: Node) -> str | None:
    """The argument of a `#pragma`, without a trailing comment; None for other directives."""
    if node.type != "preproc_call" or _text(node.child_by_field_name("directive")) != "#pragma":
        return None
    return _strip_comment(_text(node.child_by_field_name("argument")))


def _strip_comment(text: str) -> str:
    # A pragma argument is raw preprocessor text; its only structure that matters here is that
    # `//` or `/*` starts a comment.
    cut = min((i for i in (text.find("//"), text.find("/*")) if i != -1), default=len(text))
    return _squash(text[:cut])


def _unroll(node: Node, env: _Env) -> UnrollPragma | None:
    previous = _previous_statement(node)
    text = _pragma_text(previous) if previous is not None else None
    if not text:
        return None
    word, _, rest = text.partition(" ")
    if word != "unroll":
        return None
    factor_text = rest.strip()
    return UnrollPragma(
        line=previous.start_point[0] + 1,
        text=text,
        factor_text=factor_text,
        factor=_fold_text(factor_text, env) if factor_text else None,
    )


def _loop(index: int, raw: _RawLoop, loc: _Locator, function: Function | None, env: _Env,
          writes: list[tuple[str, int]]) -> Loop:
    node = raw.node
    kind = _LOOP_KINDS[node.type]
    header = _for_header(node, env, writes) if kind == "for" else _ForHeader()
    condition = node.child_by_field_name("condition")
    body = node.child_by_field_name("body")
    return Loop(
        index=index,
        kind=kind,
        span=loc.span(node),
        header_line=node.start_point[0] + 1,
        condition_line=condition.start_point[0] + 1 if condition is not None else None,
        body=loc.span(body) if body is not None else None,
        function=function.name if function is not None else None,
        depth=raw.depth,
        parent=raw.parent,
        unroll=_unroll(node, env),
        induction_var=header.var,
        bound_text=header.bound_text,
        trip_count=header.trip,
        extent_text=header.extent_text,
        step_text=header.step_text,
    )


# ---------------------------------------------------------------------------- expressions


def _float_literal(node: Node, loc: _Locator, function: str | None) -> FloatLiteral | None:
    text = _text(node)
    t = text.replace("'", "").lower()
    if not t:
        return None
    hexadecimal = t.startswith("0x")
    if hexadecimal and "p" not in t:
        return None  # 0xFF: an integer, and its `f` is a digit
    if not hexadecimal and "." not in t and "e" not in t:
        return None
    suffix = t[-1] if t[-1] in "fl" else ""
    digits = t[:-1] if suffix else t
    try:
        value = float.fromhex(digits) if hexadecimal else float(digits)
    except ValueError:
        value = None
        if not any(ch.isdigit() for ch in digits):
            return None
    return FloatLiteral(text=text, span=loc.span(node), suffix=suffix, value=value, function=function)


def _callee(function: Node) -> Node:
    if function.type == "template_function":
        return function.child_by_field_name("name") or function
    if function.type == "field_expression":
        return function.child_by_field_name("field") or function
    return function


def _arguments(node: Node | None) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"] if node is not None else []


_CASTS = {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"}


def _is_cast(node: Node) -> bool:
    """C++ casts parse as calls of a template function but generate no call."""
    function = node.child_by_field_name("function")
    return function is not None and function.type == "template_function" and _text(
        function.child_by_field_name("name")) in _CASTS


def _call(node: Node, loc: _Locator, function: str) -> Call | None:
    callee = node.child_by_field_name("function")
    if callee is None:
        return None
    name = _callee(callee)
    args = _arguments(node.child_by_field_name("arguments"))
    return Call(
        callee=_text(name),
        span=loc.span(node),
        callee_span=loc.span(name),
        arg_count=len(args),
        args=tuple(_text(a) for a in args),
        function=function,
    )


def _launch(node: Node, syntax: Node, loc: _Locator, function: str | None, env: _Env) -> LaunchSite | None:
    callee = node.child_by_field_name("function")
    if callee is None:
        return None
    name = _callee(callee)
    config = tuple(
        LaunchConfigArg(text=_text(c).strip(), dims=_fold_dims(c, env), span=loc.span(c))
        for c in _arguments(syntax)
    )
    args = _arguments(node.child_by_field_name("arguments"))
    return LaunchSite(
        kernel=_text(name),
        kernel_text=_text(callee),
        span=loc.span(node),
        name_span=loc.span(callee),
        config=config,
        args=tuple(_text(a) for a in args),
        arg_values=tuple(_fold(a, env) for a in args),
        function=function,
    )


def _shared_decls(declaration: Node, loc: _Locator, function: str | None, env: _Env) -> list[SharedDecl]:
    out = []
    is_extern = _has_qualifier(declaration, {"extern"})
    type_text: str | None = None
    for declarator in _declarators(declaration):
        target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
        chain = _declarator_chain(target)
        name = _declared_name(chain)
        if name is None:
            continue
        if type_text is None:
            # The tokens before the first name: `__shared__ float a[4], b[8];` types b too.
            type_text = _type_text_before(declaration, name, {"extern", "static", "__shared__", "volatile", "*"})
        # array_declarator nests the last [] outermost: `s[A][B]` is array(array(s, A), B).
        sizes = [d.child_by_field_name("size") for d in reversed(chain) if d.type == "array_declarator"]
        dims = tuple(_text(s) for s in sizes)
        dim_values = tuple(_fold(s, env) if s is not None else None for s in sizes)
        element = _SIZEOF.get(type_text)
        count = 1
        for v in dim_values:
            count = count * v if v is not None and count is not None else None  # type: ignore[operator]
        nbytes = element * count if element is not None and count is not None and not is_extern else None
        out.append(SharedDecl(
            name=_text(name),
            type_text=type_text,
            dims=dims,
            dim_values=dim_values,
            is_extern=is_extern,
            bytes=nbytes,
            span=loc.span(declaration),
            function=function,
        ))
    return out


# ---------------------------------------------------------------------------- preprocessor and comments


def _include(node: Node, loc: _Locator) -> Include | None:
    path = node.child_by_field_name("path")
    if path is None:
        return None
    text = _text(path)
    is_system = path.type == "system_lib_string"
    if path.type in ("system_lib_string", "string_literal") and len(text) >= 2:
        text = text[1:-1]
    return Include(line=node.start_point[0] + 1, path=text, is_system=is_system, span=loc.span(node))


_ANNOTATION_TAG = "kernelscope:"


def _annotation(node: Node, loc: _Locator, function: str | None, env: _Env) -> Annotation | None:
    text = _text(node)
    if not text.startswith("//"):
        return None
    body = text[2:].strip()
    if not body.startswith(_ANNOTATION_TAG):
        return None
    entries = []
    for word in body[len(_ANNOTATION_TAG):].split():
        key, eq, value = word.partition("=")
        if eq and key:
            entries.append(AnnotationValue(key=key, text=value, value=_fold_text(value, env)))
    return Annotation(line=node.start_point[0] + 1, span=loc.span(node), entries=tuple(entries), function=function)


# ---------------------------------------------------------------------------- entry point


def parse_source(text: str, passes: Passes | None = None) -> SourceModel:
    """The source model of one `.cu` file. Pure, and never raises: bad input gives an empty model.

    With `passes` (the compile's predefined macros, analysis/conditional.py), conditional blocks are
    resolved as nvcc resolves them: kernels, loops and constants as its device pass reads the file,
    launch sites as its host pass does. Without, every branch of every conditional is read."""
    try:
        if passes is None:
            return _parse(text)
        source = text.encode("utf-8", "surrogatepass")
        device, host = resolved(source, passes.device), resolved(source, passes.host)
        model = _parse(device.decode("utf-8", "surrogatepass"))
        if host == device:
            return model
        return model.model_copy(update={"launch_sites": _parse(host.decode("utf-8", "surrogatepass")).launch_sites})
    except Exception:  # noqa: BLE001 - an editor feeds us half-typed files; a bug here must not kill the server
        _log.exception("kernelscope: parsing the source structure failed")
        return SourceModel()


def _parse(text: str) -> SourceModel:
    if not text:
        return SourceModel()
    source = text.encode("utf-8", "surrogatepass")
    tree = _parser().parse(source)
    loc = _Locator(source, text.isascii())
    found = _collect(tree.root_node)
    constants = _file_constants(found)

    functions = [f if f is None or not found.stores.get(i) else
                 f.model_copy(update={"stores": tuple(dict.fromkeys(found.stores[i]))})
                 for i, f in enumerate(_function(node, loc, constants) for node in found.functions)]
    names = [f.name if f is not None else None for f in functions]
    device = [f is not None and f.is_device_code for f in functions]
    scopes = _function_scopes(found, functions, constants)

    def env(fn: int | None, at: Node) -> _Env:
        """The names visible at `at`: a function's parameters and locals in scope there."""
        return scopes[fn].at(at.start_byte) if fn is not None and fn in scopes else constants

    def name(fn: int | None) -> str | None:
        return names[fn] if fn is not None else None

    loops = tuple(
        _loop(i, raw, loc, functions[raw.function] if raw.function is not None else None,
              env(raw.function, raw.node), found.writes.get(raw.function, []))
        for i, raw in enumerate(found.loops)
    )
    literals = tuple(
        lit for node, fn in found.numbers if (lit := _float_literal(node, loc, name(fn))) is not None
    )

    calls: list[Call] = []
    launches: list[LaunchSite] = []
    for node, fn in found.calls:
        syntax = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        if syntax is not None:
            launch = _launch(node, syntax, loc, name(fn), env(fn, node))
            if launch is not None:
                launches.append(launch)
        elif fn is not None and device[fn] and not _is_cast(node):
            call = _call(node, loc, names[fn] or "")
            if call is not None:
                calls.append(call)

    shared = [
        decl
        for node, fn in found.declarations
        if _has_qualifier(node, {"__shared__"})
        for decl in _shared_decls(node, loc, name(fn), env(fn, node))
    ]
    pragmas = [
        Pragma(line=node.start_point[0] + 1, text=text_, span=loc.span(node), function=name(fn))
        for node, fn in found.pragmas
        if (text_ := _pragma_text(node)) is not None
    ]

    # A file-scope annotation belongs to the next function defined after it.
    starts = [node.start_byte for node in found.functions]
    annotations = []
    for node, fn in found.comments:
        owner = fn
        if owner is None:
            following = bisect_right(starts, node.start_byte)
            owner = following if following < len(starts) else None
        annotation = _annotation(node, loc, name(owner), constants)
        if annotation is not None:
            annotations.append(annotation)

    return SourceModel(
        functions=tuple(f for f in functions if f is not None),
        loops=loops,
        literals=literals,
        calls=tuple(calls),
        shared_decls=tuple(shared),
        branches=tuple(b for node, fn in found.branches if fn is not None and (b := _branch(node, loc, name(fn)))),
        divisions=tuple(Division(line=node.start_point[0] + 1, operator=_text(node.child_by_field_name("operator")),
                                 divisor=_squash(_text(node.child_by_field_name("right"))),
                                 power_of_two=_power_of_two(_fold(node.child_by_field_name("right"), env(fn, node))),
                                 function=name(fn))
                        for node, fn in found.divisions),
        index_lines=tuple(sorted({node.start_point[0] + 1 for node, fn in found.statements
                                  if node.start_point[0] == node.end_point[0] and _index_only(node)})),
        launch_sites=tuple(launches),
        pragmas=tuple(pragmas),
        annotations=tuple(annotations),
        includes=tuple(inc for node in found.includes if (inc := _include(node, loc)) is not None),
        constants=constants.folded(),
    )
