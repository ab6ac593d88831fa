"""A program's launches as it runs without command-line arguments: the sizes its own source gives
when the command line gives none.

Launch capture runs a program with no arguments, and so does a user trying it first; what the
program then launches is written in its source: `argc > 1 ? atoi(argv[1]) : 1024` is 1024 (argc is
1), jacobi.cu's `get_argval<int>(argv, argv + argc, "-nx", 16384)` returns its default 16384, and
matrixMul.cu's `if (checkCmdLineFlag(argc, argv, "wA")) dimsA.x = ...` does not run (a query of an
empty command line finds no flag), so dimsA keeps its initialiser. Read this way a launch is
the program's default, not a constant of the program: a site folded so says so
(`LaunchSite.without_arguments`), and one that folds without it is never read this way.
"""

from __future__ import annotations

from tree_sitter import Node

from ..c_arithmetic import binary as _binary
from .folding import _Env, _fold
from .records import Function
from .syntax import _text
from .walk import _Collected


def command_line_names(functions: list[Function | None]) -> tuple[str, str] | None:
    """The names `main` gives argc and argv, when it takes them."""
    main = next((f for f in functions if f is not None and f.name == "main" and f.kind == "host"), None)
    if main is None or len(main.params) < 2 or not main.params[0].name or not main.params[1].name:
        return None
    return main.params[0].name, main.params[1].name


def _reads(node: Node | None, names: set[str]) -> bool:
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if n.type == "identifier" and _text(n) in names:
            return True
        stack.extend(n.named_children)
    return False


def without_arguments(node: Node | None, names: tuple[str, str], env: _Env, depth: int = 0) -> int | None:
    """A condition's value when the program runs with no arguments: argc is 1, a call that reads
    argc or argv (`checkCmdLineFlag(argc, argv, "wA")`) finds nothing (0), the rest folds as usual.
    None for a condition that reads neither: argc read as a size (`int q = argc`) is no default the
    source gives, so only conditions read it."""
    if node is None or depth > 32 or depth == 0 and not _reads(node, set(names)):
        return None
    t, d = node.type, depth + 1
    if t == "identifier" and _text(node) == names[0]:
        return 1
    if t == "call_expression":
        return 0 if _reads(node.child_by_field_name("arguments"), set(names)) else _fold(node, env)
    if t in ("parenthesized_expression", "condition_clause"):
        inner = [c for c in node.named_children if c.type != "comment"]
        return without_arguments(inner[-1], names, env, d) if inner else None
    if t == "unary_expression" and _text(node.child_by_field_name("operator")) == "!":
        v = without_arguments(node.child_by_field_name("argument"), names, env, d)
        return None if v is None else int(not v)
    if t == "binary_expression":
        op = _text(node.child_by_field_name("operator"))
        left = without_arguments(node.child_by_field_name("left"), names, env, d)
        if op == "&&" and left == 0 or op == "||" and left not in (0, None):
            return int(op == "||")
        right = without_arguments(node.child_by_field_name("right"), names, env, d)
        if op in ("&&", "||") and right is not None and (right == 0) == (op == "&&"):
            return int(op == "||")
        return _binary(op, left, right) if left is not None and right is not None else None
    return None if _reads(node, set(names)) else _fold(node, env)


def untaken(found: _Collected, names: tuple[str, str], env: _Env) -> tuple[tuple[int, int], ...]:
    """Byte ranges of what a run without arguments does not do: the consequence of an `if` on the
    command line that is false then, the `else` of one that is true, and the `&x` handed to a call
    that reads the command line (cudahandbook's `chCommandLineGet(&nBlocks, "nBlocks", argc, argv)`
    finds no flag, so it leaves nBlocks as initialised)."""
    out = []
    for node, _ in found.calls:
        args = node.child_by_field_name("arguments")
        if _reads(args, set(names)):
            out.extend((a.start_byte, a.end_byte) for a in args.named_children
                       if a.type == "pointer_expression" and _text(a.child_by_field_name("operator")) == "&")
    for node, _ in found.branches:
        clause = node.child_by_field_name("condition")
        if not _reads(clause, set(names)):
            continue
        taken = without_arguments(clause, names, env)
        branch = None if taken is None else node.child_by_field_name("alternative" if taken else "consequence")
        if branch is not None:
            out.append((branch.start_byte, branch.end_byte))
    return tuple(out)


def default_parameter(node: Node) -> int | None:
    """The parameter a function returns unless a branch changes it: jacobi.cu's `get_argval(begin, end,
    arg, default_val) { T argval = default_val; ...; if (...) { inbuf >> argval; } return argval; }` gives
    3. Every use of the returned local other than its declaration and the return must sit in an `if`."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if params is None or not statements or statements[-1].type != "return_statement":
        return None
    returned = next((c for c in statements[-1].named_children if c.type != "comment"), None)
    if returned is None or returned.type != "identifier":
        return None
    local = _text(returned)
    names = []
    for p in params.named_children:
        if p.type == "comment":
            continue
        inner = p.child_by_field_name("declarator")
        while inner is not None and inner.type not in ("identifier",):
            inner = inner.child_by_field_name("declarator")
        names.append(_text(inner) if inner is not None else None)
    for s in statements[:-1]:
        if s.type != "declaration":
            continue
        for init in s.children_by_field_name("declarator"):
            target, value = init.child_by_field_name("declarator"), init.child_by_field_name("value")
            if init.type == "init_declarator" and target is not None and _text(target) == local and \
                    value is not None and value.type == "identifier" and _text(value) in names:
                others = [n for t in statements[:-1] if t is not s for n in _uses(t, local)]
                if all(_inside_if(n, body) for n in others):
                    return names.index(_text(value))
    return None


def _uses(node: Node, name: str) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and _text(n) == name:
            out.append(n)
        stack.extend(n.named_children)
    return out


def _inside_if(node: Node, body: Node) -> bool:
    """Whether `node` is in a branch of an `if` of `body` (not in its condition)."""
    parent = node.parent
    while parent is not None and parent.id != body.id:
        condition = parent.child_by_field_name("condition") if parent.type == "if_statement" else None
        if condition is not None and not condition.start_byte <= node.start_byte < condition.end_byte:
            return True
        parent = parent.parent
    return False


def first_values(found: _Collected) -> tuple[tuple[int, int], ...]:
    """Byte ranges of the update of each `for` loop that declares its own variable (`for (int t =
    32; t <= 512; t *= 2)`): with them left out, the variable holds its first value, which is
    what the loop's first launch is made with (and what capture keeps of a sweep whose
    configurations run equally often: the first of equals)."""
    out = []
    for raw in found.loops:
        node = raw.node
        update = node.child_by_field_name("update") if node.type == "for_statement" else None
        init = node.child_by_field_name("initializer") if update is not None else None
        if init is not None and init.type == "declaration":
            out.append((update.start_byte, update.end_byte))
    return tuple(out)
