"""Statements and expressions the optimizers read: `if` conditions, index-only lines, floating literals,
calls, kernel launches and `__shared__` declarations.
"""

from __future__ import annotations

from tree_sitter import Node

from .declarations import _declarator_chain, _declarators, _declared_name, _has_qualifier, _type_text_before
from .folding import _Env, _Scope, _SIZEOF, _fold, _fold_dims, _parse_expression, expanded_text
from .records import Branch, Call, FloatLiteral, LaunchConfigArg, LaunchSite, SharedDecl
from .syntax import _Locator, _squash, _text


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
        by_block=_by_block(_arguments(syntax), config, env),
    )


#: the block sizes a launch written in terms of an unknown block is folded for (`LaunchSite.by_block`)
BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)


def _by_block(nodes: list[Node], config: tuple[LaunchConfigArg, ...], env: _Env
              ) -> tuple[tuple[int, tuple[int, int, int] | None, int | None], ...]:
    """(block, grid, dynamic shared bytes) for each of `BLOCK_SIZES` when the block is one name
    that does not fold and the grid, or the dynamic shared memory, does once that name is bound:
    llm.c's `<<<ceil_div(N * 32, block_size), block_size, block_size * sizeof(float)>>>` with the
    block from a list. Locals are read as what they hold (`expanded_text`), so the launch's own
    formulas see the bound block; None where a value folds without it, or not at all."""
    if len(nodes) < 2 or config[1].dims is not None or nodes[1].type != "identifier":
        return ()
    block = _text(nodes[1])
    grid = _parse_expression(expanded_text(nodes[0], env)) if config[0].dims is None else None
    smem = _parse_expression(expanded_text(nodes[2], env)) if len(nodes) > 2 and config[2].dims is None else None
    out = []
    for size in BLOCK_SIZES:
        bound = _Scope(None, env, {block: size}, set())
        out.append((size, _fold_dims(grid, bound) if grid is not None else None,
                    _fold(smem, bound) if smem is not None else None))
    if all(g is None for _, g, _ in out) and all(m is None for _, _, m in out):
        return ()
    return tuple(out)


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
