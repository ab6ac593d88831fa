"""Declarations: functions and their parameters and qualifiers, declarators, the file's constants and each
function's locals by block scope.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from tree_sitter import Node

from .folding import (Definitions, TypeDef, Value, _Env, _FileConstants, _FunctionLocals, _Local, _MAX_DEPTH, _fold,
                      _fold_local, _fold_text, _fold_value, _is_integral, _type_name, element_key)
from .records import Function, FunctionKind, LaunchBounds, Parameter
from .syntax import _Locator, _squash, _text
from .walk import _Collected, _base_pointer, assigning_statement


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


def _file_constants(found: _Collected, inherited: Sequence[Definitions] = ()) -> _FileConstants:
    """The file's constants, macros and helpers over those of the headers it includes
    (`inherited`, in include order): a name the file defines itself is the file's."""
    raw: dict[str, Callable[[_Env], Value | None]] = {}
    macros: dict[str, tuple[tuple[str, ...], str]] = {}
    helpers: dict[str, tuple[tuple[str, ...], Node] | None] = {}
    types: dict[str, TypeDef] = {}
    for r, m, h, t in (*inherited, _definitions(found)):
        raw.update(r)
        macros.update(m)
        helpers.update(h)
        types.update(t)
    return _FileConstants(raw, macros, helpers, types)


def _definitions(found: _Collected) -> Definitions:
    """What a file defines at file scope that folds: #defines, const/constexpr integers of any
    integer type, enumerators, function-like macros, and one-return helper functions."""
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
    helpers: dict[str, tuple[tuple[str, ...], Node] | None] = {}
    for node in found.functions:
        if (helper := _one_return(node)) is not None:
            name, params, returned = helper
            # an overloaded name is not one function: which one a call means is the compiler's choice
            helpers[name] = (params, returned) if name not in helpers else None
    return raw, macros, helpers, _types(found)


def _types(found: _Collected) -> dict[str, TypeDef]:
    """The file's named types that a launch's arithmetic reads through: typedefs and `using`
    aliases (`typedef Packed128<floatX> x128;`), and structs with their `static const`/`constexpr`
    integer members (llm.c's `static constexpr const int size = sizeof(int4) / sizeof(ElementType);`)."""
    out: dict[str, TypeDef] = {}
    for node in found.types:
        if node.type == "type_definition":
            target = node.child_by_field_name("type")
            for declarator in node.children_by_field_name("declarator"):
                if target is not None and declarator.type == "type_identifier":
                    out[_text(declarator)] = ("alias", target)
        elif node.type == "alias_declaration":
            name, described = node.child_by_field_name("name"), node.child_by_field_name("type")
            target = described.child_by_field_name("type") if described is not None else None
            if name is not None and target is not None:
                out[_text(name)] = ("alias", target)
        else:
            name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
            if name is None or body is None or name.type != "type_identifier":
                continue
            members: dict[str, Node] = {}
            for field in body.named_children:
                if field.type != "field_declaration" or not _has_qualifier(field, {"static"}) or \
                        not _has_qualifier(field, {"const", "constexpr"}) or \
                        not _is_integral(_type_name(field.child_by_field_name("type"))):
                    continue
                declared, value = field.child_by_field_name("declarator"), field.child_by_field_name("default_value")
                if declared is not None and declared.type == "field_identifier" and value is not None:
                    members[_text(declared)] = value
            holder = node.parent
            template = holder.child_by_field_name("parameters") if holder is not None and \
                holder.type == "template_declaration" else None
            params = tuple(_text(p.child_by_field_name("name") or next(
                (c for c in p.named_children if c.type == "type_identifier"), p))
                for p in (template.named_children if template is not None else ()) if p.type != "comment")
            out[_text(name)] = ("struct", params, members)
    return out


def _one_return(node: Node) -> tuple[str, tuple[str, ...], Node] | None:
    """(name, parameter names, returned expression) of a function whose body is `return expr;`
    alone: `ceil_div(a, b) { return (a + b - 1) / b; }`."""
    body = node.child_by_field_name("body")
    statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if len(statements) != 1 or statements[0].type != "return_statement":
        return None
    returned = next((c for c in statements[0].named_children if c.type != "comment"), None)
    chain = _declarator_chain(node.child_by_field_name("declarator"))
    declarator = next((d for d in chain if d.type == "function_declarator"), None)
    name = declarator.child_by_field_name("declarator") if declarator is not None else None
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    if returned is None or name is None or name.type not in ("identifier", "template_function") or params is None:
        return None
    if name.type == "template_function":
        name = name.child_by_field_name("name")
    names = []
    for p in params.named_children:
        if p.type != "parameter_declaration":
            return None  # a default argument or `...`: the call does not give every value
        declared = _declared_name(_declarator_chain(p.child_by_field_name("declarator")))
        if declared is None:
            return None
        names.append(_text(declared))
    return _text(name), tuple(names), returned


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


def _template_parameters(node: Node) -> tuple[str | None, ...]:
    """The names of a function template's parameters, in order; None for a type parameter (`T`)."""
    return tuple(None if is_type else name for name, is_type in _template_signature(node))


def _function_scopes(found: _Collected, functions: list[Function | None],
                     constants: _Env, untaken: Sequence[tuple[int, int]] = ()) -> dict[int, _FunctionLocals]:
    """Each function's locals that fold, by the block each is declared in. A write inside one of
    the `untaken` byte ranges (branches a run without arguments skips: command_line.py) is none."""
    declared: dict[int, list[_Local]] = {}
    handed: dict[int, list[tuple[str, int]]] = {}
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
            elements = _array_elements(chain, declarator) if initialised and foldable else None
            if declarator.type == "function_declarator" and type_name == "dim3":
                # `dim3 block(TILE, TILE);` parses as a function declaration whose parameters
                # are the types TILE and TILE (C++'s "most vexing parse").
                value = declarator.child_by_field_name("parameters")
            local = _Local(_text(name), value, declarator.start_byte, scope, elements)
            writes = [(n, at) for n, at in found.writes.get(fn, []) if not any(a <= at < b for a, b in untaken)]
            if elements is not None:
                writes += handed[fn] if fn in handed else handed.setdefault(fn, _handed_arrays(found, fn))
            _writes_of(local, declaration, foldable and len(chain) == 1, writes, found.assignments.get(fn, []))
            declared.setdefault(fn, []).append(local)
    scopes = {
        fn: _FunctionLocals(constants, {p.name for p in function.params} | {
                                t for t in _template_parameters(found.functions[fn]) if t} if function is not None
                            else set(), declared.get(fn, []), {name for name, _ in found.writes.get(fn, [])})
        for fn, function in enumerate(functions)
    }
    for fn, function in enumerate(functions):
        if function is not None and function.params:
            scopes[fn].assigned = _assigned_parameters(found, fn, {p.name for p in function.params if p.name}, untaken)
    return scopes


def _assigned_parameters(found: _Collected, fn: int, params: set[str], untaken: Sequence[tuple[int, int]]
                         ) -> dict[str, tuple[int, Node, int]]:
    """The parameters function `fn` writes once, by a `name = expr;` statement of its own body
    (outside any loop or branch, so it runs once and before what follows it): (where the
    statement ends, expr, where it starts). llm.c's softmax_forward3 sets `block_size = 32;`
    before it launches, whatever its caller passed."""
    writes = [(n, at) for n, at in found.writes.get(fn, []) if n in params and not any(a <= at < b for a, b in untaken)]
    body = found.functions[fn].child_by_field_name("body")
    out = {}
    for name in {n for n, _ in writes}:
        mine = [at for n, at in writes if n == name]
        node = next((a for n, a in found.assignments.get(fn, []) if n == name and a.start_byte == mine[0]), None)
        statement = assigning_statement(node) if node is not None and len(mine) == 1 else None
        value = node.child_by_field_name("right") if node is not None else None
        if statement is not None and value is not None and body is not None and statement.parent is not None and \
                statement.parent.id == body.id:
            out[name] = (statement.end_byte, value, statement.start_byte)
    return out


def _array_elements(chain: list[Node], declarator: Node) -> tuple[Node, ...] | None:
    """The elements of `int block_sizes[] = {32, 64, 128};` (one dimension, a flat list)."""
    value = declarator.child_by_field_name("value")
    if len(chain) != 2 or chain[0].type != "array_declarator" or value is None or value.type != "initializer_list":
        return None
    elements = tuple(c for c in value.named_children if c.type != "comment")
    return None if any(c.type == "initializer_list" for c in elements) else elements


def _handed_arrays(found: _Collected, fn: int) -> list[tuple[str, int]]:
    """(name, where) of each name function `fn` hands to a call as a pointer (`fill(sizes, 6)`,
    `fill(sizes + 1, 5)`): the callee may write the array, so it counts as a write."""
    out = []
    for node, caller in found.calls:
        args = node.child_by_field_name("arguments") if caller == fn else None
        for a in args.named_children if args is not None else []:
            if (name := _base_pointer(a)) is not None and a.type != "subscript_expression":
                out.append((name, a.start_byte))
    return out


def _writes_of(local: _Local, declaration: Node, foldable: bool, writes: list[tuple[str, int]],
               assignments: list[tuple[str, Node]]) -> None:
    """Marks `local` written (not `fixed`) when something in its block writes its name, unless the
    one write is a later `name = expr;` statement of the declaration's own block, outside any
    loop or branch: that statement runs once, and the local holds `expr` after it. A write in
    an inner block that declares the name again counts too (the safe side)."""
    mine = [at for name, at in writes if name == local.name and local.start < at < local.scope_end]
    if not mine:
        return
    local.fixed = False
    if len(mine) != 1 or not foldable:
        return
    node = next((n for name, n in assignments if name == local.name and n.start_byte == mine[0]), None)
    statement = assigning_statement(node) if node is not None else None
    if statement is None or statement.parent is None or declaration.parent is None or \
            statement.parent.id != declaration.parent.id:
        return
    value = node.child_by_field_name("right")
    if value is not None:
        local.fixed = True
        local.assigned = (statement.end_byte, value, statement.start_byte)


def _calls_by_name(found: _Collected, functions: list[Function | None]) -> dict[str, list[tuple[Node, int | None]]]:
    """The file's calls by callee name (`run<128>(x, n)` under `run`), kernel launches aside. A
    call through a function-pointer parameter that every call of its function passes the same
    function is that function's call (Learn-CUDA-Programming's `performance_estimation(sgemm_gpu,
    ..., N, M, K)` calls `sgemm(A, B, C, N, M, K, ...)`: sgemm_gpu's call). A member call
    (`ls_operator[i].async_operation(...)`) is a call of the member function defined out of its
    class under that name (`Operator::async_operation`; Learn-CUDA-Programming's cuda_pipelining.cu)."""
    calls: dict[str, list[tuple[Node, int | None]]] = {}
    for node, fn in found.calls:
        callee = node.child_by_field_name("function")
        if callee is not None and callee.type == "template_function":
            callee = callee.child_by_field_name("name")
        if callee is not None and callee.type == "field_expression":
            member = callee.child_by_field_name("field")
            if member is not None:
                calls.setdefault("::" + _text(member), []).append((node, fn))
        if callee is not None and callee.type == "identifier" and not any(
                c.type == "kernel_call_syntax" for c in node.children):
            calls.setdefault(_text(callee), []).append((node, fn))
    names = [f.name if f is not None else None for f in functions]
    for name in {n for n in names if n is not None and "::" in n}:
        calls.setdefault(name, []).extend(calls.get("::" + name.rsplit("::", 1)[1], []))
    for index, function in enumerate(functions):
        if function is None or names.count(function.name) != 1:
            continue
        for param, at in _function_pointer_parameters(found.functions[index]).items():
            passed = {_text(args[at]) if args is not None and len(args) > at and args[at].type == "identifier" else None
                      for node, _ in calls.get(function.name, []) for args in [_call_arguments(node, "arguments")]}
            target = passed.pop() if len(passed) == 1 else None
            if target is not None and names.count(target) == 1:
                calls.setdefault(target, []).extend((n, c) for n, c in calls.get(param, []) if c == index)
    return calls


def _function_pointer_parameters(node: Node) -> dict[str, int]:
    """A function's parameters that are pointers to functions (`void (*sgemm)(const float*, int)`), by position."""
    chain = _declarator_chain(node.child_by_field_name("declarator"))
    declarator = next((d for d in chain if d.type == "function_declarator"), None)
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    out = {}
    for at, p in enumerate(c for c in (params.named_children if params is not None else []) if c.type != "comment"):
        inner = _declarator_chain(p.child_by_field_name("declarator"))
        name = _declared_name(inner)
        if name is not None and any(d.type == "function_declarator" for d in inner) and \
                any(d.type == "pointer_declarator" for d in inner):
            out[_text(name)] = at
    return out


def _call_arguments(node: Node, field: str) -> list[Node] | None:
    """A call's arguments (`field` "arguments"), or its explicit template arguments ("template")."""
    if field == "template":
        callee = node.child_by_field_name("function")
        args = callee.child_by_field_name("arguments") if callee is not None and \
            callee.type == "template_function" else None
        if args is None:
            return None  # deduced: what the compiler deduces is not read here
    else:
        args = node.child_by_field_name("arguments")
    return [c for c in args.named_children if c.type != "comment"] if args is not None else []


#: one instance of a function template as its calls name it: values of its non-type template
#: parameters and of the parameters its calls agree on, and the types its type parameters stand for
TemplateInstance = tuple[dict[str, Value], dict[str, str]]


def _template_instances(found: _Collected, functions: list[Function | None], scopes: dict[int, _FunctionLocals],
                        constants: _Env) -> dict[int, list[TemplateInstance]]:
    """Each function template's instances, one per distinct explicit template argument list its
    calls in the file name (`runTest<float>(argc, argv, 32)` and `runTest<int>(argc, argv, 64)`
    are two, with `len` 32 and 64): what the compiler instantiates, each folded on its own where
    the calls of all instances together disagree (`_parameter_values` then gives nothing)."""
    names = [f.name if f is not None else None for f in functions]
    calls = _calls_by_name(found, functions)
    out: dict[int, list[TemplateInstance]] = {}
    for index, function in enumerate(functions):
        signature = _template_signature(found.functions[index])
        if function is None or not signature or names.count(function.name) != 1:
            continue
        groups: dict[str, list[tuple[Node, int | None, list[Node]]]] = {}
        for node, caller in calls.get(function.name, []):
            targs = _call_arguments(node, "template")
            if targs is None or len(targs) != len(signature):
                continue  # deduced or defaulted arguments: not read here
            key = " ".join(" ".join(_text(t).split()) for t in targs)
            groups.setdefault(key, []).append((node, caller, targs))
        instances: list[TemplateInstance] = []
        for members in groups.values():
            values: dict[str, Value] = {}
            types: dict[str, str] = {}
            envs = [scopes[c].at(n.start_byte) if c is not None and c in scopes else constants for n, c, _ in members]
            node, _, targs = members[0]
            for (name, is_type), arg in zip(signature, targs):
                if name is None:
                    continue
                if is_type:
                    types[name] = " ".join(_text(arg).split())
                elif (v := _fold_value(arg, envs[0], 1)) is not None:
                    values[name] = v
            for i, p in enumerate(function.params):
                got = set()
                for (n, _, _), env in zip(members, envs):
                    args = _call_arguments(n, "arguments") or []
                    got.add(_fold_value(args[i], env, 1) if len(args) == len(function.params) else None)
                if p.name and len(got) == 1 and None not in got:
                    values[p.name] = got.pop()
            instances.append((values, types))
        if len(instances) > 1 or instances and instances[0][1]:
            out[index] = instances
    return out


def _deduced_arguments(found: _Collected, functions: list[Function | None], kernel: str, call: Node,
                       caller: int, types: dict[str, str]) -> tuple[str, ...] | None:
    """The template arguments a launch that names none (`offset<<<...>>>(d_a, 0)`) deduces, as
    the compiler deduces them from the arguments' declared types, in the instance of the
    launching template whose type parameters are `types` (`T *d_a;` in `runTest<T>` with T =
    float: `offset<float>` for `template <typename T> __global__ void offset(T* a, int s)`).
    Only a kernel of this file whose template parameters are all types, each deduced from a
    parameter written with it and an argument that is a local or parameter of the caller; else None."""
    index = next((i for i, f in enumerate(functions) if f is not None and f.name == kernel and f.is_kernel), None)
    signature = _template_signature(found.functions[index]) if index is not None else ()
    if index is None or not signature or not all(is_type and name for name, is_type in signature):
        return None
    args = _call_arguments(call, "arguments") or []
    declared = _declared_types(found, caller)
    caller_fn = functions[caller]
    if caller_fn is not None:
        declared.update({p.name: p.type_text for p in caller_fn.params if p.name})
    deduced: dict[str, str] = {}
    for param, arg in zip(functions[index].params, args):  # type: ignore[union-attr]
        pattern = _plain_type(param.type_text)
        names = [n for n, _ in signature if n and re.search(rf"\b{re.escape(n)}\b", pattern)]
        if not names or arg.type != "identifier" or _text(arg) not in declared:
            continue
        given = _plain_type(declared[_text(arg)])
        for name, text in types.items():
            given = re.sub(rf"\b{re.escape(name)}\b", lambda _, text=text: text, given)
        if (m := re.fullmatch(_type_pattern(pattern, names), given)) is not None:
            deduced.update(m.groupdict())
    if any(n not in deduced for n, _ in signature):
        return None
    return tuple(deduced[n] for n, _ in signature if n)


def _type_pattern(declared: str, names: list[str]) -> str:
    """A regular expression for the types a parameter declared `declared` (`T*`) accepts, with a
    group per template parameter in `names`; a second use of one must repeat the first's type."""
    seen: set[str] = set()

    def group(m: re.Match) -> str:
        name = m.group(0)
        if name in seen:
            return f"(?P={name})"
        seen.add(name)
        return f"(?P<{name}>[\\w: ]+?)"

    return re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b", group, re.escape(declared))


def _plain_type(text: str) -> str:
    """A declared type without qualifiers and spaces around `*`/`&`: `const T* __restrict__` is `T*`."""
    words = [w for w in text.replace("*", " * ").replace("&", " & ").split()
             if w not in ("const", "volatile", "__restrict__", "__restrict", "restrict")]
    return " ".join(words).replace(" *", "*").replace(" &", "&")


def _declared_types(found: _Collected, fn: int) -> dict[str, str]:
    """The type each local of function `fn` is declared with, pointers included (`T *d_a;`: `T*`)."""
    out: dict[str, str] = {}
    for declaration, owner in found.declarations:
        if owner != fn:
            continue
        base = _text(declaration.child_by_field_name("type"))
        for declarator in _declarators(declaration):
            target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
            chain = _declarator_chain(target)
            name = _declared_name(chain)
            if name is not None and not any(d.type in ("array_declarator", "function_declarator") for d in chain):
                out[_text(name)] = base + "*" * sum(d.type == "pointer_declarator" for d in chain)
    return out


def _template_signature(node: Node) -> tuple[tuple[str | None, bool], ...]:
    """(name, is a type parameter) of each parameter of a function template, in order."""
    parent = node.parent
    params = parent.child_by_field_name("parameters") if parent is not None and parent.type == "template_declaration" \
        else None
    out: list[tuple[str | None, bool]] = []
    for p in params.named_children if params is not None else []:
        if p.type in ("parameter_declaration", "optional_parameter_declaration"):
            declared = _declared_name(_declarator_chain(p.child_by_field_name("declarator")))
            out.append((_text(declared) if declared is not None else None, False))
        elif p.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
            name = p.child_by_field_name("name") or next((c for c in p.named_children if c.type == "type_identifier"),
                                                         None)
            out.append((_text(name) if name is not None else None, True))
        elif p.type != "comment":
            out.append((None, False))
    return tuple(out)


def _parameter_values(found: _Collected, functions: list[Function | None],
                      scopes: dict[int, _FunctionLocals], constants: _Env) -> None:
    """Lets each function's parameters fold from its calls: a parameter the function never writes
    (`_FunctionLocals.parameter_value` checks that), passed the same constant by every call of the
    file, has that value (`MatrixMultiply(argc, argv, block_size, ...)` from `main`, where
    `int block_size = 32;`, makes its `dim3 threads(block_size, block_size)` a 32 × 32 block). Overloaded names, calls through pointers and arguments that do
    not fold give nothing; a cycle of calls (recursion) gives nothing for the parameters on it."""
    names = [f.name if f is not None else None for f in functions]
    calls = _calls_by_name(found, functions)
    busy: set[tuple[int, str]] = set()
    given = _call_arguments

    def resolver(index: int, function: Function) -> Callable[[str], Value | None]:
        position = {p.name: ("arguments", i, len(function.params)) for i, p in enumerate(function.params) if p.name}
        template = _template_parameters(found.functions[index])
        # a template parameter takes the value every call names explicitly (`run<128>(x, n)`)
        position.update({t: ("template", i, len(template)) for i, t in enumerate(template) if t})
        done: dict[str, Value | None] = {}

        # another function of the same name (llm.c names a launcher after its kernel): a call
        # is this one's where its argument count is this one's alone
        by_arity = names.count(function.name) == 1 or _only_of_its_arity(found, functions, index)

        def value(name: str) -> Value | None:
            if name in done:
                return done[name]
            if name not in position or not by_arity or (index, name) in busy:
                return None
            field, at, count = position[name]
            busy.add((index, name))
            try:
                found_values: set[Value | None] = set()
                for node, caller in calls.get(function.name, []):
                    args = given(node, field)
                    if names.count(function.name) > 1 and len(given(node, "arguments") or []) != len(function.params):
                        continue  # a call of the other function
                    if args is None or len(args) != count:
                        return None  # default arguments or another overload: not this function's call
                    env = scopes[caller].at(node.start_byte) if caller is not None and caller in scopes else constants
                    found_values.add(_fold_value(args[at], env, 1))
                    if None in found_values or len(found_values) > 1:
                        return None
            finally:
                busy.discard((index, name))
            done[name] = found_values.pop() if found_values else None
            return done[name]

        return value

    for index, function in enumerate(functions):
        locals_ = scopes.get(index)
        if function is not None and locals_ is not None and (function.params or function.template_params):
            locals_.parameter = resolver(index, function)


def _only_of_its_arity(found: _Collected, functions: list[Function | None], index: int) -> bool:
    """Whether function `index` is the only one of its name that takes its number of arguments,
    and no function of the name takes defaults or `...`: C++ then calls it for exactly the calls
    with that many arguments (`gelu1(x, n, block)` is the launcher, `gelu1<<<g, b>>>(x, n)` the kernel)."""
    name = functions[index].name  # type: ignore[union-attr]
    same = [i for i, f in enumerate(functions) if f is not None and f.name == name]
    for i in same:
        declarator = next((d for d in _declarator_chain(found.functions[i].child_by_field_name("declarator"))
                           if d.type == "function_declarator"), None)
        params = declarator.child_by_field_name("parameters") if declarator is not None else None
        if params is None or any(p.type in ("optional_parameter_declaration", "variadic_parameter") or
                                 p.type == "..." for p in params.children):
            return False
    arity = len(functions[index].params)  # type: ignore[union-attr]
    return sum(len(functions[i].params) == arity for i in same) == 1  # type: ignore[union-attr]


def _assigned_globals(found: _Collected, functions: list[Function | None], scopes: dict[int, _FunctionLocals],
                      constants: _FileConstants) -> None:
    """File-scope integers and dim3s, and elements of file-scope arrays of them, that host code
    assigns exactly once, each by a `name = expr;` or `name[0][1] = expr;` statement with indices
    that fold, and writes nowhere else: they hold `expr` (folded where the statement is) from there
    on (code-samples' finite-difference.cu sets `dim3 grid[3][2], block[3][2]` element by element
    in setDerivativeParameters() before any launch reads them). A name handed to a call (which may
    write it), declared `extern` (another file may write it) or written in device code gives nothing."""
    declared: set[str] = set()
    for declaration, fn in found.declarations:
        if fn is not None or _has_qualifier(declaration, {"const", "constexpr", "extern"}):
            continue
        type_name = _type_name(declaration.child_by_field_name("type"))
        if not (_is_integral(type_name) or type_name == "dim3"):
            continue
        for declarator in _declarators(declaration):
            if declarator.type == "init_declarator":
                continue  # it holds its initialiser until the assignment: which one a launch sees is order
            chain = _declarator_chain(declarator)
            name = _declared_name(chain)
            if name is not None and all(d.type in ("array_declarator", "identifier") for d in chain):
                declared.add(_text(name))
    if not declared:
        return
    written: dict[str, list[tuple[int | None, int]]] = {}
    for fn, writes in found.writes.items():
        for name, at in writes:
            if name in declared and not (fn is not None and fn in scopes and scopes[fn].visible(name, at)):
                written.setdefault(name, []).append((fn, at))
    for node, fn in found.calls:
        args = node.child_by_field_name("arguments")
        for a in args.named_children if args is not None else []:
            if a.type == "identifier" and _text(a) in declared and not (
                    fn is not None and fn in scopes and scopes[fn].visible(_text(a), a.start_byte)):
                written.setdefault(_text(a), []).append((None, -1))  # handed on: anything may write it
    statements = {node.start_byte: (node, fn) for node, fn in found.statements if node.type == "expression_statement"}
    for name, writes in written.items():
        values: dict[str, Callable[[_Env], Value | None]] = {}
        for fn, at in writes:
            function = functions[fn] if fn is not None else None
            statement = statements.get(at, (None, None))[0]
            assignment = statement.named_children[0] if statement is not None and statement.named_child_count else None
            if function is None or function.is_device_code or assignment is None or \
                    assignment.type != "assignment_expression" or assignment.start_byte != at or \
                    _text(assignment.child_by_field_name("operator")) != "=":
                break
            scope = scopes[fn].at(assignment.start_byte)  # type: ignore[index]
            target = assignment.child_by_field_name("left")
            key = _text(target) if target is not None and target.type == "identifier" else \
                element_key(target, scope) if target is not None and target.type == "subscript_expression" else None
            value = assignment.child_by_field_name("right")
            if key is None or key.partition("[")[0] != name or key in values or value is None:
                break
            values[key] = lambda env, value=value, scope=scope: _fold_local(value, scope)
        else:
            for key, thunk in values.items():
                constants.assign(key, thunk)
