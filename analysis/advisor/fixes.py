"""Mechanical fixes: applying an `Advice`'s edits, and building the edits the optimizers leave out.

The optimizers attach a `Fix` where the remedy is one token (`2.0` -> `2.0f`, `sqrt` -> `sqrtf`,
`__noinline__` -> `__forceinline__`, `#pragma unroll N`, `const __restrict__`,
`__launch_bounds__`). Three remedies need more of the syntax tree than an optimizer's match
has, and are built here from the tree-sitter source model and the text:

- a new block size at a launch site, with the grid recomputed for the same total threads
  (the emulator's what-if keeps total threads too, SAAKE §5);
- hoisting a load above independent statements of its loop body (GPA's code reordering);
- a shared-memory tiling template for a global access every thread along x re-reads
  (Starlight Table 1), as an LSP snippet.

Every function here is pure: (advice, source model, text) -> Fix | None. None means "no edit
that is provably safe"; the advice is then shown as guidance. Whether an edit compiles and
helps is `verify.py`'s job, which applies it to a shadow copy with `apply_edits`.

Positions follow `advice.SourceEdit`: lines 1-based, columns 0-based Python `str` indices.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence

from tree_sitter import Node

from ..frontend.kernel_names import base_name
from ..frontend.source import Function, LaunchSite, Loop, SourceModel, parse_source
from ..frontend.treesitter import parser as _parser
from .advice import Advice, Fix, SourceEdit

# ---------------------------------------------------------------------------- applying edits


class EditError(ValueError):
    """An edit that does not fit the text (stale positions) or overlaps another edit."""


def _line_starts(text: str) -> list[int]:
    # Only "\n" ends a line: tree-sitter rows (and so every SourceEdit) count that way, unlike
    # str.splitlines, which also splits on \x0b, \x0c, \u2028, ...
    starts = [0]
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _offset(text: str, starts: list[int], line: int, col: int) -> int:
    if not 1 <= line <= len(starts):
        raise EditError(f"line {line} is outside the text ({len(starts)} lines)")
    begin = starts[line - 1]
    end = starts[line] - 1 if line < len(starts) else len(text)  # the "\n" itself is not a column
    if text[begin:end].endswith("\r"):
        end -= 1
    if not 0 <= col <= end - begin:
        raise EditError(f"column {col} is outside line {line} ({end - begin} characters)")
    return begin + col


def apply_edits(text: str, edits: Sequence[SourceEdit]) -> str:
    """`text` with every edit applied, back to front so earlier positions stay valid.

    Insertions at one position land in the order given. Overlapping edits raise EditError:
    their result would depend on the order, and no fix means that."""
    starts = _line_starts(text)
    spans = []
    for n, e in enumerate(edits):
        a, b = _offset(text, starts, e.line, e.col), _offset(text, starts, e.end_line, e.end_col)
        if b < a:
            raise EditError(f"edit {n} ends before it starts")
        spans.append((a, b, n, e.new_text))
    ordered = sorted(spans, key=lambda s: (s[0], s[1], s[2]))
    for (a1, b1, n1, _), (a2, b2, n2, _) in zip(ordered, ordered[1:]):
        if a2 < b1:  # touching is fine: an insertion at either end of a replacement
            raise EditError(f"edits {n1} and {n2} overlap")
    out = text
    for a, b, _, new in sorted(spans, key=lambda s: (s[0], s[2]), reverse=True):
        out = out[:a] + new + out[b:]
    return out


# ---------------------------------------------------------------------------- syntax helpers


class _Text:
    """The text with its UTF-8 bytes, to turn tree-sitter (row, byte column) points into columns."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.raw = [ln.encode("utf-8", "surrogatepass") for ln in self.lines]
        self.root = _parser().parse(text.encode("utf-8", "surrogatepass")).root_node

    def point(self, point: tuple[int, int]) -> tuple[int, int]:
        row, byte_col = point
        return row + 1, len(self.raw[row][:byte_col].decode("utf-8", "replace")) if row < len(self.raw) else byte_col

    def start(self, node: Node) -> tuple[int, int]:
        return self.point(node.start_point)

    def end(self, node: Node) -> tuple[int, int]:
        return self.point(node.end_point)

    def replace(self, node: Node, new_text: str) -> SourceEdit:
        (l1, c1), (l2, c2) = self.start(node), self.end(node)
        return SourceEdit(line=l1, col=c1, end_line=l2, end_col=c2, new_text=new_text)

    def line(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def indent(self, n: int) -> str:
        s = self.line(n)
        return s[: len(s) - len(s.lstrip())]


def _txt(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _walk(node: Node) -> Iterable[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _within(root: Node, start_byte: int, end_byte: int) -> Iterable[Node]:
    for n in _walk(root):
        if n.start_byte >= start_byte and n.end_byte <= end_byte:
            yield n


# ---------------------------------------------------------------------------- one-token fixes

#: CUDA's fast intrinsics (CUDA C++ Programming Guide, "Intrinsic Functions"): reduced accuracy,
#: one SFU instruction or a few. sqrt has no faster intrinsic than sqrtf under -ftz.
FAST_INTRINSICS = {"powf": "__powf", "expf": "__expf", "exp10f": "__exp10f", "logf": "__logf", "log2f": "__log2f",
                   "log10f": "__log10f", "sinf": "__sinf", "cosf": "__cosf", "tanf": "__tanf"}


def fast_math_variant(fix: Fix) -> Fix:
    """The float-math edits of a fix with intrinsics (`__powf`, `__expf`) where one exists: the user opted
    into fast math. Any fix's: one fix may make a literal float and call the float function (one FP64 chain)."""
    edits = tuple(e.model_copy(update={"new_text": FAST_INTRINSICS.get(e.new_text, e.new_text)}) for e in fix.edits)
    if edits == fix.edits:
        return fix
    names = ", ".join(f"`{e.new_text}`" for e in edits)
    return fix.model_copy(update={"edits": edits, "description": f"call the fast intrinsic {names} (fast math)"})


def unroll_factor(trip_count: int | None) -> int | None:
    """N for `#pragma unroll N`: the whole loop when short, else a factor that divides the trip count.

    A divisor leaves ptxas no remainder loop; 4 is the default when the trip count is unknown
    (enough independent loads to cover global latency without a register blow-up)."""
    if trip_count is None:
        return 4
    if trip_count <= 1:
        return None
    if trip_count <= 16:
        return trip_count
    return next((f for f in (8, 4, 2) if trip_count % f == 0), 4)


def pragma_unroll_fix(loop: Loop, text: str, factor: int | None = None) -> Fix | None:
    """`#pragma unroll N` before `loop`, or its existing pragma changed to N."""
    n = factor if factor is not None else unroll_factor(loop.trip_count)
    if n is None:
        return None
    t = _Text(text)
    if loop.unroll is not None:
        line = t.line(loop.unroll.line)
        col = line.find("#pragma")
        if col < 0:
            return None
        return Fix(kind="pragma_unroll", description=f"change the pragma at line {loop.unroll.line} to `#pragma unroll {n}`",
                   edits=(SourceEdit(line=loop.unroll.line, col=col, end_line=loop.unroll.line,
                                     end_col=len(line.rstrip()), new_text=f"#pragma unroll {n}"),))
    line, col = loop.span.start.line, loop.span.start.col
    indent = t.indent(line)
    if col == len(indent):  # the loop starts its line: the pragma goes on a line of its own above
        edit = SourceEdit(line=line, col=0, end_line=line, end_col=0, new_text=f"{indent}#pragma unroll {n}\n")
    else:  # `} for (...)` or `else for`: a directive must start a line, so break it
        edit = SourceEdit(line=line, col=col, end_line=line, end_col=col, new_text=f"\n{indent}#pragma unroll {n}\n{indent}")
    return Fix(kind="pragma_unroll", description=f"insert `#pragma unroll {n}` before the loop at line {loop.header_line}",
               edits=(edit,))


def forceinline_fix(function: Function, text: str) -> Fix | None:
    """`__forceinline__` on a device function: replacing `__noinline__`, else before its first qualifier."""
    if function.kind != "device":
        return None  # kernels cannot be inlined, and host functions are not ours to change
    if function.inlining == "forceinline":
        return None
    t = _Text(text)
    start = function.span.start.line
    for ln in range(start, function.name_span.start.line + 1):
        line = t.line(ln)
        m = re.search(r"\b__noinline__\b", line if ln != start else " " * function.span.start.col + line[function.span.start.col:])
        if m:
            return Fix(kind="forceinline", description=f"replace `__noinline__` with `__forceinline__` on {function.name}",
                       edits=(SourceEdit(line=ln, col=m.start(), end_line=ln, end_col=m.end(), new_text="__forceinline__"),))
    if function.template_params:
        return None  # `template <...>` comes first; the qualifier belongs after it, which the span does not say
    return Fix(kind="forceinline", description=f"add `__forceinline__` to {function.name}",
               edits=(SourceEdit(line=start, col=function.span.start.col, end_line=start, end_col=function.span.start.col,
                                 new_text="__forceinline__ "),))


def launch_bounds_fix(function: Function, threads: int, min_blocks: int | None = None) -> Fix | None:
    """`__launch_bounds__(threads[, minBlocks])` on a kernel, replacing the one written if any."""
    if function.kind != "kernel" or threads <= 0:
        return None
    args = f"{threads}, {min_blocks}" if min_blocks else f"{threads}"
    text = f"__launch_bounds__({args})"
    if function.launch_bounds is not None:
        sp = function.launch_bounds.span
        edit = SourceEdit(line=sp.start.line, col=sp.start.col, end_line=sp.end.line, end_col=sp.end.col, new_text=text)
    else:
        pos = function.launch_bounds_insert
        edit = SourceEdit(line=pos.line, col=pos.col, end_line=pos.line, end_col=pos.col, new_text=text + " ")
    return Fix(kind="launch_bounds", description=f"add `{text}` to {function.name}", edits=(edit,))


# ---------------------------------------------------------------------------- block size


def _launch_site(model: SourceModel, kernel: str) -> LaunchSite | None:
    sites = [s for s in model.launch_sites if s.kernel == base_name(kernel) and s.block is not None]
    return sites[0] if len(sites) == 1 else None  # several launches: which one the advice means is unknown


def _number_nodes(t: _Text, start_byte: int, end_byte: int) -> list[Node]:
    return [n for n in _within(t.root, start_byte, end_byte) if n.type == "number_literal"]


def _constant_definition(t: _Text, name: str, before_byte: int) -> Node | None:
    """The number literal that defines `name`: `#define NAME 256`, or `[const] int name = 256;` seen before the launch.

    Only a plain literal: `#define B (2 * W)` has no single token to change."""
    found: list[Node] = []
    for n in _walk(t.root):
        if n.type == "preproc_def" and _txt(n.child_by_field_name("name")) == name:
            value = n.child_by_field_name("value")
            if value is not None and re.fullmatch(r"\s*\(?\s*\d+[uUlL]*\s*\)?\s*", _txt(value)):
                found.append(value)
        elif n.type == "init_declarator" and _txt(n.child_by_field_name("declarator")) == name \
                and n.start_byte < before_byte:
            value = n.child_by_field_name("value")
            if value is not None and value.type == "number_literal":
                found.append(value)
    return found[-1] if len(found) == 1 or (found and all(f.type == "number_literal" for f in found)) else None


def block_size_fix(kernel: str, new_block: int, model: SourceModel, text: str) -> Fix | None:
    """Launch `kernel` with `new_block` threads per block and the grid recomputed for the same threads.

    `<<<(n + 255) / 256, 256>>>` -> `<<<(n + 127) / 128, 128>>>`; `<<<4, 128>>>` -> `<<<8, 64>>>`;
    `<<<blocks, BLOCK_SIZE>>>` with `#define BLOCK_SIZE 256` -> the constant changed. The edited
    text is re-parsed: the fix stands only if the new launch folds to `new_block` threads per
    block and covers the same threads (rounded up to a whole block), else None."""
    site = _launch_site(model, kernel)
    if site is None or site.block is None or site.grid is None:
        return None
    fn = model.kernel(base_name(kernel))
    if fn is not None and fn.launch_bounds is not None and fn.launch_bounds.max_threads is not None \
            and new_block > fn.launch_bounds.max_threads:
        return None  # the launch would fail: more threads than the kernel was compiled for
    if any(a.function == base_name(kernel) and (a.get("block") or a.get("grid")) for a in model.annotations):
        return None  # the annotation, not the launch site, tells the model the launch: both would need changing
    old_dims, grid_dims = site.block.dims, site.grid.dims
    if old_dims is None or old_dims[1:] != (1, 1) or grid_dims is None or new_block == old_dims[0]:
        return None  # dim3 blocks: which dimension to change is a design decision
    old = old_dims[0]
    t = _Text(text)
    edits: list[SourceEdit] = []
    block_text = site.block.text.strip()
    if re.fullmatch(r"\d+[uUlL]*", block_text):
        block_node = next(iter(_number_nodes(t, site.block.span.start_byte, site.block.span.end_byte)), None)
        if block_node is None:
            return None
        edits.append(t.replace(block_node, str(new_block)))
        grid_numbers = _number_nodes(t, site.grid.span.start_byte, site.grid.span.end_byte)
        related = {str(old): str(new_block), str(old - 1): str(new_block - 1)}
        hits = [n for n in grid_numbers if _txt(n) in related]
        if re.fullmatch(r"\d+[uUlL]*", site.grid.text.strip()) and grid_dims[1:] == (1, 1):
            # A literal grid is a block count, even when it happens to equal the block size.
            edits.append(t.replace(grid_numbers[0], str(math.ceil(grid_dims[0] * old / new_block))))
        elif hits:  # `(n + 255) / 256`: the block size and its round-up term
            edits.extend(t.replace(n, related[_txt(n)]) for n in hits)
        else:
            return None
        how = "block and grid"
    elif re.fullmatch(r"[A-Za-z_]\w*", block_text):
        value = _constant_definition(t, block_text, site.span.start_byte)
        if value is None:
            return None
        edits.append(t.replace(value, str(new_block)))
        how = f"`{block_text}`"
    else:
        return None
    new_text = apply_edits(text, edits)
    check = _launch_site(parse_source(new_text), kernel)
    total = grid_dims[0] * grid_dims[1] * grid_dims[2] * old
    if check is None or check.block is None or check.block.value != new_block or check.grid is None \
            or check.grid.value is None or not total <= check.grid.value * new_block < total + new_block:
        return None
    return Fix(kind="block_size", description=f"launch {site.kernel} with {new_block} threads per block ({how} updated)",
               edits=tuple(edits))


def _new_block_of(a: Advice) -> int | None:
    """The block size a block-size advice proposes: its fix's literal, else its what-if label."""
    if a.fix is not None and a.fix.kind == "block_size":
        for e in a.fix.edits:
            if e.new_text.strip().isdigit():
                return int(e.new_text)
    m = re.search(r"block (\d+)", a.estimate.formula)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------- hoisting a load

_LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
_STORE_TARGETS = {"subscript_expression", "pointer_expression", "field_expression"}


def _identifiers(node: Node) -> set[str]:
    return {_txt(n) for n in _walk(node) if n.type == "identifier"}


def _writes(node: Node) -> tuple[set[str], bool]:
    """(names assigned or declared in `node`, whether it stores through memory)."""
    names: set[str] = set()
    stores = False
    for n in _walk(node):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        elif n.type == "init_declarator":
            target = n.child_by_field_name("declarator")
        elif n.type == "declaration":
            names |= {_txt(d) for d in n.children_by_field_name("declarator") if d.type == "identifier"}
        if target is None:
            continue
        if target.type == "identifier":
            names.add(_txt(target))
        elif target.type in _STORE_TARGETS or target.type == "parenthesized_expression":
            stores = True
            names |= {_txt(x) for x in _walk(target) if x.type == "identifier" and x.parent is target}
        else:  # pointer/array declarators: the declared name
            names |= _identifiers(target)
    return names, stores


def _has(node: Node, types: set[str]) -> bool:
    return any(n.type in types for n in _walk(node))


def _alone_on_lines(t: _Text, node: Node) -> bool:
    (l1, c1), (l2, c2) = t.start(node), t.end(node)
    return t.line(l1)[:c1].strip() == "" and t.line(l2)[c2:].strip() == ""


def _hoistable(t: _Text, decl: Node) -> tuple[Node, Node] | None:
    """(declaration, earliest statement it can move above) when moving it is provably safe.

    Safe means the statements it jumps over neither write what its initializer reads, nor name
    the declared variable, nor store to memory (the store could alias the load), nor call
    anything (`__syncthreads()` orders memory; other calls may write it), nor branch."""
    parent = decl.parent
    if parent is None or parent.type != "compound_statement" or parent.parent is None \
            or parent.parent.type not in _LOOPS:
        return None
    inits = [d for d in decl.children_by_field_name("declarator") if d.type == "init_declarator"]
    if len(inits) != 1 or len(decl.children_by_field_name("declarator")) != 1:
        return None
    value = inits[0].child_by_field_name("value")
    if value is None or not _has(value, {"subscript_expression", "pointer_expression"}) \
            or _has(value, {"call_expression", "assignment_expression", "update_expression", "comma_expression"}):
        return None  # not a load, or one with side effects of its own
    if not _alone_on_lines(t, decl):
        return None
    declared, _ = _writes(decl)
    reads = _identifiers(value)
    target = None
    sibling = decl.prev_sibling
    while sibling is not None and sibling.type not in ("{",):
        if sibling.type not in ("expression_statement", "declaration") or not _alone_on_lines(t, sibling):
            break
        if _has(sibling, {"call_expression", "return_statement", "break_statement", "continue_statement",
                          "goto_statement", "comma_expression", "asm_statement", "gnu_asm_expression"}):
            break
        names, stores = _writes(sibling)
        if stores or names & reads or declared & (_identifiers(sibling) | names):
            break
        target = sibling
        sibling = sibling.prev_sibling
    return (decl, target) if target is not None else None


def hoist_load_fix(advice: Advice, model: SourceModel, text: str) -> Fix | None:
    """Move a load's declaration to the earliest safe point of its loop body (GPA code reordering).

    The candidates are the advice's blamed loads (hotspot def lines), then its lines."""
    t = _Text(text)
    wanted = [h.def_line for h in advice.hotspots if h.def_line] + list(advice.lines)
    by_row: dict[int, list[Node]] = {}
    for n in _walk(t.root):
        if n.type == "declaration":
            by_row.setdefault(n.start_point[0] + 1, []).append(n)
    for line in dict.fromkeys(wanted):
        for decl in by_row.get(line, []):
            found = _hoistable(t, decl)
            if found is None:
                continue
            decl, target = found
            (d1, _), (d2, _) = t.start(decl), t.end(decl)
            (g1, _) = t.start(target)
            indent = t.indent(g1)
            moved = "\n".join(indent + t.line(ln).lstrip() if ln == d1 else t.line(ln) for ln in range(d1, d2 + 1))
            name = next(iter(_writes(decl)[0]), "the value")
            return Fix(kind="hoist_load",
                       description=f"load `{name}` at line {g1} instead of line {d1}, ahead of the independent work",
                       edits=(SourceEdit(line=g1, col=0, end_line=g1, end_col=0, new_text=moved + "\n"),
                              SourceEdit(line=d1, col=0, end_line=d2 + 1, end_col=0, new_text="")))
    return None


# ---------------------------------------------------------------------------- shared-memory tiling


def _thread_x_names(t: _Text, body: Node) -> set[str]:
    """Variables whose value derives from threadIdx.x: their accesses differ along x, so are not reused."""
    tainted: set[str] = set()
    decls = [n for n in _walk(body) if n.type == "init_declarator"]
    changed = True
    while changed:  # to a fixed point: `int col = ...threadIdx.x; int j = col + 1;`
        changed = False
        for d in decls:
            name = _txt(d.child_by_field_name("declarator"))
            value = _txt(d.child_by_field_name("value"))
            if name not in tainted and ("threadIdx.x" in value or _identifiers(d.child_by_field_name("value") or d) & tainted):
                tainted.add(name)
                changed = True
    return tainted


def _element_type(fn: Function | None, array: str) -> str:
    p = fn.param(array) if fn is not None else None
    if p is None:
        return "float"
    words = [w for w in re.split(r"[\s*&]+", p.type_text) if w and w not in ("const", "volatile", "__restrict__",
                                                                           "__restrict", "restrict")]
    return " ".join(words) or "float"


def _fresh(name: str, text: str) -> str:
    n, k = name, 2
    while re.search(rf"\b{re.escape(n)}\b", text):
        n, k = f"{name}{k}", k + 1
    return n


def shared_memory_tiling_fix(advice: Advice, model: SourceModel, text: str) -> Fix | None:
    """A snippet before the loop: the tile's size and `__shared__` array for the reused access, and the steps.

    The template compiles as inserted (its defaults declare an unused tile); filling it in — load,
    `__syncthreads()`, read the tile, `__syncthreads()` — is the programmer's, because the barrier
    needs every thread of the block to reach it, which the source alone cannot prove."""
    loop = model.loop_at(advice.lines[0]) if advice.lines else None
    if loop is None or loop.body is None:
        return None
    fn = model.function(loop.function) if loop.function else None
    t = _Text(text)
    body = next((n for n in _walk(t.root) if n.start_byte == loop.span.start_byte and n.type in _LOOPS), None)
    fbody = next((n for n in _walk(t.root) if fn is not None and fn.body is not None
                  and n.start_byte == fn.body.start_byte and n.type == "compound_statement"), None)
    if body is None:
        return None
    varying = _thread_x_names(t, fbody or body) | {"threadIdx"}
    access = next((n for n in _walk(body) if n.type == "subscript_expression"
                   and not (_identifiers(n) - {_txt(n.child_by_field_name("argument"))}) & varying
                   and (fn is None or fn.param(_txt(n.child_by_field_name("argument"))) is not None)), None)
    if access is None:
        return None
    array = _txt(access.child_by_field_name("argument"))
    elem = _element_type(fn, array)
    size, tile = _fresh("TILE_K", text), _fresh(f"tile_{array}", text)
    line = loop.span.start.line
    ind = t.indent(line)
    what = " ".join(_txt(access).split())
    snippet = (f"{ind}// kernelscope: `{what}` is read by every thread along x. Stage it in shared memory:\n"
               f"{ind}// each thread loads one element of the next ${{1:{size}}} into ${{3:{tile}}}, __syncthreads(),\n"
               f"{ind}// the loop reads ${{3:{tile}}} instead of {array}, __syncthreads() before the next tile.\n"
               f"{ind}// Every thread of the block must reach both barriers (no early return above).\n"
               f"{ind}constexpr int ${{1:{size}}} = ${{2:32}};\n"
               f"{ind}__shared__ {elem} ${{3:{tile}}}[${{1:{size}}}];\n")
    return Fix(kind="shared_memory_tiling", is_snippet=True,
               description=f"insert a shared-memory tile template for `{what}` before the loop at line {loop.header_line}",
               edits=(SourceEdit(line=line, col=0, end_line=line, end_col=0, new_text=snippet),))


def fast_math_fix(advice: Advice, model: SourceModel) -> Fix | None:
    """Float math calls on the advice's lines replaced by their intrinsics (`expf` -> `__expf`).

    Only calls already in single precision: an intrinsic takes floats, so a double `exp` would
    change type as well as accuracy (that is the float-math-function fix's job first)."""
    edits = tuple(SourceEdit(line=c.callee_span.start.line, col=c.callee_span.start.col, end_line=c.callee_span.end.line,
                             end_col=c.callee_span.end.col, new_text=FAST_INTRINSICS[c.callee])
                  for c in model.calls if c.callee in FAST_INTRINSICS and c.span.first_line in advice.lines)
    if not edits:
        return None
    names = ", ".join(sorted({f"`{e.new_text}`" for e in edits}))
    return Fix(kind="float_math_function", description=f"call the fast intrinsic{'s' if len(edits) > 1 else ''} {names}",
               edits=edits)


# ---------------------------------------------------------------------------- the fix of an advice


def fix_for(advice: Advice, model: SourceModel, text: str, *, fast_math: bool = False) -> Fix | None:
    """The edit a code action offers for `advice`: the optimizer's, completed or built here.

    - a block-size fix from an optimizer changes only the block; it is rebuilt with the grid;
    - code reordering gets `hoist_load`, shared-memory tiling its template, where safe;
    - with `fast_math` (the user's setting), float math functions become intrinsics where one
      exists, and the fast-math advice gets that edit on its lines."""
    if advice.file is not None:
        return None  # its lines are another file's (`Advice.file`)
    fix = advice.fix
    if (fix is not None and fix.kind == "block_size") or advice.optimizer == "thread_increase":
        new_block = _new_block_of(advice)
        fix = block_size_fix(advice.kernel_name, new_block, model, text) if new_block else None
    elif fix is None and advice.optimizer == "code_reordering":
        fix = hoist_load_fix(advice, model, text)
    elif fix is None and advice.optimizer == "shared_memory_tiling":
        fix = shared_memory_tiling_fix(advice, model, text)
    elif fix is None and advice.optimizer == "fast_math" and fast_math:
        fix = fast_math_fix(advice, model)
    if fix is not None and fast_math:
        fix = fast_math_variant(fix)
    return fix


def attach_fixes(advice: Iterable[Advice], text: str, *, fast_math: bool = False,
                 model: SourceModel | None = None) -> tuple[Advice, ...]:
    """Every advice with the fix `fix_for` gives it (None where no safe edit exists)."""
    model = model if model is not None else parse_source(text)
    out = []
    for a in advice:
        fix = fix_for(a, model, text, fast_math=fast_math)
        out.append(a if fix == a.fix else a.model_copy(update={"fix": fix}))
    return tuple(out)


def fix_digest(fix: Fix | None) -> str:
    """Identifies the exact edit: a verification only vouches for the edit it compiled."""
    return hashlib.sha256(fix.model_dump_json().encode()).hexdigest()[:16] if fix is not None else ""


_PLACEHOLDER = re.compile(r"\$\{\d+(?::([^${}]*))?\}|\$\{\d+\|([^|]*)\|\}|\$\d+")


def plain_text(snippet: str) -> str:
    """An LSP snippet as plain text: placeholders become their defaults (first choice), tab stops vanish.

    Verification compiles this text, and clients without snippet support receive it."""
    # Escaped characters (\$, \}, \\) are literal: hide them from the placeholder pattern first.
    escapes = {"\\\\": "\ue002", "\\$": "\ue000", "\\}": "\ue001"}
    out = snippet
    for esc, mark in escapes.items():
        out = out.replace(esc, mark)
    while True:  # innermost placeholders first, so nested ones resolve
        new = _PLACEHOLDER.sub(lambda m: m.group(1) if m.group(1) is not None
                               else (m.group(2).split(",")[0] if m.group(2) is not None else ""), out)
        if new == out:
            break
        out = new
    for esc, mark in escapes.items():
        out = out.replace(mark, esc[1])
    return out


def plain_edits(fix: Fix) -> tuple[SourceEdit, ...]:
    """The edits as they land in a file when no snippet engine fills them in."""
    if not fix.is_snippet:
        return fix.edits
    return tuple(e.model_copy(update={"new_text": plain_text(e.new_text)}) for e in fix.edits)
