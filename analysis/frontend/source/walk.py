"""One walk over the syntax tree that collects what every other part reads: functions, loops, calls,
statements, declarations, comments, the names each function writes and the pointers it stores through.
"""

from __future__ import annotations

from tree_sitter import Node

from .records import LoopKind
from .syntax import _text


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
        # file-scope typedefs, `using` aliases and struct/class definitions (their static constants)
        self.types: list[Node] = []
        self.comments: list[tuple[Node, int | None]] = []
        # (name, start_byte) of every write to a plain variable, per function: an assignment,
        # ++/--, or `&x` (which lets a callee write it, e.g. scanf or cudaMemcpyFromSymbol).
        self.writes: dict[int | None, list[tuple[str, int]]] = {}
        # `x = expr;` statements of a plain variable, per function: a local assigned once after its
        # declaration holds `expr` from there on (`_FunctionLocals`)
        self.assignments: dict[int | None, list[tuple[str, Node]]] = {}
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


def assigning_statement(node: Node) -> Node | None:
    """The `x = expr;` statement a plain assignment is, or is the right side of (`N = M = K = 2048;`
    assigns M and K too); None for an assignment inside a larger expression."""
    while node.parent is not None and node.parent.type == "assignment_expression" and \
            node.parent.child_by_field_name("right") == node and \
            _text(node.parent.child_by_field_name("operator")) == "=":
        node = node.parent
    return node.parent if node.parent is not None and node.parent.type == "expression_statement" else None


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
        elif fn is None and (t in ("type_definition", "alias_declaration") or
                             t in ("struct_specifier", "class_specifier") and node.child_by_field_name("body") is not None):
            out.types.append(node)
        if t in ("binary_expression", "assignment_expression") and fn is not None and \
                _text(node.child_by_field_name("operator")) in ("/", "%", "/=", "%="):
            out.divisions.append((node, fn))
        if t in ("assignment_expression", "update_expression"):
            field = "left" if t == "assignment_expression" else "argument"
            target = node.child_by_field_name(field)
            name = _written_name(target)
            if name:
                out.writes.setdefault(fn, []).append((name, node.start_byte))
                if t == "assignment_expression" and target is not None and target.type == "identifier" and \
                        _text(node.child_by_field_name("operator")) == "=" and assigning_statement(node) is not None:
                    out.assignments.setdefault(fn, []).append((name, node))
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
