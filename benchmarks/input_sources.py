"""Where the model's launch inputs come from on real programs, and whether the launch it uses
without capture is the one the program makes.

Programs: tests/data/real/ (single files with a `main()`, checked by hand in the tests) and
benchmarks/programs/ (multi-file samples and library-linked programs: llm.c's dev/cuda, which links
cuBLAS; Lei Mao's GEMMs, whose kernel files are launched from another file through
`std::function`; cuda-samples' histogram, whose `main()` is in a `.cpp`; the CUDA Handbook's
programs, whose sizes are command-line options with defaults and whose memory benchmarks sweep the
block size over dozens of template instances). Each folder's README names the repository, commit
and licence; its build_flags.json the nvcc flags.

Per kernel (each compiled template instance counted): the source of its grid and block
(captured, launch_site = folded, settings, annotation, default), analysed without launch
capture (an untrusted workspace) and with it; for every instance capture recorded, whether the
launch the model uses without capture (grid, block, dynamic shared memory) equals the captured
one (per instance, and per kernel: a file's instances of one template together, so that one
program's many instances do not weigh as many programs); per program that capture could not run,
the one line that says why; a file whose analysis fails, as a line of its own; and the advice whose
estimate rests on a default launch, with the severity the editor gives it (never a warning).

    python benchmarks/input_sources.py [PROJECT ...]   # all projects, or only those named
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.emulator.launch import resolve_launch
from kernelscope.analysis.frontend.compile import local_headers
from kernelscope.analysis.frontend.conditional import compile_passes
from kernelscope.analysis.frontend.inclusion import with_context
from kernelscope.analysis.frontend.source import parse_source
from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.server.features.diagnostics import advice_severity

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
PROGRAMS = ROOT / "benchmarks" / "programs"
SOURCES = ("captured", "launch_site", "settings", "annotation", "default")
LAUNCH = ("grid", "block", "dynamic_smem")
SM_COUNT = 132  # the H100 SXM the analyses default to: only the default grid of 8 blocks per SM reads it


@dataclass(frozen=True)
class Instance:
    """One compiled kernel instance of a program: where its launch came from and what it is."""

    kernel: str
    source: dict[str, str]  # grid/block/dynamic_smem -> Assumption source
    launch: tuple[str, str, str]  # the values the model used
    assumed_advice: tuple[str, ...]  # severities of the advice resting on a default launch
    source_only: bool = False  # the file does not build here: read from its source model alone


def options_for(src: Path) -> AnalysisOptions:
    root = REAL if REAL in src.parents else PROGRAMS
    table = json.loads((root / "build_flags.json").read_text())
    flags = (*table["*"], *table.get(src.relative_to(root).as_posix(), ()))
    return AnalysisOptions(flags=tuple(f.format(real=REAL, programs=PROGRAMS) for f in flags))


def instances(src: Path, options: AnalysisOptions) -> list[Instance]:
    result = analyze(src, options, depth="quick")
    if not result.kernels:
        return from_the_source(src, options)
    out = []
    for k in result.kernels:
        got = {a.name: (a.source, a.value) for a in k.assumptions if a.name in LAUNCH}
        severities = tuple(advice_severity(a).name for a in result.advice if a.kernel == k.mangled and a.assumed)
        out.append(Instance(k.name.split("(")[0].removeprefix("void "),
                            {n: got.get(n, ("none", ""))[0] for n in LAUNCH},
                            tuple(got.get(n, ("none", ""))[1] for n in LAUNCH), severities))
    return out


def from_the_source(src: Path, options: AnalysisOptions) -> list[Instance]:
    """The launches the model would use for a file that does not build here (llm.c includes
    cublas_v2.h, which this machine's toolkit lacks): its source model, read as nvcc's passes and
    with its project headers, resolved as the pipeline resolves a compiled kernel's."""
    tc = locate_toolchain()
    passes = compile_passes(["nvcc", *options.flags], options.arch, tc.version)
    headers = tuple(h.read_text(errors="replace") for h in local_headers(src, options.flags, tc) if h.is_file())
    model = with_context(parse_source(src.read_text(errors="replace"), passes, headers), src, src, options.flags, tc,
                         passes)
    out = []
    for k in model.kernels:
        r = resolve_launch(k.name, model, options, SM_COUNT)
        got = {a.name: a.source for a in r.assumptions}
        launch = (str(r.launch.grid), str(r.launch.block), str(r.launch.dynamic_smem))
        out.append(Instance(k.name, {n: got.get(n, "none") for n in LAUNCH}, launch, (), source_only=True))
    return out


def project(src: Path) -> str:
    return src.relative_to(REAL if REAL in src.parents else PROGRAMS).parts[0]


def main(only: list[str]) -> int:
    files = [f for f in sorted(REAL.rglob("*.cu")) + sorted(PROGRAMS.rglob("*.cu")) if not only or project(f) in only]
    counts = {key: Counter() for key in ("grid", "grid+capture", "block", "block+capture")}
    rows: dict[str, Counter] = defaultdict(Counter)
    not_captured: list[str] = []
    differ: list[str] = []
    source_only: list[str] = []
    severities: Counter = Counter()
    failed: list[str] = []
    for src in files:
        base = options_for(src)
        try:
            alone = instances(src, base)
            outcome = with_capture(src, base)
            captured = instances(src, outcome.options) if outcome.capture is not None else alone
        except Exception as e:  # noqa: BLE001 - one file's failure is a line of the report, not the end of it
            failed.append(f"{src.relative_to(ROOT)}: {type(e).__name__}: {e}")
            continue
        if outcome.capture is None:
            not_captured.append(f"{src.relative_to(ROOT)}: {outcome.message}")
        row = rows[project(src)]
        row["programs"] += 1
        row["instances"] += len(alone)
        for a in alone:
            row["source only"] += a.source_only
            if a.source_only:
                source_only.append(f"{src.relative_to(ROOT)} {a.kernel}: grid {a.launch[0]} ({a.source['grid']}), "
                                   f"block {a.launch[1]} ({a.source['block']})")
            counts["grid"][a.source["grid"]] += 1
            counts["block"][a.source["block"]] += 1
            row["grid folded"] += a.source["grid"] == "launch_site"
            row["block folded"] += a.source["block"] == "launch_site"
            severities.update(a.assumed_advice)
        static = {a.kernel: a for a in alone}
        kernels: dict[str, bool] = {}  # base name -> every captured instance equal
        for c in captured:
            counts["grid+capture"][c.source["grid"]] += 1
            counts["block+capture"][c.source["block"]] += 1
            if c.source["grid"] == "captured" and c.kernel in static:
                row["captured"] += 1
                same = static[c.kernel].launch == c.launch
                row["equal"] += same
                base = c.kernel.split("<")[0]
                kernels[base] = kernels.get(base, True) and same
                row["wrong"] += not same and "default" not in static[c.kernel].source.values()
                if not same:
                    differ.append(f"{src.relative_to(ROOT)} {c.kernel}: model {static[c.kernel].launch} "
                                  f"({'/'.join(static[c.kernel].source[n] for n in LAUNCH)}), program {c.launch}")
        row["kernels"] += len(kernels)
        row["kernels equal"] += sum(kernels.values())
    print(f"{len(files)} files from {len(rows)} projects; kernels as compiled (template instances counted separately)")
    print(f"{'source':<14}{'grid':>8}{'grid+capture':>15}{'block':>8}{'block+capture':>16}")
    for s in (*SOURCES, "none"):
        if any(c[s] for c in counts.values()):
            print(f"{s:<14}{counts['grid'][s]:>8}{counts['grid+capture'][s]:>15}"
                  f"{counts['block'][s]:>8}{counts['block+capture'][s]:>16}")
    print(f"{'total':<14}{sum(counts['grid'].values()):>8}{sum(counts['grid+capture'].values()):>15}"
          f"{sum(counts['block'].values()):>8}{sum(counts['block+capture'].values()):>16}")
    print(f"\n{'project':<30}{'files':>6}{'inst.':>7}{'grid folded':>13}{'block folded':>14}"
          f"{'captured':>10}{'equal w/o capture':>19}{'kernels':>9}{'equal':>7}")
    for name, r in sorted(rows.items()):
        print(f"{name:<30}{r['programs']:>6}{r['instances']:>7}{r['grid folded']:>13}{r['block folded']:>14}"
              f"{r['captured']:>10}{r['equal']:>19}{r['kernels']:>9}{r['kernels equal']:>7}")
    total = Counter()
    for r in rows.values():
        total.update(r)
    share = f" ({100 * total['equal'] / total['captured']:.0f} %)" if total["captured"] else ""
    print(f"without capture, {total['equal']} of the {total['captured']} captured instances use the launch the "
          f"program makes{share}")
    if total["kernels"]:
        print(f"by kernel (a file's template instances together, equal when every captured one is), "
              f"{total['kernels equal']} of {total['kernels']} ({100 * total['kernels equal'] / total['kernels']:.0f} %)")
    print(f"of those that differ, {total['wrong']} rest on no default (a folded launch that is not the program's)")
    for line in differ:
        print(f"  differs: {line}")
    print(f"advice resting on a default launch, by editor severity: {dict(severities) or 'none'}")
    print(f"modeled from the source alone, the file not building here ({len(source_only)} instances):")
    for line in source_only:
        print(f"  {line}")
    if failed:
        print(f"ANALYSIS FAILED ({len(failed)} files, left out of every figure above):")
        for line in failed:
            print(f"  {line}")
    print(f"not captured ({len(not_captured)} files):")
    for line in not_captured:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
