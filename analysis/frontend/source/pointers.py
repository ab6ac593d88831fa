"""Kernels launched through a pointer: `fpDeriv[fp]<<<grid[dimension][fp], ...>>>` launches each kernel
the launching function stores in `fpDeriv`, under the index and the switch case it was stored at.

code-samples' finite-difference.cu picks its kernels by `switch (dimension) { case 0: fpDeriv[0] =
derivative_x; fpDeriv[1] = derivative_x_lPencils; ... }` and launches `fpDeriv[fp]` in a loop over
`fp`: derivative_x_lPencils runs where fp is 1 and dimension 0, so its launch is the site's
configuration folded with those two names bound. A pointer stored under a condition that binds no
name (`chosen = flag ? a : b`, an `if (argc > 1)`) names no kernel here: which one runs is the run's.
"""

from __future__ import annotations

from tree_sitter import Node

from .folding import Value, _Env, _fold
from .syntax import _text


def _subscripts(node: Node | None) -> tuple[str | None, list[Node]]:
    """`fpDeriv[fp]` -> ("fpDeriv", [fp]); `chosen` -> ("chosen", [])."""
    indices: list[Node] = []
    while node is not None and node.type == "subscript_expression":
        args = node.child_by_field_name("indices")
        inner = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        if len(inner) != 1:
            return None, []
        indices.append(inner[0])
        node = node.child_by_field_name("argument")
    if node is None or node.type != "identifier":
        return None, []
    return _text(node), indices[::-1]


def _stores(function: Node, base: str, kernels: frozenset[str]) -> list[tuple[Node, str, list[Node]]]:
    """(the assignment, the kernel, its indices) of each `base[...] = kernel;` in `function`."""
    out = []
    stack = [function]
    while stack:
        node = stack.pop()
        if node.type == "assignment_expression" and _text(node.child_by_field_name("operator")) == "=":
            right = node.child_by_field_name("right")
            name, indices = _subscripts(node.child_by_field_name("left"))
            if name == base and right is not None and right.type == "identifier" and _text(right) in kernels:
                out.append((node, _text(right), indices))
        stack.extend(node.named_children)
    return out


def _case_bindings(node: Node, env: _Env) -> dict[str, Value] | None:
    """The names a `switch` case or an `if (x == c)` around `node` fixes (`case 0:` of
    `switch (dimension)`: dimension 0); None where a condition around it binds none (the store
    may or may not run: which kernel the pointer holds is then the run's)."""
    bound: dict[str, Value] = {}
    child, parent = node, node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type == "case_statement":
            switch = parent.parent.parent if parent.parent is not None else None
            value = _fold(parent.child_by_field_name("value"), env)
            clause = switch.child_by_field_name("condition") if switch is not None else None
            on = clause.named_children[-1] if clause is not None and clause.named_child_count else None
            if value is None or on is None or on.type != "identifier":
                return None
            bound.setdefault(_text(on), value)
        elif parent.type in ("if_statement", "conditional_expression"):
            clause = parent.child_by_field_name("condition")
            test = clause.named_children[-1] if clause is not None and clause.type == "condition_clause" else clause
            if test is None or test.type != "binary_expression" or \
                    _text(test.child_by_field_name("operator")) != "==" or \
                    child != parent.child_by_field_name("consequence"):
                return None
            left, right = test.child_by_field_name("left"), test.child_by_field_name("right")
            value = _fold(right, env)
            if left is None or left.type != "identifier" or value is None:
                return None
            bound.setdefault(_text(left), value)
        child, parent = parent, parent.parent
    return bound


def pointed_kernels(call: Node, function: Node, kernels: frozenset[str],
                    env_at) -> list[tuple[str, dict[str, Value]]]:
    """The kernels a launch through a pointer (`fpDeriv[fp]<<<...>>>`) in `function` runs, each with
    the names bound where it was stored: the pointer's index names (fp = 1 for `fpDeriv[1] = k`)
    and the switch case around the store. `env_at(node)` is the scope at a node. Empty for a launch
    of a kernel by name, or a pointer stored nowhere in `function` under conditions that bind."""
    base, indices = _subscripts(call.child_by_field_name("function"))
    if base is None or base in kernels:
        return []
    out: list[tuple[str, dict[str, Value]]] = []
    for store, kernel, stored_at in _stores(function, base, kernels):
        if len(stored_at) != len(indices):
            continue
        bound = _case_bindings(store, env_at(store))
        if bound is None:
            continue
        for mine, theirs in zip(indices, stored_at):
            value = _fold(theirs, env_at(store))
            if value is None:
                bound = None
                break
            if mine.type == "identifier":
                bound[_text(mine)] = value
            elif _fold(mine, env_at(call)) != value:
                bound = None
                break
        if bound is not None:
            out.append((kernel, bound))
    # two kernels stored under the same names (`p = a; ... p = b;`): which one a launch sees is order
    keys = [tuple(sorted(b.items())) for _, b in out]
    return [(k, b) for (k, b), key in zip(out, keys) if len({k2 for (k2, _), key2 in zip(out, keys) if key2 == key}) == 1]
