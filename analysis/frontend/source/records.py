"""The source model's records: functions, loops, launch sites, annotations and the rest, with their spans.
"""

from __future__ import annotations

import bisect
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from ...profile import LaunchConfig


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
    #: False when an `if` around the launch folds to the branch that does not contain it (the
    #: program's own constants say it never runs: `if (block_size == 16)` with block_size 32)
    live: bool = True
    #: (block size, grid, dynamic shared bytes) when the block is a name that does not fold and the
    #: launch's own formulas for the grid or the shared memory do once it is given
    #: (`ceil_div(N * 32, block_size)`, `block_size * sizeof(float)`; None where not): a default
    #: block then comes with what the program computes for it (analysis/emulator/launch.py)
    by_block: tuple[tuple[int, tuple[int, int, int] | None, int | None], ...] = ()
    #: how many times the launch runs each time its function runs: the product of the trip counts
    #: of the loops around it that fold (a loop whose count does not fold counts once)
    repeats: int = 1
    #: the site as each instance of the function template around it folds it, one per explicit
    #: template argument list the file's calls name (`runTest<float>(argc, argv, 32)`): its
    #: `kernel_text` with the instance's arguments (`testKernel<float>`), its own config
    variants: tuple[LaunchSite, ...] = ()
    #: positions in `config` (0 grid, 1 block, 2 smem) that fold only as the program runs without
    #: command-line arguments (the defaults its source gives: `argc > 1 ? atoi(argv[1]) : 1024`;
    #: source/command_line.py)
    without_arguments: tuple[int, ...] = ()
    #: ... and only with each `for` loop around it (or around the calls that reach it) at its first
    #: value: the program sweeps the launch (`for (int t = 32; t <= 512; t *= 2)`), this is its first
    first_iteration: tuple[int, ...] = ()

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
    # The other files of the translation unit (analysis/frontend/inclusion.py): the local headers this file
    # includes, and the file that includes it when it is analysed in that file's context. Their
    # spans are lines of their own files, so only name lookups (`definition`, `launches_of`,
    # `unit_annotations`) read them; every line-based lookup is this file's alone.
    context: tuple[IncludedSource, ...] = ()
    _lookup: tuple | None = PrivateAttr(default=None)
    _loop_lines: tuple | None = PrivateAttr(default=None)

    def _index(self) -> tuple:
        """(functions, kernels by name, functions by name, branch lines, branches in line order).
        Looked up once per kernel: a scan each time made a file of n kernels cost n². Kept with the
        tuples it indexes, so that a model_copy with other functions or branches indexes anew."""
        index = self._lookup
        if index is None or index[0] is not self.functions or index[4] is not self.branches:
            kernels: dict[str, Function] = {}
            functions: dict[str, Function] = {}
            for f in self.functions:  # setdefault: the first of a name wins, as a scan finds it
                functions.setdefault(f.name, f)
                if f.kind == "kernel":
                    kernels.setdefault(f.name, f)
            ordered = sorted(self.branches, key=lambda b: b.line)
            index = (self.functions, kernels, functions, [b.line for b in ordered], self.branches, tuple(ordered))
            self._lookup = index
        return index

    def branches_in(self, span: Span) -> tuple[Branch, ...]:
        """The `if` statements that start on a line of `span`, in line order."""
        _, _, _, lines, _, ordered = self._index()
        return ordered[bisect.bisect_left(lines, span.start.line):bisect.bisect_right(lines, span.end.line)]

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
        """The innermost loop whose statement spans `line`. From an index of every line a loop spans,
        made once: the advice asks for each of a kernel's lines, and a scan of the file's loops each
        time made a file of n kernels cost n² (issue 35: a 5,000-line file, 4.7 million span tests)."""
        index = self._loop_lines
        if index is None or index[0] is not self.loops:
            innermost: dict[int, Loop] = {}
            for lp in self.loops:  # the first of equal keys wins, as max() over a scan finds it
                key = (lp.depth, lp.span.start_byte)
                for ln in range(lp.span.start.line, lp.span.end.line + 1):
                    held = innermost.get(ln)
                    if held is None or key > (held.depth, held.span.start_byte):
                        innermost[ln] = lp
            index = self._loop_lines = (self.loops, innermost)
        return index[1].get(line)

    def kernel(self, name: str) -> Function | None:
        return self._index()[1].get(name)

    def function(self, name: str) -> Function | None:
        return self._index()[2].get(name)

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


LaunchSite.model_rebuild()
SourceModel.model_rebuild()
