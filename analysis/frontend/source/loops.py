"""Loops: each `for`'s induction variable, start, bound and step, its trip count when they fold, and the
`#pragma unroll` written before it.
"""

from __future__ import annotations

from tree_sitter import Node

from .declarations import _declarators
from ..c_arithmetic import c_div as _c_div
from .folding import _Env, _fold, _fold_text, expanded_text, poly_text, polynomial
from .records import Function, Loop, UnrollPragma
from .syntax import _Locator, _squash, _text
from .walk import _LOOP_KINDS, _RawLoop, _written_name


def _loop_vars(initializer: Node | None) -> list[tuple[str, Node | None]]:
    """Each variable the initializer sets and its start expression: `int a = aBegin, b = bBegin`
    (cuda-samples' matrixMul) sets two, and the condition says which one is counted."""
    if initializer is None:
        return []
    if initializer.type == "declaration":
        out = []
        for d in _declarators(initializer):
            if d.type != "init_declarator":
                continue
            name = d.child_by_field_name("declarator")
            if name is not None and name.type == "identifier":
                out.append((_text(name), d.child_by_field_name("value")))
        return out
    if initializer.type == "comma_expression":
        return _loop_vars(initializer.child_by_field_name("left")) + _loop_vars(initializer.child_by_field_name("right"))
    if initializer.type == "assignment_expression" and _text(initializer.child_by_field_name("operator")) == "=":
        name = initializer.child_by_field_name("left")
        if name is not None and name.type == "identifier":
            return [(_text(name), initializer.child_by_field_name("right"))]
    return []


def _update_of(update: Node | None, var: str) -> Node | None:
    """The part of the update that advances `var`: `a += aStep` of `a += aStep, b += bStep`."""
    if update is None or update.type != "comma_expression":
        return update
    for side in (update.child_by_field_name("left"), update.child_by_field_name("right")):
        found = _update_of(side, var)
        if found is not None and found.type in ("update_expression", "assignment_expression"):
            target = found.child_by_field_name("argument" if found.type == "update_expression" else "left")
            if _written_name(target) == var:
                return found
    return None


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


def _extent(op: str, start: Node | None, start_value: int | None, bound: Node, step: int, env: _Env) -> str | None:
    """The distance the induction variable moves, as source text, for an additive step towards the bound."""
    inclusive = " + 1" if op in ("<=", ">=") else ""
    # locals written once read as their initialisers: `i = start; i < n2` with `start` the
    # thread's global index and `n2 = n / 2` is a grid-stride loop over n / 2 (code-samples' haxpy)
    bound_text = _squash(expanded_text(bound, env))
    start_text = _squash(_text(start)) if start is not None else ""
    per_thread = any(w in _squash(expanded_text(start, env)) for w in _THREAD_INDEX) if start is not None else False
    if step > 0 and op in ("<", "<="):
        if start_value == 0:
            return f"{bound_text}{inclusive}"
        # `for (a = aBegin; a <= aEnd; ...)` with `aEnd = aBegin + wA - 1`: the block-dependent
        # start cancels, the distance is `wA` (cuda-samples' matrixMul)
        if (cancelled := _difference(bound, start, env, inclusive)) is not None:
            return cancelled
        if per_thread:
            return f"{bound_text}{inclusive}"
        return f"({bound_text}) - ({start_text}){inclusive}" if start_text else None
    if step < 0 and op in (">", ">=") and start_text and not per_thread:
        return _difference(start, bound, env, inclusive) or f"({start_text}) - ({bound_text}){inclusive}"
    return None


def _difference(high: Node, low: Node | None, env: _Env, inclusive: str) -> str | None:
    """`high - low` as text when locals written once, expanded, cancel what depends on the thread
    or block; None when nothing cancels (the plain text then says the same)."""
    a, b = polynomial(high, env), polynomial(low, env)
    if a is None or b is None:
        return None
    diff = dict(a)
    for monomial, c in b.items():
        diff[monomial] = diff.get(monomial, 0) - c
    if inclusive:
        diff[()] = diff.get((), 0) + 1
    diff = {m: c for m, c in diff.items() if c}
    if any(any(w in name for w in _THREAD_INDEX) for m in diff for name in m):
        return None
    cancelled = set(a) | set(b)
    if not any(m and m not in diff for m in cancelled):
        return None
    return poly_text(diff)


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
    condition = node.child_by_field_name("condition")
    chosen = next(((var, start, cond) for var, start in _loop_vars(initializer)
                   if (cond := _loop_condition(condition, var)) is not None), None)
    if chosen is None:
        return _ForHeader()
    var, start_node, (op, bound_node) = chosen
    start_value = _fold(start_node, env)
    bound_text = _text(bound_node)
    update = _update_of(node.child_by_field_name("update"), var)
    step = _loop_step(update, var, env)
    step_text = _step_text(update) if step is None or step[0] == "+" else None
    direction = step[1] if step is not None and step[0] == "+" else (1 if step_text else 0)
    if update is not None and update.type == "update_expression" and _text(update.child_by_field_name("operator")) == "--":
        direction = -1
    elif update is not None and _text(update.child_by_field_name("operator")) == "-=":
        direction = -1
    extent = _extent(op, start_node, start_value, bound_node, direction, env) if direction else None
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
