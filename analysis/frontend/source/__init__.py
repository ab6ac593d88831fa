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
import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache

from tree_sitter import Node

from ..conditional import Macros, Passes, resolved
from ..treesitter import parser as _parser
from .declarations import _assigned_globals, _deduced_arguments, _definitions, _file_constants, _template_instances, _function, _function_scopes, _has_qualifier, _parameter_values
from .folding import Definitions, _Env, _fold
from .loops import _loop, _pragma_text
from .records import (  # the records, for every stage that reads the source model
    Annotation,
    AnnotationValue,
    Branch,
    Call,
    Constant,
    Division,
    FloatLiteral,
    Function,
    FunctionKind,
    Include,
    IncludedSource,
    LaunchBounds,
    LaunchConfigArg,
    LaunchSite,
    Loop,
    LoopKind,
    Parameter,
    Position,
    Pragma,
    SharedDecl,
    SourceModel,
    Span,
    UnrollPragma,
)
from .command_line import command_line_names, default_parameter, first_values, untaken, without_arguments
from .pointers import pointed_kernels
from .preprocessor import _annotation, _include
from .statements import _branch, _call, _float_literal, _index_only, _is_cast, _launch, _power_of_two, _shared_decls
from .syntax import _Locator, _squash, _text
from .walk import _LOOP_KINDS, _Collected, _collect

_log = logging.getLogger(__name__)

__all__ = ["parse_source",
           "Annotation",
           "AnnotationValue",
           "Branch",
           "Call",
           "Constant",
           "Division",
           "FloatLiteral",
           "Function",
           "FunctionKind",
           "Include",
           "IncludedSource",
           "LaunchBounds",
           "LaunchConfigArg",
           "LaunchSite",
           "Loop",
           "LoopKind",
           "Parameter",
           "Position",
           "Pragma",
           "SharedDecl",
           "SourceModel",
           "Span",
           "UnrollPragma",
           ]


def parse_source(text: str, passes: Passes | None = None, headers: Sequence[str] = ()) -> SourceModel:
    """The source model of one `.cu` file. Pure, and never raises: bad input gives an empty model.

    With `passes` (the compile's predefined macros, analysis/frontend/conditional.py), conditional blocks are
    resolved as nvcc resolves them: kernels, loops and constants as its device pass reads the file,
    launch sites as its host pass does. Without, every branch of every conditional is read.
    `headers` are the texts of the project headers the file includes (found with the compile's
    include paths, `compile.local_headers`): their #defines, constants, macros and one-return helpers
    fold the file's expressions as the compiler sees them (`BLOCK_SIZE` from a `.h`)."""
    try:
        if passes is None:
            inherited = tuple(_header_definitions(_header_read(h, "")) for h in headers)
            return _with_defaults(_parse(text, inherited), text, inherited)
        source = text.encode("utf-8", "surrogatepass")
        device, host = resolved(source, passes)
        device_headers = tuple(_header_read(h, passes.device.model_dump_json()) for h in headers)
        host_headers = tuple(_header_read(h, passes.host.model_dump_json()) for h in headers)
        model = _parse(device.decode("utf-8", "surrogatepass"), tuple(map(_header_definitions, device_headers)))
        host_text, host_inherited = host.decode("utf-8", "surrogatepass"), tuple(map(_header_definitions, host_headers))
        if host != device or host_headers != device_headers:
            model = model.model_copy(update={"launch_sites": _parse(host_text, host_inherited).launch_sites})
        return _with_defaults(model, host_text, host_inherited)
    except Exception:  # noqa: BLE001 - an editor feeds us half-typed files; a bug here must not kill the server
        _log.exception("kernelscope: parsing the source structure failed")
        return SourceModel()


def _with_defaults(model: SourceModel, host: str, inherited: tuple[Definitions, ...]) -> SourceModel:
    """`model` with each launch whose configuration does not fold read as the program's first
    launch of it: first as the program runs without arguments (`without_arguments`, when its
    main() takes argc and argv; command_line.py), then, for what still does not fold, also with
    each counted loop at its first value (`first_iteration`: a block-size sweep `for (int t = 32;
    t <= 512; t *= 2)` launches 32 first). The file is read again only for launches that do not fold."""
    sites = model.launch_sites
    readings = ((True, False), (True, True)) if command_line_names(list(model.functions)) is not None else \
        ((False, True),)
    for no_arguments, first_iteration in readings:
        if all(s.launch_config() is not None for s in sites):
            break
        read = {(s.span.start_byte, s.kernel_text): s for s in
                _parse(host, inherited, no_arguments=no_arguments, first_iteration=first_iteration).launch_sites}

        def better(site: LaunchSite) -> LaunchSite:
            other = read.get((site.span.start_byte, site.kernel_text))
            changed = tuple(i for i, (a, b) in enumerate(zip(site.config, other.config)) if a.dims != b.dims) \
                if other is not None and site.launch_config() is None else ()
            if not changed:
                return site
            return other.model_copy(update={
                "without_arguments": tuple(sorted({*site.without_arguments, *changed})) if no_arguments else (),
                "first_iteration": changed if first_iteration else (), "live": site.live,
                # the launch's own formulas over an unknown block, for a hint that names another block
                "by_block": site.by_block})

        sites = tuple(map(better, sites))
    return model.model_copy(update={"launch_sites": sites}) if sites != model.launch_sites else model


# Every analysis of a project reads its headers again: the same text read by the same pass gives
# the same definitions.
@lru_cache(maxsize=256)
def _header_read(text: str, macros_json: str) -> bytes:
    """A header as the pass with these macros (JSON of `conditional.Macros`; "" for none) reads it."""
    source = text.encode("utf-8", "surrogatepass")
    if not macros_json:
        return source
    macros = Macros.model_validate_json(macros_json)
    return resolved(source, Passes(host=macros, device=macros))[1]


@lru_cache(maxsize=128)
def _header_definitions(source: bytes) -> Definitions:
    return _definitions(_collect(_parser().parse(source).root_node))


def _deduced_text(found, functions, site: LaunchSite, node: Node, fn: int, types: dict[str, str]) -> str:
    """`offset` as the instance its arguments deduce names it (`offset<float>`), when they do."""
    deduced = _deduced_arguments(found, functions, site.kernel, node, fn, types)
    return f"{site.kernel_text}<{', '.join(deduced)}>" if deduced else site.kernel_text


def _instance_text(kernel_text: str, values: dict, types: dict[str, str]) -> str:
    """`testKernel<T>` as the instance with T = float names it: `testKernel<float>`."""
    head, lt, args = kernel_text.partition("<")
    if not lt:
        return kernel_text
    for name, text in (*types.items(), *((n, str(v)) for n, v in values.items() if isinstance(v, int))):
        args = re.sub(rf"\b{re.escape(name)}\b", text, args)
    return head + lt + args


def _repeats(node: Node, trips: dict[int, tuple[int | None, str | None]], bound: dict | None = None) -> int:
    """How many times `node` runs per run of its function: the folded trip counts of the loops
    around it (`for (int i = 0; i < nStreams; ++i) kernel<<<...>>>` runs nStreams times), but
    once for a loop over a `bound` name (`fpDeriv[fp]` runs each kernel at one fp)."""
    count, parent = 1, node.parent
    while parent is not None and parent.type != "function_definition":
        trip, var = trips.get(parent.start_byte, (None, None)) if parent.type in _LOOP_KINDS else (None, None)
        trip = None if bound and var in bound else trip
        count *= trip if trip is not None and trip > 0 else 1
        parent = parent.parent
    return min(count, 1 << 32)


def _reached(node: Node, fn: int | None, env) -> bool:
    """False when an enclosing `if` condition folds to the branch that does not hold `node`."""
    child, parent = node, node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type == "if_statement":
            clause = parent.child_by_field_name("condition")
            value = clause.child_by_field_name("value") if clause is not None else None
            taken = _fold(value, env(fn, parent)) if value is not None else None
            if taken is not None:
                if child == parent.child_by_field_name("consequence") and not taken:
                    return False
                if child == parent.child_by_field_name("alternative") and taken:
                    return False
        child, parent = parent, parent.parent
    return True


# A file read again as its program's first launch (`_with_defaults`) is the same syntax tree: the
# walk over it is read-only, so each reading shares it.
@lru_cache(maxsize=8)
def _collected(source: bytes) -> _Collected:
    return _collect(_parser().parse(source).root_node)


def _parse(text: str, inherited: tuple[Definitions, ...] = (), no_arguments: bool = False,
           first_iteration: bool = False) -> SourceModel:
    """The source model; with `no_arguments`, read as the program runs without command-line
    arguments (command_line.py), with `first_iteration`, with each `for` loop's own variable at
    its first value (its update is not a write): only its launch sites are read then, the rest is
    the first reading's."""
    if not text:
        return SourceModel()
    source = text.encode("utf-8", "surrogatepass")
    loc = _Locator(source, text.isascii())
    found = _collected(source)
    constants = _file_constants(found, inherited)

    functions = [f if f is None or not found.stores.get(i) else
                 f.model_copy(update={"stores": tuple(dict.fromkeys(found.stores[i]))})
                 for i, f in enumerate(_function(node, loc, constants) for node in found.functions)]
    names = [f.name if f is not None else None for f in functions]
    device = [f is not None and f.is_device_code for f in functions]
    command_line = command_line_names(functions) if no_arguments else None
    skipped: tuple[tuple[int, int], ...] = ()
    if command_line is not None:
        constants.read_without_arguments(command_line, {
            names[i]: at for i, node in enumerate(found.functions)  # type: ignore[misc]
            if names[i] is not None and names.count(names[i]) == 1 and (at := default_parameter(node)) is not None},
            without_arguments)
        skipped = untaken(found, command_line, constants)
    if first_iteration:
        skipped += first_values(found)
    scopes = _function_scopes(found, functions, constants, skipped)
    _parameter_values(found, functions, scopes, constants)
    _assigned_globals(found, functions, scopes, constants)

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
    reading = no_arguments or first_iteration  # another reading of a file already modeled: launches only
    literals = () if reading else tuple(
        lit for node, fn in found.numbers if (lit := _float_literal(node, loc, name(fn))) is not None
    )

    calls: list[Call] = []
    launches: list[LaunchSite] = []
    trips = {raw.node.start_byte: (loop.trip_count, loop.induction_var) for raw, loop in zip(found.loops, loops)}
    instances = _template_instances(found, functions, scopes, constants) if found.functions else {}
    kernel_names = frozenset(f.name for f in functions if f is not None and f.is_kernel)
    for node, fn in found.calls:
        syntax = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        if syntax is not None:
            launch = _launch(node, syntax, loc, name(fn), env(fn, node))
            if launch is not None:
                where = {"live": _reached(node, fn, env), "repeats": _repeats(node, trips)}
                variants = tuple(
                    v.model_copy(update={**where, "kernel_text": _instance_text(v.kernel_text, values, types) if "<" in
                                         v.kernel_text else _deduced_text(found, functions, v, node, fn, types)})
                    for values, types in instances.get(fn, []) if fn is not None and fn in scopes
                    if (v := _launch(node, syntax, loc, name(fn),
                                     scopes[fn].instance(values, types).at(node.start_byte))) is not None)
                pointed = pointed_kernels(node, found.functions[fn], kernel_names,
                                          lambda at: env(fn, at)) if fn is not None and fn in scopes else []
                launches.extend(
                    _launch(node, syntax, loc, name(fn), scopes[fn].at(node.start_byte, bound)).model_copy(  # type: ignore[union-attr]
                        update={**where, "kernel": kernel, "kernel_text": kernel, "repeats": _repeats(node, trips, bound)})
                    for kernel, bound in pointed)
                if not pointed:
                    launches.append(launch.model_copy(update={**where, "variants": variants}))
        elif fn is not None and device[fn] and not _is_cast(node) and not reading:
            call = _call(node, loc, names[fn] or "")
            if call is not None:
                calls.append(call)
    if reading:
        return SourceModel(launch_sites=tuple(launches))

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
