"""The readable per-kernel report `kernelscope analyze` prints."""

from __future__ import annotations

from ..emulator.launch import GIVE_A_LAUNCH
from ..frontend.kernel_names import without_parameters
from ..prediction_error import model_error
from ..results import AnalysisResult, KernelReport

_TOP_LINES = 5
_TOP_ADVICE = 8


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _kernel(result: AnalysisResult, k: KernelReport, source_lines: list[str]) -> list[str]:
    r = k.resources
    out = [f"kernel {k.name}" + (f"  (line {k.line})" if k.line else "")]
    out.append(f"  resources   {r.registers} registers, {r.static_smem} B static shared, {r.stack_frame} B stack, "
               f"{r.spill_stores}/{r.spill_loads} B spill stores/loads, {r.barriers} barrier(s)")
    if k.launch:
        out.append(f"  launch      grid {k.launch.grid}, block {k.launch.block}, {k.launch.dynamic_smem} B dynamic shared"
                   f"  [{launch_source(k)}]")
    if k.occupancy:
        out.append(f"  occupancy   {occupancy_text(k)}")
    else:
        out.append("  occupancy   unknown (no launch configuration)")
    measured = k.measured_duration_s is not None
    if measured:
        dev = result.profile.provenance.device if result.profile else "the report's device"
        out.append(f"  measured    {k.measured_duration_s * 1e6:.1f} us  [measured on {dev}]")
    if k.bound or k.predicted_duration_s:
        # Two analyses answer "what limits it": the roofline (where the kernel sits) and the
        # sensitivity sweep (which resource's latency or gap moves its time). Name each, and say
        # whether each number was measured or modeled: a report's figures sit beside the model's.
        parts = []
        if k.bound:
            roof = f" at {_pct(k.roofline_fraction)} of the ceiling" if k.roofline_fraction is not None else ""
            parts.append(f"roofline: {k.bound_label}{roof}" + (" [measured]" if measured else ""))
        if k.bottleneck:
            parts.append(f"sensitivity: bottleneck {k.bottleneck}")
        if k.predicted_duration_s:
            ratio = (f", {k.predicted_duration_s / k.measured_duration_s:.2f}x the measurement"
                     if measured and k.measured_duration_s else "")
            parts.append(f"predicted {k.predicted_duration_s * 1e6:.1f} us [modeled, {result.device}{ratio}]")
        out.append(f"  model       {'; '.join(parts)}")
    assumed = assumed_values(k)
    if assumed:  # the one place per kernel that says how to give them
        out.append("  assumed     " + ", ".join(f"{a.name.replace('@', ' at ')} = {a.value}" for a in assumed)
                   + f" (defaults: {COMMAND_LINE_FIX})")
    for a in model_limits(k):
        out.append(f"  limits      {a.value}: {a.detail}")
    mix = sorted(k.instruction_mix.items(), key=lambda kv: -kv[1])
    out.append("  mix         " + ", ".join(f"{name} {n}" for name, n in mix))
    has_samples = any(lr.share > 0 for lr in k.lines)
    # a call's line ranks with what it calls (call-site blame), shown apart from its own share
    ranked = sorted(k.lines, key=lambda lr: (lr.share + lr.callee_share if has_samples else lr.static_cost),
                    reverse=True)[:_TOP_LINES]
    if ranked:
        if has_samples:
            basis = "share of stall samples" + (" [measured]" if measured else " [modeled]")
        elif measured:
            basis = "static issue cost (the report has no line information: compile with -lineinfo)"
        else:
            basis = "static issue cost (no profile)"
        out.append("  top lines   " + basis)
        total_cost = sum(lr.static_cost for lr in k.lines) or 1.0
        for lr in ranked:
            share = lr.share if has_samples else lr.static_cost / total_cost
            text = source_lines[lr.line - 1].strip() if 0 < lr.line <= len(source_lines) else ""
            reasons = ""
            if lr.samples:
                top = sorted(lr.samples.items(), key=lambda kv: -kv[1])[:2]
                total = sum(lr.samples.values()) or 1.0
                reasons = "  (" + ", ".join(f"{name.replace('_', ' ')} {v / total:.0%}" for name, v in top) + ")"
            calls = f"  [+{_pct(lr.callee_share)} in the functions it calls]" if has_samples and lr.callee_share >= 0.005 else ""
            out.append(f"    {lr.line:>5}  {_pct(share):>5}  {text[:60]}{reasons}{calls}")
    facts = [f for f in k.facts]
    if facts:
        out.append("  facts")
        for f in facts:
            out.append(f"    line {f.line}: {f.kind.replace('_', ' ')}: {f.detail}")
    advice = advice_order(result, k)[:_TOP_ADVICE]
    if advice:
        out.append("  advice")
        for a in advice:
            est = ("no modeled gain, " if a.no_modeled_gain else
                   f"verified {a.verified_speedup:.2f}x, " if a.verified_speedup else "")
            on = f", {a.rests_on}" if a.rests_on else ""
            out.append(f"    {a.id}  {a.where}: {a.title} ({est}est. {a.estimate.speedup:.2f}x{on}, "
                       f"{_pct(a.importance)} {a.importance_basis}) [{a.provenance}]")
    return out


# Inputs the emulator fills in itself (latencies missing from the arch file, cache hit rates) are
# the model's, not the user's program's: "assumed" names only what the user can give.
_MODEL_INTERNAL = {"l2_hit_rate", "coalescing", "registers", "emulation", "time", "launch", "note", "budget",
                   "recursion_depth", "math_slow_path", "launch_overhead", "launch_fetch",
                   # the emulator's per-lane address analysis: how far it got, not a value to give
                   "data_dependent", "address_base", "lanes_unreached",
                   # a path only some warps take, which every warp runs in the model: a limit, below
                   "warp_paths"}


def assumed_values(k: KernelReport) -> list:
    """The launch dimensions, argument values and trip counts the model took from defaults (issue #14)."""
    return [a for a in k.assumptions if a.source == "default" and "." not in a.name and a.name not in _MODEL_INTERNAL]


#: where the model itself stopped short: a budget cut, the engine's guard, the recursion depth, a
#: path only some warps take
_LIMITS = ("budget", "emulation", "recursion_depth", "warp_paths")


def model_limits(k: KernelReport) -> list:
    """What the analysis cut or could not finish (issue #13): shown, never silent."""
    return [a for a in k.assumptions if a.name in _LIMITS]


#: How a user of the command line gives real values. The command line reads no editor settings, so
#: it names none (the server's texts also name `analysis.launchHints`: emulator/launch.GIVE_A_LAUNCH).
COMMAND_LINE_FIX = ("give the real ones with launch capture (`kernelscope analyze --capture`) or a "
                    "`// kernelscope: grid=... block=... n=...` annotation above the kernel; see docs/emulator.md")


def assumed_launches(result: AnalysisResult) -> list[str]:
    """"sgemm (grid, block)" for each kernel whose launch dimensions are defaults."""
    out = []
    for k in in_source_order(result.kernels):
        defaults = {a.name for a in k.assumptions if a.source == "default"}
        dims = [word for name, word in (("grid", "grid"), ("block", "block"), ("dynamic_smem", "dynamic shared memory"))
                if name in defaults]
        if dims:
            out.append(f"{without_parameters(k.name)} ({', '.join(dims)})")
    return out


def launch_source(k: KernelReport) -> str:
    """Where the launch shown came from: "measured", "launch site", "annotation", "settings" or "assumed"."""
    kinds = {a.source for a in k.assumptions if a.name in ("grid", "block")}
    if k.measured_duration_s is not None:
        return "measured"
    if "default" in kinds:
        # the assumption's detail says why (no launch, or one that does not fold); how to give the
        # real one is said once, on the kernel's `assumed` line
        why = next(a.detail for a in k.assumptions if a.name in ("grid", "block") and a.source == "default")
        why = why.replace(f"; {GIVE_A_LAUNCH}", "")
        return f"assumed: {why}" if why else "assumed"
    return ", ".join(sorted(kinds)).replace("_", " ") or "from the source"


def advice_order(result: AnalysisResult, k: KernelReport) -> list:
    """A kernel's advice, largest estimated speedup first: the order of every report."""
    return sorted((a for a in result.advice if a.kernel == k.mangled), key=lambda a: -a.speedup)


def in_source_order(kernels) -> list[KernelReport]:
    """Kernels as they appear in the file (the cubin lists them in reverse)."""
    return sorted(kernels, key=lambda k: (k.line is None, k.line or 0))


def sms_used(k: KernelReport) -> tuple[int, int] | None:
    """(SMs the grid's blocks occupy, SMs on the device) when the grid is smaller than one wave:
    theoretical occupancy is per SM, and such a grid idles SMs however high it is."""
    o, launch = k.occupancy, k.launch
    if o is None or o.waves is None or o.sm_count is None or launch is None or o.waves >= 1:
        return None
    return min(launch.blocks, o.sm_count), o.sm_count


def occupancy_text(k: KernelReport) -> str:
    """"100 % theoretical (64/64 warps, 8 blocks/SM of 256 threads), limited by warps; 3.9 waves …",
    as the text and HTML reports print it."""
    o = k.occupancy
    fill = grid_fill(k)
    return (f"{_pct(o.occupancy)} theoretical ({o.active_warps_per_sm}/{o.max_warps_per_sm} warps, "
            f"{o.active_blocks_per_sm} blocks/SM of {o.block_size} threads), limited by "
            f"{o.limiter.replace('_', ' ')}" + (f"; {fill}" if fill else ""))


def grid_fill(k: KernelReport) -> str | None:
    """How the launch fills the device, e.g. "the grid's 4 blocks fill 4 of 132 SMs (0.2 % of one wave)"."""
    o, launch = k.occupancy, k.launch
    if o is None or o.waves is None or o.sm_count is None or launch is None:
        return None
    if (used := sms_used(k)) is not None:
        return (f"the grid's {launch.blocks} block{'s' if launch.blocks != 1 else ''} fill "
                f"{used[0]} of {used[1]} SMs ({100 * o.waves:.1f} % of one wave)")
    return f"{o.waves:.1f} waves of {o.active_blocks_per_sm * o.sm_count} blocks on {o.sm_count} SMs"


def render_text(result: AnalysisResult) -> str:
    try:
        with open(result.source, encoding="utf-8", errors="replace") as fh:
            source_lines = fh.read().splitlines()
    except OSError:
        source_lines = []
    head = [f"{result.source}  ({result.arch}, {result.device}"
            + (f", {result.toolchain.origin} nvcc {result.toolchain.version}" if result.toolchain else "") + ")"]
    if result.device_only:
        head.append("note: host code failed to compile; kernels were analysed from device code alone")
    if result.profile:
        head.append(f"profile: {result.profile.provenance.summary}")
    if any(k.predicted_duration_s for k in result.kernels) and (err := model_error()):
        head.append(f"predicted times: {err.note()}")  # what the editor's hovers say beside each one
    if assumed := assumed_launches(result):
        # first, before any number: a launch the model assumed makes every time and launch advice a guess
        head.insert(1, f"ASSUMED LAUNCH: {', '.join(assumed)}: not the program's; the times and launch-shape advice "
                    f"below rest on defaults. For the real launches: kernelscope analyze {result.source} --capture "
                    "(builds and runs its main(), contained, no GPU)")
    if not result.compiled:
        head.append("the file did not compile; see the errors above")
    elif not result.kernels:
        head.append("no kernels (__global__ functions) in this file")
    body: list[str] = []
    for k in in_source_order(result.kernels):
        body.append("")
        body.extend(_kernel(result, k, source_lines))
    return "\n".join(head + body)
