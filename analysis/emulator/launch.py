"""Resolve what the emulator must know but the binary does not say: launch shape and trip counts.

Order of sources, each value recorded as an `Assumption` naming where it came from:
0. captured: what the program really launched, recorded by launch capture (analysis/capture/);
1. facts: a launch site whose <<<grid, block, smem>>> folds to constants, a loop whose bound folds;
2. hints: `AnalysisOptions.launch_hints[kernel]` (settings), then an annotation comment above
   the kernel, e.g. `// kernelscope: grid=4096 block=256 n=1<<24 trip=128`;
3. documented defaults (block 256, a grid of one element per thread when `n` is known, else
   8 blocks per SM; loops: `AnalysisOptions.default_trip_count`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..frontend.instructions import Instruction
from ..frontend.isa import call_is_jump
from ..frontend.kernel_names import base_name, instance_name, without_parameters
from ..frontend.source.folding import BUILTIN_TYPES
from ..frontend.source import Annotation, LaunchSite, SourceModel
from ..frontend.source import Loop as SourceLoop
from ..machine.arch import ConstantBank
from ..options import AnalysisOptions, LaunchHint, scalar_value
from ..profile import Assumption, LaunchConfig
from .lanes import immediate

DEFAULT_BLOCK = 256
DEFAULT_BLOCKS_PER_SM = 8


@dataclass(frozen=True)
class ResolvedLaunch:
    launch: LaunchConfig
    values: dict[str, int]  # named values (n, N, ...) from hints and annotations
    trip_hint: int | None
    assumptions: tuple[Assumption, ...]


def _dims(v: tuple[int, int, int] | int | None) -> tuple[int, int, int] | None:
    if v is None:
        return None
    if isinstance(v, int):
        return (v, 1, 1)
    return tuple(v)  # type: ignore[return-value]


def _annotation_dims(a: Annotation, key: str) -> tuple[int, int, int] | None:
    e = a.get(key)
    if e is None:
        return None
    if e.value is not None:
        return (e.value, 1, 1)
    parts = [p for p in re.split(r"[x×,()\s]+", e.text) if p]
    try:
        vals = [int(p, 0) for p in parts]
    except ValueError:
        return None
    return tuple((vals + [1, 1, 1])[:3]) if vals else None  # type: ignore[return-value]


def kernel_annotation(source: SourceModel | None, kernel_name: str) -> Annotation | None:
    if source is None:
        return None
    short = base_name(kernel_name)
    # the kernel's own file first: an annotation in the header that defines it counts too
    return next((a for a in source.unit_annotations if a.function == short), None)


def resolve_launch(kernel_name: str, source: SourceModel | None, options: AnalysisOptions,
                   sm_count: int) -> ResolvedLaunch:
    # a template instance's demangled name starts with its return type: `void scale<128>(...)`
    short = base_name(kernel_name)
    hint: LaunchHint | None = options.launch_hints.get(short) or options.launch_hints.get(kernel_name)
    ann = kernel_annotation(source, kernel_name)
    values: dict[str, int] = {}
    origin: dict[str, tuple[str, str]] = {}  # value name -> (Assumption source, detail)
    if source is not None:
        # the constants of the file that defines the kernel: its loop bounds are written with them
        home = source if source.kernel(short) is not None else next(
            (c.source for c in source.context if c.source.kernel(short) is not None), source)
        values.update({c.name: c.value for c in home.constants})
    if ann is not None:
        given = {e.key: e.value for e in ann.entries if e.value is not None}
        values.update(given)
        origin.update({k: ("annotation", "`// kernelscope:` annotation") for k in given})
    if hint is not None:
        values.update(hint.values)
        origin.update({k: ("settings", "launch_hints values") for k in hint.values})
    out: list[Assumption] = []

    fn = source.definition(short) if source is not None else None
    # a site in a function template stands for one site per instance the file's calls name
    # (`testKernel<T><<<...>>>` in `runTest<T>`: `testKernel<float>`'s and `testKernel<int>`'s)
    instance_sites = _launches_of_instance(
        kernel_name, tuple((path, v) for path, s in source.launches_of(short) for v in _instances_of(s)),
        values) if source is not None else ()
    # a site inside an `if` the file's constants decide against never runs (source/__init__.py `_reached`)
    located = tuple((path, s) for path, s in instance_sites if s.live)
    ruled_out = tuple((path, s) for path, s in instance_sites if not s.live)
    sites = [s for _, s in located]
    site, several = _site_values(located)
    # a value that is one of several launches of the kernel (a sweep's first, or one site of
    # several that do not agree) is not the launch a hint or an annotation names: they outrank it
    named = (hint is not None and any(v is not None for v in (hint.grid, hint.block, hint.dynamic_smem))) or \
        (ann is not None and any(ann.get(k) for k in ("grid", "block", "smem", "dynamic_smem")))
    aside = {k: site.pop(k) for k in several if k in site} if named else {}
    # kernel parameters take the values of the launch's arguments where those fold
    if fn is not None and sites:
        folded_args = sites[0].arg_values or (None,) * len(sites[0].args)
        for p, arg, fv in zip(fn.params, sites[0].args, folded_args):
            if p.name and p.name not in values and not p.is_pointer:
                v = fv if fv is not None else fold_bound(arg.strip(), values)
                if v is not None:
                    values[p.name] = v
                    origin[p.name] = ("launch_site", f"argument `{arg.strip()}` of the launch at {_where(*located[0])}")
    # what the program really launched (launch capture) outranks what the source folds to: this
    # instance's own launches; none when capture saw only other instances of the template
    cap, launched_siblings = _capture_of(kernel_name, short, options)
    cap_detail = (f"launch capture: the most frequent of {cap.configurations} configuration(s), "
                  f"{cap.launches} launch(es)") if cap is not None else ""
    if cap is not None and fn is not None:
        for p, raw in zip(fn.params, cap.args):
            v = scalar_value(raw, p.type_text) if p.name and not p.is_pointer else None
            if v is not None:
                values[p.name] = v
                origin[p.name] = ("captured", cap_detail)
    # every kernel argument the model reads as a constant (address analysis, loop bounds) is a
    # value it did not observe in the binary, so it is listed with where it came from
    if fn is not None:
        for p in fn.params:
            if p.name in values and p.name in origin and not p.is_pointer:
                src_kind, detail = origin[p.name]
                out.append(Assumption(name=p.name, value=str(values[p.name]), source=src_kind, detail=detail))

    shown = instance_name(kernel_name) or short  # `MatrixMulCUDA<32>`
    captured = {"block": cap.block, "grid": cap.grid, "dynamic_smem": cap.dynamic_smem} if cap is not None else {}
    if cap is not None:
        out.append(Assumption(name="launches", value=str(cap.launches), source="captured", detail=cap_detail))

    def pick(name: str, from_site, from_hint, from_ann, default, default_detail: str):
        if name in captured:
            out.append(Assumption(name=name, value=str(captured[name]), source="captured", detail=cap_detail))
            return captured[name]
        if from_site is not None:
            out.append(Assumption(name=name, value=str(from_site[0]), source="launch_site", detail=from_site[1]))
            return from_site[0]
        if from_hint is not None:
            out.append(Assumption(name=name, value=str(from_hint), source="settings"))
            return from_hint
        if from_ann is not None:
            out.append(Assumption(name=name, value=str(from_ann), source="annotation"))
            return from_ann
        out.append(Assumption(name=name, value=str(default), source="default", detail=default_detail))
        return default

    block = pick("block", site.get("block"), _dims(hint.block) if hint else None,
                 _annotation_dims(ann, "block") if ann else None, (DEFAULT_BLOCK, 1, 1),
                 unresolved(shown, located, "block", f"the default is {DEFAULT_BLOCK} threads", launched_siblings,
                            ruled_out, aside.get("block")))
    threads = block[0] * block[1] * block[2]
    n = values.get("n", values.get("N"))
    default_grid = (max(1, math.ceil(n / threads)), 1, 1) if n else (DEFAULT_BLOCKS_PER_SM * sm_count, 1, 1)
    basis = "the default is one thread per element of n" if n else \
        f"the default is {DEFAULT_BLOCKS_PER_SM} blocks per SM"
    # a grid the program computes from the block (`ceil_div(N * 32, block_size)`) is that formula's
    # value for the block the model uses, not a grid of its own, and so is its dynamic shared
    # memory (source/statements.py `_by_block`)
    by_block = next(((s, g, m) for _, s in located for b, g, m in s.by_block
                     if block[1:] == (1, 1) and b == block[0]), None)
    if by_block is not None and by_block[1] is not None:
        default_grid = by_block[1]
        basis = f"the grid is what the launch's own `{by_block[0].grid.text}` computes for a block of {block[0]} threads"
    grid = pick("grid", site.get("grid"), _dims(hint.grid) if hint else None,
                _annotation_dims(ann, "grid") if ann else None, default_grid,
                unresolved(shown, located, "grid", basis, launched_siblings, ruled_out, aside.get("grid")))
    smem_ann = None
    if ann is not None:
        smem_ann = ann.value("smem") if ann.get("smem") else ann.value("dynamic_smem")
    smem_default, smem_basis = 0, "the default is no dynamic shared memory"
    if by_block is not None and by_block[2] is not None:
        smem_default = by_block[2]
        smem_basis = (f"the dynamic shared memory is what the launch's own `{by_block[0].shared_mem.text}` computes "
                      f"for a block of {block[0]} threads")
    smem = pick("dynamic_smem", site.get("dynamic_smem"), hint.dynamic_smem if hint else None,
                smem_ann, smem_default, unresolved(shown, located, "shared_mem", smem_basis,
                                                   launched_siblings, ruled_out, aside.get("dynamic_smem")))
    trip_hint = hint.trip_count if hint and hint.trip_count else (ann.value("trip") if ann else None)
    return ResolvedLaunch(LaunchConfig(grid=grid, block=block, dynamic_smem=smem), values, trip_hint, tuple(out))


def _instances_of(site: LaunchSite) -> tuple[LaunchSite, ...]:
    """A site's variants, one per instance of the function template around it, each naming the
    kernel instance it launches (written, or deduced from the arguments' declared types:
    `offset<<<...>>>(d_a, 0)` with `T *d_a;` in `runTest<float>` is `offset<float>`); the site
    itself where a variant names no instance and the variants differ: another instance's launch
    must not be taken for one the analysis could not deduce."""
    if not site.variants:
        return (site,)
    if any(_template_args(v.kernel_text) is None for v in site.variants) and \
            len({v.launch_config() for v in site.variants}) > 1:
        return (site,)
    return site.variants


def _template_args(text: str) -> tuple[str, ...] | None:
    """`void scale<256, float>(float*)` or `scale<TILE, float>` -> ("256", "float"); None without."""
    head = without_parameters(text)
    if "<" not in head or ">" not in head:
        return None
    inner = head[head.index("<") + 1:head.rindex(">")]
    parts, depth, cur = [], 0, ""
    for ch in inner:  # top-level commas only: `<Pair<int, int>, 4>` has two arguments
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return tuple(" ".join(p.split()) for p in parts)


def _launches_of_instance(kernel_name: str, located, values: dict[str, int]):
    """The launch sites of this template instance: a site that names other template arguments
    (`MatrixMulCUDA<16><<<...>>>` for the instance `MatrixMulCUDA<32>`) launches another kernel,
    and taking its configuration would model this one with another's launch. A site without
    explicit arguments (deduced) may launch any instance; an argument that folds (a constant
    name) is compared by value."""
    mine = _template_args(kernel_name)
    if mine is None:
        return located

    def same(written: str, demangled: str) -> bool:
        """False only for two different values or two different named types: a name that is
        neither (`T`, `BLOCK` of the launching template) may stand for this instance's argument."""
        if written == demangled:
            return True
        a, b = fold_bound(written, values), fold_bound(demangled.rstrip("uUlL"), values)
        if a is not None and b is not None:
            return a == b
        return not (written in BUILTIN_TYPES and demangled in BUILTIN_TYPES)

    def launches_this(site: LaunchSite) -> bool:
        theirs = _template_args(site.kernel_text)
        return theirs is None or (len(theirs) == len(mine) and all(map(same, theirs, mine)))

    def exact(site: LaunchSite) -> bool:
        return _template_args(site.kernel_text) == mine

    # a site that names this very instance before one written with the launching template's parameter
    return tuple(sorted(((path, s) for path, s in located if launches_this(s)), key=lambda ps: not exact(ps[1])))


def _where(path: str | None, site: LaunchSite) -> str:
    return f"line {site.line}" if path is None else f"{Path(path).name}:{site.line}"


def _reading(site: LaunchSite, at: int) -> str:
    """How config value `at` (0 grid, 1 block, 2 smem) of a site folded only as the program's first
    launch was read (source/command_line.py)."""
    out = ""
    if at in site.without_arguments:
        out += (", as the program runs without command-line arguments (the defaults its source gives; other "
                "arguments launch otherwise)")
    if at in site.first_iteration:
        out += (", with each loop around it at its first value (the program sweeps this launch: this is its "
                "first configuration, which capture also keeps of equally frequent ones; a hint or an annotation "
                "outranks it)")
    return out


_FIELDS = ("grid", "block", "dynamic_smem")


def _field(s: LaunchSite, at: int) -> object:
    """Config value `at` (0 grid, 1 block, 2 dynamic shared memory) of a site, None where it does not fold."""
    if at == 2:
        return 0 if s.shared_mem is None else s.shared_mem.value
    arg = s.grid if at == 0 else s.block
    return arg.dims if arg is not None else None


def _site_values(located) -> tuple[dict[str, tuple[object, str]], frozenset[str]]:
    """The launch configuration the source states, each value with where it was read: of the
    sites whose grid, block and dynamic shared memory all fold, the configuration launched most
    often (each site counts its `repeats`, the folded trips of the loops around it: what capture
    calls the most frequent configuration), the first of equals; else each of them from the first
    site where it folds, so a block written as a constant is used even when the grid depends on a
    run-time size. And the fields whose value is one of several the program launches: read at a
    sweep's first value, or where another launch of the kernel does not fold it (Learn-CUDA-
    Programming's reduction: `<<<n_blocks, ...>>>`, then `<<<1, ...>>>` over the partial sums)."""
    folded = [(path, s, c) for path, s in located if (c := s.launch_config()) is not None]
    runs: dict[tuple, int] = {}
    for _, s, c in folded:
        key = (c.grid, c.block, c.dynamic_smem)
        runs[key] = runs.get(key, 0) + s.repeats
    whole = max(folded, key=lambda psc: runs[(psc[2].grid, psc[2].block, psc[2].dynamic_smem)], default=None)
    chosen: dict[str, tuple[object, str, LaunchSite, int]] = {}
    if whole is not None:
        path, s, c = whole
        at = f"the launch at {_where(path, s)}"
        chosen = {f: (v, at + _reading(s, i), s, i) for i, (f, v) in enumerate(zip(_FIELDS, (c.grid, c.block,
                                                                                            c.dynamic_smem)))}
    else:
        for path, s in located:
            for i, f in enumerate(_FIELDS):
                if f not in chosen and (v := _field(s, i)) is not None:
                    chosen[f] = (v, f"the launch at {_where(path, s)}" + _reading(s, i), s, i)
    out: dict[str, tuple[object, str]] = {}
    several = set()
    for f, (value, detail, s, i) in chosen.items():
        unknown = [(path, o) for path, o in located if _field(o, i) is None]
        if unknown:
            path, o = unknown[0]
            written = getattr(o, "shared_mem" if i == 2 else f)
            detail += (f" (one of the kernel's {len(located)} launches: the launch at {_where(path, o)}"
                       f"{f' (`{written.text}`)' if written is not None else ''} does not fold, and a hint or an "
                       "annotation outranks this one)")
        elif whole is None and len({str(_field(o, i)) for _, o in located}) > 1:
            detail += (f" (one of the kernel's {len(located)} launches, which differ; a hint or an annotation "
                       "outranks it)")
        if unknown or i in s.first_iteration or whole is None and len({str(_field(o, i)) for _, o in located}) > 1:
            several.add(f)
        out[f] = (value, detail)
    return out, frozenset(several)


#: How a user gives the real launch, in the order of precedence (docs/emulator.md).
GIVE_A_LAUNCH = ("give the real one with launch capture (`capture.enabled` in a trusted workspace, or "
                 "`kernelscope analyze --capture`), a `// kernelscope: grid=... block=...` annotation above the "
                 "kernel, or the `analysis.launchHints` setting")


def unresolved(kernel: str, located, field: str, basis: str, launched_siblings: tuple[str, ...] = (),
               ruled_out=(), aside: tuple[object, str] | None = None) -> str:
    """Why a launch value is a default, how to give the real one, and what the default is. `aside`:
    the site's value and where it was read, where it is one of several launches and a hint or an
    annotation names another (`_site_values`)."""
    if aside is not None:
        why = (f"{aside[0]}, from {aside[1].split(' (one of the kernel')[0]}, is one of the kernel's several "
               "launches and the hint or annotation names another")
    elif not located and ruled_out:
        at = ", ".join(_where(path, s) for path, s in ruled_out)
        why = (f"every launch of `{kernel}` ({at}) sits in a branch that the program's own constants rule out "
               f"(an `if` around it folds to the other branch)")
    elif not located:
        why = f"no launch of `{kernel}` in this file or the files of its translation unit"
    else:
        path, s = located[0]
        arg = getattr(s, field)
        shown = f" (`{arg.text}`)" if arg is not None else ""
        why = f"the launch at {_where(path, s)}{shown} does not fold to a constant"
    if launched_siblings:
        why += f"; launch capture saw the program launch {', '.join(launched_siblings)}, never this instance"
    return f"{why}; {GIVE_A_LAUNCH}; {basis}"


def _capture_of(kernel_name: str, short: str, options: AnalysisOptions):
    """(this kernel's captured launch, the instances of its template capture saw when it saw
    only others). An entry under the base name alone (given in settings) stands for every
    instance."""
    own = options.captured.get(kernel_name)
    if own is not None:
        return own, ()
    siblings = tuple(sorted(k for k in options.captured if "(" in k and base_name(k) == short))
    if siblings:
        return None, tuple(instance_name(k) for k in siblings)
    return options.captured.get(short), ()


def assumed_launch_note(kernel_name: str, assumptions) -> str | None:
    """The kernel's diagnostic when its grid or block is a default: what the model assumed, why,
    and how to give the real launch (issue #14 item 5)."""
    defaults = [a for a in assumptions if a.name in ("grid", "block") and a.source == "default"]
    if not defaults:
        return None
    shown = ", ".join(f"{a.name} {a.value}" for a in defaults)
    return f"[modeled] `{base_name(kernel_name)}` is modeled with an assumed launch ({shown}): {defaults[0].detail}"


# ---- trip counts ---------------------------------------------------------------------------

_EXPR = re.compile(r"^[0-9\s+\-*/%()<>]+$")


def fold_bound(text: str, values: dict[str, int]) -> int | None:
    """A loop bound like `N / TILE` or `n` over the known values (integer arithmetic), else None."""
    expr = re.sub(r"[A-Za-z_]\w*", lambda m: str(values[m.group(0)]) if m.group(0) in values else "?", text)
    expr = expr.replace("/", "//").replace("////", "//")
    if "?" in expr or not _EXPR.match(expr.replace("//", "/")):
        return None
    try:
        v = eval(expr, {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only (checked above)
    except Exception:  # noqa: BLE001
        return None
    return int(v) if isinstance(v, int) and v > 0 else None



# a constant-bank operand; where blockDim and gridDim sit is the arch's `constant_bank` (ptxas writes
# offset 0, blockDim.x before sm_100, as `c[0x0][RZ]`)
_CBANK = re.compile(r"c\[0x0\]\[(RZ|0x[0-9a-fA-F]+)\]")


def _imm(text: str) -> int:
    """A SASS immediate as the signed 32-bit value the ALU adds (`0xfffffff0` is -16)."""
    v = int(text, 0)
    return v - (1 << 32) if v >= 1 << 31 else v


#: a launch dimension a stride is made of: ("block" | "grid", 0/1/2 for x/y/z)
Dim = tuple[str, int]

#: opcodes that copy a value unchanged: a register or uniform move, a constant-bank load (`LDCU`: sm_100's
#: load into a uniform register)
_COPIES = ("MOV", "UMOV", "LDC", "ULDC", "LDCU")


def _dims_product(op: str, at: int, fn: list[Instruction], bank: ConstantBank,
                  depth: int = 4) -> tuple[Dim, ...] | None:
    """The launch dimensions operand `op` of instruction `at` is the product of, sorted (blockDim.x ·
    gridDim.x is (("block", 0), ("grid", 0))), else None: a constant-bank read of one, or a
    register whose nearest definition before `at` (else any, for a loop-carried value) copies one
    or multiplies two such values (`IMAD Rd, Ra, Rb, RZ`), followed through `depth` definitions.
    Anything else (a sum, an immediate factor, an argument) is no product of launch dimensions."""
    m = _CBANK.search(op)
    if m:
        dim = bank.dimension(0 if m.group(1) == "RZ" else int(m.group(1), 16))
        return (dim,) if dim is not None else None
    reg = op.lstrip("-|~").split(".")[0]
    if depth == 0 or not reg or reg in ("RZ", "URZ") or immediate(reg) is not None or op.startswith(("-", "~")):
        return None
    before = [x for x in fn if x.index < at and reg in x.defs]
    d = before[-1] if before else next((x for x in fn if reg in x.defs), None)
    if d is None or d.predicate or len(d.operands) < 2:
        return None
    srcs = [o.replace(".reuse", "") for o in d.operands[1:]]
    if d.opcode in _COPIES and len(srcs) == 1:
        src = srcs[0]
        if "64" in d.modifiers and reg != d.operands[0] and (c := _CBANK.search(src)):
            # the high half of a 64-bit load (`ULDC.64 UR4, c[0x0][0x0]`: UR5 is blockDim.y)
            off = 0 if c.group(1) == "RZ" else int(c.group(1), 16)
            src = f"c[0x0][{off + 4:#x}]"
        return _dims_product(src, d.index, fn, bank, depth - 1)
    if d.opcode == "IMAD" and "MOV" in d.modifiers and srcs[:2] == ["RZ", "RZ"]:
        return _dims_product(srcs[2], d.index, fn, bank, depth - 1)
    if d.opcode in ("IMAD", "UIMAD", "IMUL", "UIMUL") and not set(d.modifiers) - {"LO", "U32"} and (
            len(srcs) == 2 or srcs[2] in ("RZ", "URZ")):
        a, b = (_dims_product(o, d.index, fn, bank, depth - 1) for o in srcs[:2])
        return tuple(sorted(a + b)) if a is not None and b is not None else None
    return None


def _stride_name(dims: tuple[Dim, ...]) -> str:
    """A stride of launch dimensions as the source would write it: "blockDim.x * gridDim.x"."""
    return " * ".join(f"{'blockDim' if kind == 'block' else 'gridDim'}.{'xyz'[d]}" for kind, d in dims)


def _predicate_copy(x: Instruction) -> str | None:
    """The predicate a `PLOP3.LUT` copies unchanged, else None: the AND (LUT 0x80) of one
    un-negated predicate with true constants."""
    ops = list(x.operands)
    if len(ops) < 6 or ops[-2] != "0x80":
        return None
    srcs = [o for o in ops[2:-2] if o not in ("PT", "UPT")]
    return srcs[0] if len(srcs) == 1 and not srcs[0].startswith("!") else None


def _exit_compare(body: list[Instruction], latch: Instruction) -> tuple[Instruction, Instruction | None]:
    """The branch that decides whether the loop goes on, and the ISETP defining its predicate.

    The latch when it is predicated; an unconditional latch (`@P0 CALL.REL.NOINC exit; BRA
    head`) leaves through the last predicated branch of the body instead."""
    test = latch if latch.predicate else next(
        (x for x in reversed(body) if x.predicate and (x.opcode == "BRA" or call_is_jump(x))), latch)
    pred = (test.predicate or "").lstrip("!")
    if not pred:
        return test, None
    d = next((x for x in reversed(body) if pred in x.defs), None)
    if d is not None and d.opcode == "PLOP3" and (copied := _predicate_copy(d)) is not None:
        # sm_90 compares a uniform counter into UP0 and copies it for the branch:
        # `PLOP3.LUT P2, PT, PT, PT, UP0, 0x80, 0x0` is P2 = UP0
        pred = copied
    setp = next((x for x in reversed(body) if pred in x.defs and x.opcode in ("ISETP", "UISETP")), None)
    # A 64-bit compare (a `size_t` counter) is two ISETPs: the low words, then `.EX` on the high
    # words chained to the low result (`ISETP.GE.U32.AND.EX P0, PT, R17, UR5, PT, P0`). The high
    # word only moves by the low word's carry, so the induction variable is the low compare's.
    while setp is not None and "EX" in setp.modifiers and setp.operands:
        chained = setp.operands[-1].lstrip("!")
        low = next((x for x in reversed(body) if x.index < setp.index and chained in x.defs
                    and x.opcode in ("ISETP", "UISETP")), None)
        if low is None or low is setp:
            break
        setp = low
    return test, setp


_COMPARE = {"LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
            "GE": lambda a, b: a >= b, "NE": lambda a, b: a != b, "EQ": lambda a, b: a == b}
_MAX_COUNTED = 1 << 16  # a counted loop longer than this is left to the bound/hint path


def counted_trip(body: list[Instruction], latch: Instruction, fn: list[Instruction],
                 header: int, bank: ConstantBank) -> int | None:
    """Trips of a loop whose SASS counter runs from a constant to an immediate bound, else None.

    The counter's initial value is its last definition before the header (`MOV Rc, RZ`,
    `MOV Rc, 0x..`, `IMAD.MOV.U32 Rc, RZ, RZ, 0x..`); the loop goes on while the exit test
    (ISETP against an immediate, read before or after the update as the SASS orders them)
    says so. This is what the hardware runs, whatever unroll factor the source suggests.
    """
    test, setp = _exit_compare(body, latch)
    if setp is None or len(setp.operands) < 5 or setp.operands[-1] not in ("PT", "UPT"):
        return None
    op = next((m for m in setp.modifiers if m in _COMPARE), None)
    a, b = (o.replace(".reuse", "") for o in setp.operands[2:4])
    if op is None or immediate(b) is None:
        return None
    kind, k = loop_step(body, latch, fn, bank)
    upd = next((x for x in body if a in x.defs), None)
    if kind != "const" or not k or upd is None:
        return None
    init_def = next((x for x in reversed(fn) if x.index < header and a in x.defs), None)
    if init_def is None or init_def.opcode not in ("MOV", "IMAD", "UMOV", "CS2R") or init_def.predicate:
        return None
    src = init_def.operands[-1] if init_def.opcode != "CS2R" else "RZ"
    if init_def.opcode == "IMAD" and "MOV" not in init_def.modifiers:
        return None
    if src not in ("RZ", "URZ") and immediate(src) is None:
        return None
    init = 0 if src in ("RZ", "URZ") else _imm(src)
    unsigned = "U32" in setp.modifiers
    bound = int(b, 0) if unsigned else _imm(b)
    # the step's sign: the update's immediate (loop_step reports its magnitude)
    imm = next(o for o in upd.operands[1:] if immediate(o) is not None)
    step = _imm(imm) if upd.opcode != "IMAD" else _imm(upd.operands[-1])
    after = upd.index < setp.index
    goes_on = (test is latch) != (test.predicate or "").startswith("!")  # back edge taken / exit not taken
    for n in range(1, _MAX_COUNTED):
        v = init + (n if after else n - 1) * step
        if unsigned:
            v &= 0xFFFFFFFF
        if _COMPARE[op](v, bound) != goes_on:
            return n
    return None


def _loop_carried(reg: str, at: int, body: list[Instruction], depth: int = 8) -> bool:
    """Whether `reg` as read at instruction `at` depends on a value from the previous iteration:
    its definitions in the body, followed back through their operands, reach a register the body
    defines only at or after the reading instruction (it arrives over the back edge). A value
    rebuilt each iteration from loop-invariant registers and constants is not. Too deep a chain
    counts as carried (the induction variable's old reading)."""
    before = [x for x in body if x.index < at and reg in x.defs]
    if not before:
        return any(reg in x.defs for x in body)
    if depth == 0:
        return True
    d = before[-1]
    return any(_loop_carried(u, d.index, body, depth - 1) for u in d.uses)


_STEP_OPS = ("IADD3", "UIADD3", "IADD", "IMAD", "VIADD", "SHF")


def _update_of(reg: str, at: int, body: list[Instruction]) -> Instruction | None:
    """The instruction that advances counter `reg` as the compare at `at` reads it: its last
    definition in the body before the compare (else the body's last, an update after the test),
    through register copies (`IMAD.MOV.U32 R13, RZ, RZ, R0`); None when that is no add, multiply
    or shift."""
    for _ in range(4):
        defs = [x for x in body if reg in x.defs]
        before = [x for x in defs if x.index < at]
        d = before[-1] if before else (defs[-1] if defs else None)
        if d is None:
            return None
        src = d.operands[-1].replace(".reuse", "") if d.operands else ""
        copy = (d.opcode == "MOV" and len(d.operands) == 2) or (
            d.opcode == "IMAD" and "MOV" in d.modifiers and d.operands[1:3] == ("RZ", "RZ"))
        if not copy or not re.fullmatch(r"U?R\d+", src) or not any(src in x.defs for x in body):
            return d if d.opcode in _STEP_OPS else None
        reg, at = src, d.index
    return None


def loop_step(body: list[Instruction], latch: Instruction,
              fn: list[Instruction] | None = None, bank: ConstantBank | None = None) -> tuple[str, int | None]:
    """How the SASS loop's counter moves per iteration.

    ("const", k): added k (k = source step × unroll factor); ("mul", f): multiplied by f
    (`s *= 2`: `IMAD.SHL`/`SHF.L`); ("shr", f): divided by f (`s >>= 1`: `SHF.R`);
    ("dims", dims): added the product of the launch dimensions `dims` (`_dims_product`: (("block",
    0), ("grid", 0)) is a grid-stride loop over x, (("block", 1),) a block stride over y), only
    when the stride register is traced to them (`fn`, the whole function, defines it);
    ("?", None) otherwise: a stride held in a register is not taken for a grid stride. Without
    the arch's constant-bank layout (`bank`) no stride is known to be a launch dimension.
    """
    setp = _exit_compare(body, latch)[1]
    if setp is None:
        return "?", None
    scope = list(fn) if fn is not None else list(body)
    counters = [u for u in setp.uses if u.lstrip("U").startswith("R") and u not in ("RZ", "URZ")]
    for c in counters:
        if not _loop_carried(c, setp.index, body):
            # recomputed in every iteration from loop-invariant values, e.g. a `size_t` bound
            # `(k + 15) >> 4` rebuilt in the latch and compared with the counter
            continue
        upd = _update_of(c, setp.index, body)
        if upd is None:
            continue
        srcs = [o.replace(".reuse", "") for o in upd.operands[1:]]
        others = [o for o in srcs if o.lstrip("-") != c and o not in ("RZ", "URZ", "PT", "UPT")
                  and not o.startswith(("P", "UP"))]
        imms = [o for o in others if immediate(o) is not None]
        mods = upd.modifiers
        if upd.opcode == "SHF" and len(imms) == 1:
            f = 1 << _imm(imms[0])
            return ("shr", f) if "R" in mods else ("mul", f)
        if upd.opcode == "IMAD" and "SHL" in mods and len(imms) == 1:
            return "mul", _imm(imms[0])
        if upd.opcode == "IMAD" and "IADD" in mods and "0x1" in others and len(others) == 2:
            # IMAD.IADD Rc, Rk, 0x1, Rc is Rc + Rk·1: an add of k (a register: a grid stride
            # `blockDim.x * gridDim.x` kept in Rk, not the constant step 1)
            others.remove("0x1")
            imms = [o for o in others if immediate(o) is not None]
        if upd.opcode in ("IADD3", "UIADD3", "IADD", "VIADD", "IMAD") and len(imms) == 1 and len(others) == 1:
            if upd.opcode != "IMAD" or "IADD" in mods:
                return "const", abs(_imm(imms[0]))
        if bank is None or imms:
            return "?", None
        # the update reads the counter, or a copy of it (`VIADD R6, R0, UR4` with R0 = R6 moved
        # after the test), which arrives over the back edge; the stride is what stays the same
        carried = [o for o in srcs if re.fullmatch(r"-?U?R\d+", o) and _loop_carried(o.lstrip("-"), upd.index, body)]
        if upd.opcode in ("IMAD", "UIMAD") and not mods and len(srcs) == 3:
            # `IMAD Rc, Ra, Rb, Rc'`: the product a·b added to the counter in the update itself
            parts = [_dims_product(o, upd.index, scope, bank) for o in srcs[:2]]
            dims = tuple(sorted(parts[0] + parts[1])) if None not in parts and srcs[2] in carried else None
        elif len(stride := [o for o in others if o not in carried]) == 1 and (upd.opcode != "IMAD" or "IADD" in mods):
            dims = _dims_product(stride[0], upd.index, scope, bank)
        else:
            dims = None
        # the stride is whatever product of launch dimensions the SASS adds: blockDim.x · gridDim.x
        # (a grid stride), blockDim.y alone (finite-difference's pencils: 64 rows, 8 per step),
        # gridDim.x alone (one block per row), blockDim.x · blockDim.y (a 2-D block's threads)
        return ("dims", dims) if dims else ("?", None)
    return "?", None


#: value sources from the least certain to the most (an assumption carries the least certain it used)
_CERTAINTY = ("default", "settings", "annotation", "launch_site", "captured", "sass")


def counter_bound(loop: SourceLoop, fold: Callable[[str], tuple[int | None, str]], step: tuple[str, int | None],
                  unroll: int | None) -> tuple[int | None, str, tuple[str, int | None]]:
    """A source loop's bound in the units of its SASS counter, where it came from, and the step
    to divide it by.

    The extent is how far the induction variable moves (`n` for `i = 0; i < n`, `n` also for
    `i = n - 1; i >= 0; --i`), folded by `fold`. With a source step s > 1, ptxas either keeps
    `i` as the counter (it then adds u·s per unrolled trip) or counts iterations (it adds u, the
    bound is ⌈extent / s⌉): a SASS step that is u·s means the former. A step the SASS holds in a
    register (`i += stride`) is not a grid stride; when the source's step folds (an argument
    the launch gives), the loop runs ⌈extent / s⌉ iterations, u per SASS trip.
    """
    bound, source = None, "launch_site"
    for text in (loop.extent_text, loop.bound_text):
        if text and bound is None:
            bound, source = fold(text.strip())
    kind, k = step
    if bound is None or kind not in ("const", "?") or not loop.step_text:
        return bound, source, step
    s, s_source = fold(loop.step_text)
    if s is None or s <= 1:
        return bound, source, step
    source = min(source, s_source, key=_CERTAINTY.index) if s_source in _CERTAINTY else source
    iterations = -(-bound // s)
    if kind == "const" and k and k % s == 0 and (unroll is None or k // s == unroll):
        return bound, source, step  # the counter is `i` itself
    if kind == "const":
        return iterations, source, step  # the counter counts iterations
    return iterations, source, ("const", max(1, unroll or 1))


def resolve_trip(*, info_trip: int | None, bound_value: int | None, step: tuple[str, int | None],
                 launch: LaunchConfig, trip_hint: int | None, default: int, unroll: int | None,
                 where: str, bound_source: str = "launch_site", hint_source: str = "settings"
                 ) -> tuple[int, Assumption]:
    """SASS trip count of one loop and the assumption that names its source.

    A bound, a hint and the default count source iterations. One SASS iteration runs `k` of
    them when the counter's step is the constant k, else `unroll` (the loop's replicated body,
    `LoopInfo.unroll_factor`): a grid-stride loop unrolled by 4 covers four strides per trip.
    A geometric counter (`s *= f` up to the bound, `s >>= 1` down from it) runs log_f(bound)
    trips. `bound_source`/`hint_source` say where the bound's values and the hint came from.
    """
    kind, k = step
    name = f"trip_count@{where}"
    if kind in ("mul", "shr") and k and k > 1 and info_trip is None:
        # a halving loop starts from its bound (`s = blockDim.x / 2`); without one, blockDim
        n, src, what = ((bound_value, bound_source, f"bound {bound_value}") if bound_value is not None
                        else (launch.threads_per_block, "launch_site", f"blockDim {launch.threads_per_block}"))
        t = max(1, math.ceil(math.log(max(2, n), k) - 1e-9))
        verb = "multiplied" if kind == "mul" else "divided"
        return t, Assumption(name=name, value=str(t), source=src,
                             detail=f"counter {verb} by {k} per iteration over {what}")
    per_iter = k if kind == "const" and k else max(1, unroll or 1)  # a stride: one per unrolled copy
    per = f", {per_iter} per SASS iteration" if per_iter > 1 else ""
    if info_trip is not None:  # the program builder already divided by the unroll factor
        t = max(1, info_trip)
        return t, Assumption(name=name, value=str(t), source="sass", detail="constant loop bound")
    if bound_value is not None:
        if kind == "dims":
            stride = math.prod((launch.block if dim == "block" else launch.grid)[d] for dim, d in k)
            t = max(1, math.ceil(bound_value / (stride * per_iter)))
            d = k[0][1]
            shape = ("grid-stride loop" if k == (("block", d), ("grid", d)) else
                     "block-stride loop" if k == (("block", d),) else f"loop striding by {_stride_name(k)}")
            return t, Assumption(name=name, value=str(t), source=bound_source,
                                 detail=f"{shape} over {bound_value} elements{per}")
        t = max(1, bound_value // per_iter if kind == "const" else math.ceil(bound_value / per_iter))
        return t, Assumption(name=name, value=str(t), source=bound_source, detail=f"bound {bound_value}{per}")
    if trip_hint is not None:
        t = max(1, math.ceil(trip_hint / per_iter))
        return t, Assumption(name=name, value=str(t), source=hint_source,
                             detail=f"{trip_hint} iterations{per}" if per else "")
    t = max(1, math.ceil(default / per_iter))
    return t, Assumption(name=name, value=str(t), source="default",
                         detail=f"unknown bound, {default} iterations{per}; set launch_hints trip_count or "
                                "`// kernelscope: trip=...`")
