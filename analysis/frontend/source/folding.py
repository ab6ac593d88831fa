"""Integer constants folded over expression nodes: literals, `sizeof`, casts, enums, macros, `const` globals
and locals assigned once, C++ block scope included (`(n + threads - 1) / threads` becomes a number).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tree_sitter import Node

from ..c_arithmetic import binary as _binary
from ..c_arithmetic import int_literal as _int_literal
from ..treesitter import parser as _parser
from .records import Constant
from .syntax import _squash, _text


Value = int | tuple[int, int, int]  # an integer, or a dim3's (x, y, z)


class _Env(Protocol):
    def get(self, name: str) -> Value | None: ...

    # a function-like #define's parameters and body, as the preprocessor would expand it
    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None: ...

    # a function whose body is one `return expr;`, as a compiler inlines it: its parameters,
    # the expression, and the file scope the expression reads
    def helper(self, name: str) -> tuple[tuple[str, ...], Node, _Env] | None: ...

    # the type a template's type parameter stands for in the instance folded (`sizeof(T)`)
    def alias(self, name: str) -> str | None: ...

    # where the file is read as its program runs without arguments (command_line.py): a function
    # that returns a parameter unless a branch changes it, by the parameter's position, and the
    # names of main's argc and argv; None otherwise
    def command_line_default(self, name: str) -> tuple[int, tuple[str, str]] | None: ...

    # a condition on the command line (`argc > 1`) as a run without arguments decides it; None
    # where the file is not read so, or the condition does not read argc or argv
    def command_line_condition(self, node: Node, env: _Env) -> int | None: ...

    # a static constant member of a named type, `x128::size` with `typedef Packed128<float> x128;`
    def member(self, scope: Node, name: str) -> Value | None: ...


#: a named type: ("alias", the type it names) for a typedef or `using`, or ("struct", its template
#: parameters, its static constant members' initialisers by name)
TypeDef = tuple[str, Node] | tuple[str, tuple[str, ...], dict[str, Node]]

#: a file's (or a header's) definitions before folding: constants by name (each folded on first
#: use, in the scope of the whole translation unit), function-like macros, one-return helpers,
#: named types
Definitions = tuple[dict[str, Callable[["_Env"], "Value | None"]], dict[str, tuple[tuple[str, ...], str]],
                    dict[str, tuple[tuple[str, ...], Node] | None], dict[str, TypeDef]]


class _FileConstants:
    """File-scope constants, folded on first use: a #define may refer to one defined later."""

    def __init__(self, raw: dict[str, Callable[[_Env], Value | None]],
                 macros: dict[str, tuple[tuple[str, ...], str]],
                 helpers: dict[str, tuple[tuple[str, ...], Node] | None] | None = None,
                 types: dict[str, TypeDef] | None = None) -> None:
        self._raw = raw
        self._macros = macros
        self._helpers = helpers or {}
        self._types = types or {}
        #: file-scope variables (and elements of file-scope arrays, `grid[0][1]`) that host code
        #: assigns once (`assigned_globals`): what they hold at a launch, never constants of the
        #: file (`folded`), since device code cannot read them
        self._assigned: dict[str, Callable[[_Env], Value | None]] = {}
        #: main's (argc, argv) and the default-returning helpers, where the file is read as its
        #: program runs without arguments (`read_without_arguments`)
        self._command_line: tuple[str, str] | None = None
        self._defaults: dict[str, int] = {}
        self._condition: Callable[[Node, tuple[str, str], _Env], int | None] | None = None
        self._done: dict[str, Value | None] = {}
        self._busy: set[str] = set()

    def helper(self, name: str) -> tuple[tuple[str, ...], Node, _Env] | None:
        found = self._helpers.get(name)
        return (found[0], found[1], self) if found is not None else None

    def alias(self, name: str) -> str | None:
        """The type a typedef or `using` names, where it is one word (`typedef float floatX;`)."""
        found = self._types.get(name)
        if found is None or found[0] != "alias" or found[1].type not in ("primitive_type", "type_identifier",
                                                                         "sized_type_specifier"):
            return None
        return _type_name(found[1])  # type: ignore[arg-type]

    def member(self, scope: Node, name: str) -> Value | None:
        """`x128::size`: the scope followed through typedefs to a struct (a template's instance:
        `Packed128<floatX>`), and its `static constexpr` member folded there, with the template's
        type parameters standing for the instance's arguments (`sizeof(ElementType)` is 4)."""
        for _ in range(8):
            if scope.type in ("namespace_identifier", "type_identifier", "identifier"):
                found = self._types.get(_text(scope))
                if found is None:
                    return None
                if found[0] == "alias":
                    scope = found[1]  # type: ignore[assignment]
                    continue
                arguments: list[str] = []
            elif scope.type == "template_type":
                found = self._types.get(_text(scope.child_by_field_name("name")))
                listed = scope.child_by_field_name("arguments")
                arguments = [_type_name(a) for a in listed.named_children if a.type != "comment"] if listed else []
            else:
                return None
            if found is None or found[0] != "struct":
                return None
            _, params, members = found  # type: ignore[misc]
            if name not in members or len(arguments) not in (0, len(params)):
                return None
            return _fold_value(members[name], _Instance(self, dict(zip(params, arguments)), members))
        return None

    def read_without_arguments(self, names: tuple[str, str], defaults: dict[str, int],
                               condition: Callable[[Node, tuple[str, str], _Env], int | None]) -> None:
        self._command_line = names
        self._defaults = defaults
        self._condition = condition

    def command_line_condition(self, node: Node, env: _Env) -> int | None:
        if self._condition is None or self._command_line is None:
            return None
        return self._condition(node, self._command_line, env)

    def command_line_default(self, name: str) -> tuple[int, tuple[str, str]] | None:
        at = self._defaults.get(name)
        return (at, self._command_line) if at is not None and self._command_line is not None else None

    def get(self, name: str) -> Value | None:
        if name in self._done:
            return self._done[name]
        thunk = self._raw.get(name) or self._assigned.get(name)
        if thunk is None or name in self._busy:  # unknown, or a cycle like `#define A A`
            return None
        self._busy.add(name)
        value = thunk(self)
        self._busy.discard(name)
        self._done[name] = value
        return value

    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None:
        return self._macros.get(name)

    def assign(self, name: str, thunk: Callable[[_Env], Value | None]) -> None:
        """`name` (a variable, or an element as `grid[0][1]`) holds what `thunk` folds once assigned."""
        if name not in self._raw:
            self._assigned[name] = thunk

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
                return self._locals.value(local, self._at)
        if name in self._hidden:
            return self._locals.parameter_value(name, self._at) if self._locals is not None else None
        return self._parent.get(name)

    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None:
        return self._parent.macro(name)

    def helper(self, name: str) -> tuple[tuple[str, ...], Node, _Env] | None:
        return self._parent.helper(name)

    def command_line_default(self, name: str) -> tuple[int, tuple[str, str]] | None:
        return self._parent.command_line_default(name)

    def command_line_condition(self, node: Node, env: _Env) -> int | None:
        return self._parent.command_line_condition(node, env)

    def alias(self, name: str) -> str | None:
        own = self._locals.types.get(name) if self._locals is not None else None
        return own if own is not None else self._parent.alias(name)

    def member(self, scope: Node, name: str) -> Value | None:
        return self._parent.member(scope, name)

    def shadows(self, name: str) -> bool:
        """Whether a local of the function hides the file-scope `name` here."""
        return self._locals is not None and self._at is not None and self._locals.visible(name, self._at) is not None

    def element(self, key: str) -> Value | None:
        """`block_sizes[0]` of a local array declared with its elements and never written."""
        if self._locals is None or self._at is None:
            return None
        name, _, index = key.partition("[")
        local = self._locals.visible(name, self._at)
        return self._locals.element(local, index.rstrip("]"), self._at) if local is not None else None

    def initializer(self, name: str) -> tuple[Node, _Env] | None:
        """A local's initialiser and the scope it reads, when the local is never written."""
        if self._locals is None or self._at is None or name in self._values:
            return None
        return self._locals.initializer(name, self._at)


class _Instance:
    """Names inside one instance of a struct: its other static members, its template's type
    parameters as the instance's arguments, then the file's."""

    def __init__(self, parent: _Env, types: dict[str, str], members: dict[str, Node]) -> None:
        self._parent, self._types, self._members = parent, types, members
        self._busy: set[str] = set()

    def get(self, name: str) -> Value | None:
        if name in self._members and name not in self._busy:
            self._busy.add(name)
            value = _fold_value(self._members[name], self)
            self._busy.discard(name)
            return value
        return self._parent.get(name)

    def macro(self, name: str) -> tuple[tuple[str, ...], str] | None:
        return self._parent.macro(name)

    def helper(self, name: str) -> tuple[tuple[str, ...], Node, _Env] | None:
        return self._parent.helper(name)

    def alias(self, name: str) -> str | None:
        return self._types.get(name) or self._parent.alias(name)

    def command_line_default(self, name: str) -> tuple[int, tuple[str, str]] | None:
        return None

    def command_line_condition(self, node: Node, env: _Env) -> int | None:
        return None

    def member(self, scope: Node, name: str) -> Value | None:
        return self._parent.member(scope, name)


class _Local:
    """One declaration of a local variable, the block it is visible in, and what it holds."""

    __slots__ = ("name", "value", "start", "scope_start", "scope_end", "fixed", "assigned", "elements")

    def __init__(self, name: str, value: Node | None, start: int, scope: Node,
                 elements: tuple[Node, ...] | None = None) -> None:
        self.name = name
        self.value = value  # the initialiser that folds, when the declaration is a constant one
        #: a one-dimensional integer array's initialiser list (`int block_sizes[] = {32, 64};`)
        self.elements = elements
        self.start = start
        self.scope_start = scope.start_byte
        self.scope_end = scope.end_byte
        #: no write but `assigned` reaches it (set by `_function_scopes`, which sees the writes)
        self.fixed = True
        #: the one later `name = expr;` statement of its own block: (where it ends, expr); expr
        #: reads the scope where the statement starts (`m = 2 * m` doubles what `m` held)
        self.assigned: tuple[int, Node, int] | None = None


class _FunctionLocals:
    """A function's locals that fold: an integer or dim3 declared with a constant initialiser, or
    assigned once later by a statement of its own block (`int threads; threads = 128;`), and
    written nowhere else. Each use sees the innermost declaration before it (`{ dim3 grid(1);
    k<<<grid, ...>>>(); } { dim3 grid(2); ... }` are two variables), and the value it holds there:
    the initialiser before the assignment, the assigned value after it."""

    def __init__(self, parent: _Env, params: set[str], declared: list[_Local], written: set[str]) -> None:
        self._parent = parent
        self._params = params
        #: a parameter's value where every call of the function passes the same constant (set by
        #: the file's parse, which knows the calls: `_parameter_values` in declarations.py)
        self.parameter: Callable[[str], Value | None] = lambda name: None
        self._by_name: dict[str, list[_Local]] = {}
        for d in declared:
            self._by_name.setdefault(d.name, []).append(d)
        self._written = written
        #: a parameter assigned once by a `name = expr;` statement of the function's own body, and
        #: written nowhere else (llm.c's `block_size = 32;` in a launcher): (where the statement
        #: ends, expr, where it starts); before it the parameter holds what the calls pass
        self.assigned: dict[str, tuple[int, Node, int]] = {}
        self._done: dict[tuple[int, bool], Value | None] = {}
        self._busy: set[tuple[int, bool]] = set()
        #: a function template's type parameters in the instance folded (`instance`)
        self.types: dict[str, str] = {}

    def instance(self, values: dict[str, Value], types: dict[str, str]) -> _FunctionLocals:
        """The same function as one instance of its template reads it: its parameters given
        `values` (unless it writes them) and its type parameters `types` (`_template_instances`)."""
        other = _FunctionLocals(self._parent, self._params, [], self._written)
        other._by_name = self._by_name
        other.assigned = self.assigned
        other.parameter = lambda name: values[name] if name in values else self.parameter(name)
        other.types = types
        return other

    def visible(self, name: str, at: int) -> _Local | None:
        seen = [d for d in self._by_name.get(name, ()) if d.start < at and d.scope_start <= at < d.scope_end]
        return max(seen, key=lambda d: d.scope_start, default=None)

    def parameter_value(self, name: str, at: int | None = None) -> Value | None:
        """A parameter's value at `at`: from the function's calls, unless the function writes it;
        after its one assignment (`assigned`), the value assigned."""
        assigned = self.assigned.get(name)
        if assigned is None:
            return None if name in self._written else self.parameter(name)
        if at is None or at < assigned[0]:
            return self.parameter(name)
        key = (assigned[2], True)
        if key not in self._done and key not in self._busy:
            self._busy.add(key)
            self._done[key] = _fold_local(assigned[1], self.at(assigned[2]))
            self._busy.discard(key)
        return self._done.get(key)

    def _held(self, local: _Local, at: int) -> tuple[Node, int] | None:
        """The expression `local` holds at `at`, and the position whose scope it reads."""
        if not local.fixed:
            return None
        if local.assigned is not None and at >= local.assigned[0]:
            return local.assigned[1], local.assigned[2]
        return (local.value, local.start) if local.value is not None else None

    def initializer(self, name: str, at: int) -> tuple[Node, _Env] | None:
        """The expression the local `name` visible at `at` holds there, and the scope it reads,
        when nothing else writes it (a polynomial expands it: `polynomial`)."""
        local = self.visible(name, at)
        held = self._held(local, at) if local is not None else None
        return (held[0], self.at(held[1])) if held is not None else None

    def element(self, local: _Local, index: str, at: int) -> Value | None:
        """Element `index` of an array local that nothing writes (no element store, no call it
        is handed to): what its initialiser list gives there, read where it is declared."""
        if not local.fixed or local.elements is None or not index.isdigit() or int(index) >= len(local.elements):
            return None
        return _fold_value(local.elements[int(index)], self.at(local.start))

    def value(self, local: _Local, at: int) -> Value | None:
        held = self._held(local, at)
        if held is None:
            return None
        key = (id(local), held[1] != local.start)
        if key in self._done:
            return self._done[key]
        if key in self._busy:
            return None
        self._busy.add(key)
        value = _fold_local(held[0], self.at(held[1]))
        self._busy.discard(key)
        self._done[key] = value
        return value

    def at(self, position: int, bound: dict[str, Value] | None = None) -> _Scope:
        """The scope at `position`; `bound` names hold those values there (the index and the switch
        case a kernel pointer was picked under: `pointers.pointed_kernels`)."""
        return _Scope(self, self._parent, dict(bound or {}), self._params, position)


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


#: type names that mean the same whatever the file defines (a template argument `T` is not one)
BUILTIN_TYPES = frozenset(_SIZEOF)


_INTEGRAL_TYPES = {
    "int", "unsigned", "signed", "long", "short", "char", "size_t", "int8_t", "uint8_t",
    "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "auto", "bool",
    "ptrdiff_t", "unsigned int", "long long", "unsigned long", "unsigned long long",
    "long int", "unsigned long int", "long long int", "unsigned long long int", "short int",
    "unsigned short", "unsigned char", "signed char",
    # the typedefs of glibc's <sys/types.h> and <stdint.h> that host code sizes launches with
    "uint", "ulong", "ushort", "uchar", "ssize_t", "intptr_t", "uintptr_t", "int_fast32_t", "uint_fast32_t",
    "int_fast64_t", "uint_fast64_t", "int_least32_t", "uint_least32_t", "intmax_t", "uintmax_t",
}


def _type_name(node: Node) -> str:
    """The text of a type, stripped of parentheses, qualifiers and extra spaces."""
    text = _squash(_text(node)).strip("() ")
    for qualifier in ("const ", "volatile "):
        text = text.replace(qualifier, "")
    return text.strip()


#: the words C++ spells its integer types with, in any order (`long unsigned int`)
_INTEGER_WORDS = frozenset({"unsigned", "signed", "long", "short", "int", "char"})


def _is_integral(type_text: str) -> bool:
    text = type_text.removeprefix("std::")
    words = text.split()
    return text in _INTEGRAL_TYPES or bool(words) and all(w in _INTEGER_WORDS for w in words)


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
    if t == "type_descriptor":
        # A template argument that is one name parses as a type (`launch<bs, 8>` with `const int
        # bs = 512;`): the grammar cannot tell them apart. A type has no value in `env`.
        inner = [c for c in node.named_children if c.type != "comment"]
        return env.get(_text(inner[0])) if len(inner) == 1 and inner[0].type == "type_identifier" else None
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _fold_value(inner[0], env, d) if len(inner) == 1 else None
    if t == "subscript_expression":
        key = element_key(node, env, d)
        shadows, element = getattr(env, "shadows", None), getattr(env, "element", None)
        if key is not None and shadows is not None and element is not None and shadows(key.partition("[")[0]):
            return element(key)  # a local array of the function, not the file's
        return env.get(key) if key is not None else None
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
        if cond is None:  # `argc > 1 ? atoi(argv[1]) : 1024` where the program runs without arguments
            cond = env.command_line_condition(node.child_by_field_name("condition"), env)
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
        if operand is None:
            return None
        name = _type_name(operand)
        for _ in range(8):  # a template's parameter, then typedefs: `ElementType` -> `floatX` -> `float`
            named = env.alias(name)
            if named is None or named == name:
                break
            name = named
        return _SIZEOF.get(name)
    if t == "assignment_expression" and _text(node.child_by_field_name("operator")) == "=":
        return _fold_value(node.child_by_field_name("right"), env, d)  # `N = M = 2048` is 2048
    if t == "call_expression":
        return _fold_call(node, env, d)
    if t == "qualified_identifier":
        scope, member = node.child_by_field_name("scope"), node.child_by_field_name("name")
        return env.member(scope, _text(member)) if scope is not None and member is not None and \
            member.type == "identifier" else None
    if t in ("initializer_list", "argument_list"):
        return _fold_dims(node, env, d)
    return None


def element_key(node: Node, env: _Env, depth: int = 0) -> str | None:
    """`grid[dimension][fp]` as the element it names, `grid[0][1]`, when every index folds."""
    indices: list[int] = []
    while node.type == "subscript_expression":
        args = node.child_by_field_name("indices")
        inner = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        index = _fold(inner[0], env, depth + 1) if len(inner) == 1 else None
        if index is None:
            return None
        indices.append(index)
        node = node.child_by_field_name("argument")
        if node is None:
            return None
    if node.type != "identifier":
        return None
    return _text(node) + "".join(f"[{i}]" for i in reversed(indices))


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
    name = _text(function.child_by_field_name("name")) if function.type == "template_function" else (
        _text(function) if function.type in ("identifier", "qualified_identifier") else "")
    helper = env.helper(name) if name else None
    if helper is not None:
        # `ceil_div(N * 32, block_size)`: the one returned expression, folded over the file's
        # scope with each parameter bound to its argument's value, as inlining it gives
        params, returned, file_scope = helper
        values = [_fold_value(c, env, depth) for c in args.named_children if c.type != "comment"]
        if len(values) != len(params) or any(v is None for v in values):
            return None
        return _fold_value(returned, _Scope(None, file_scope, dict(zip(params, values)), set()), depth)  # type: ignore[arg-type]
    default = env.command_line_default(name) if name else None
    if default is not None:
        # `get_argval<int>(argv, argv + argc, "-nx", 16384)` with no arguments: its default
        at, command_line = default
        given = [c for c in args.named_children if c.type != "comment"]
        if len(given) > at and any(_text(i) in command_line for i in _identifiers(args)):
            return _fold_value(given[at], env, depth)
    if name.removeprefix("std::") in ("min", "max"):
        values = [_fold(c, env, depth) for c in args.named_children if c.type != "comment"]
        if len(values) == 2 and None not in values:
            return (min if name.endswith("min") else max)(values)  # type: ignore[type-var]
        return None
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


#: a polynomial over names: monomial (sorted names, repeated for powers) -> integer coefficient
Polynomial = dict[tuple[str, ...], int]


def polynomial(node: Node | None, env: _Env, depth: int = 0) -> Polynomial | None:
    """`node` as a polynomial with integer coefficients: names that fold are numbers, locals
    written once are their initialisers, anything else (a parameter, `blockIdx.y`) a symbol.
    Only +, -, * and casts to integers; None for anything else (division does not distribute)."""
    if node is None or depth > 16 or node.has_error:
        return None
    t, d = node.type, depth + 1
    if t == "number_literal":
        v = _int_literal(_text(node))
        return None if v is None else {(): v}
    if t in ("identifier", "field_expression"):
        value = _fold_value(node, env, d)
        if isinstance(value, int):
            return {(): value}
        expand = getattr(env, "initializer", None)
        init = expand(_text(node)) if t == "identifier" and expand is not None else None
        if init is not None:
            return polynomial(init[0], init[1], d)
        return {(_squash(_text(node)),): 1}
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return polynomial(inner[0], env, d) if len(inner) == 1 else None
    if t == "cast_expression":
        return polynomial(node.child_by_field_name("value"), env, d) if _is_integral(
            _type_name(node.child_by_field_name("type"))) else None
    if t == "initializer_list":  # `size_t const x{expr}`
        inner = [c for c in node.named_children if c.type != "comment"]
        return polynomial(inner[0], env, d) if len(inner) == 1 else None
    if t == "unary_expression" and _text(node.child_by_field_name("operator")) in ("-", "+"):
        p = polynomial(node.child_by_field_name("argument"), env, d)
        sign = -1 if _text(node.child_by_field_name("operator")) == "-" else 1
        return None if p is None else {m: sign * c for m, c in p.items()}
    if t == "binary_expression":
        op = _text(node.child_by_field_name("operator"))
        if op not in ("+", "-", "*"):
            return None
        a = polynomial(node.child_by_field_name("left"), env, d)
        b = polynomial(node.child_by_field_name("right"), env, d)
        if a is None or b is None:
            return None
        out: Polynomial = {}
        if op == "*":
            for ma, ca in a.items():
                for mb, cb in b.items():
                    m = tuple(sorted(ma + mb))
                    out[m] = out.get(m, 0) + ca * cb
        else:
            out = dict(a)
            for m, c in b.items():
                out[m] = out.get(m, 0) + (c if op == "+" else -c)
        out = {m: c for m, c in out.items() if c}
        return out if all(-_LIMIT < c < _LIMIT for c in out.values()) else None
    return None


def expanded_text(node: Node | None, env: _Env, depth: int = 0) -> str:
    """`node`'s text with each local the function never writes replaced by its initialiser in
    parentheses, recursively: `n2` with `int n2 = n / 2;` reads `(n / 2)`, and `start` with
    `int start = threadIdx.x + blockDim.x * blockIdx.x;` shows the thread index it holds. A bound
    written with such locals then folds where the launch gives what they are made of (division
    included, which `polynomial` leaves out)."""
    if node is None or node.text is None:
        return ""
    raw = node.text
    expand = getattr(env, "initializer", None)
    if expand is None or depth > 8:
        return _text(node)
    out, pos = [], 0
    for ident in _identifiers(node):
        init = expand(_text(ident))
        if init is None or init[0].has_error:
            continue
        out.append(raw[pos:ident.start_byte - node.start_byte].decode("utf-8", "replace"))
        out.append(f"({expanded_text(init[0], init[1], depth + 1)})")
        pos = ident.end_byte - node.start_byte
    out.append(raw[pos:].decode("utf-8", "replace"))
    return "".join(out)


def _identifiers(node: Node) -> list[Node]:
    """The plain identifiers under `node` in source order (not fields: `s.x`'s `x`, nor calls' names)."""
    if node.type == "identifier":
        return [node]
    out: list[Node] = []
    for c in node.named_children:
        if c.type == "call_expression":
            args = c.child_by_field_name("arguments")
            out += _identifiers(args) if args is not None else []
        elif c.type == "field_expression":
            arg = c.child_by_field_name("argument")
            out += _identifiers(arg) if arg is not None and arg.type != "identifier" else []
        else:
            out += _identifiers(c)
    return out


def poly_text(p: Polynomial) -> str:
    """C text of a polynomial, e.g. {("wA",): 1, (): -1} -> "wA - 1"."""
    terms = []
    for m, c in sorted(p.items(), key=lambda mc: (len(mc[0]) == 0, mc[0])):
        body = " * ".join(m)
        mag = abs(c)
        text = (body if mag == 1 else f"{mag} * {body}") if body else str(mag)
        terms.append(("- " if c < 0 else "+ ") + text)
    if not terms:
        return "0"
    joined = " ".join(terms)
    return joined[2:] if joined.startswith("+ ") else "-" + joined[2:]
