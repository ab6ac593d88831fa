"""Modeled vs measured on an H100 (or the GPU this runs on): every example and real program,
each kernel's predicted time beside the time Nsight Compute measured for it.

    python benchmarks/measured.py                 # no GPU needed: replays the committed reports
    python benchmarks/measured.py --profile [--out DIR] [--budget-s 420]   # on a GPU, with ncu
    python benchmarks/measured.py --plan > capture.sh   # the same captures as a script for a GPU
                                                        # machine with nvcc and ncu but no kernelscope

The committed reports (tests/data/ncu-reports/h100/ and h200/, READMEs there) were captured on an
H100 80GB HBM3 and an H200 on 2026-11-27 by the script `--plan` writes (the same builds and ncu
command line as `--profile`): first launch of each kernel, caches cold, clocks as ncu leaves them
(`--clock-control none`), with the memory workload sections. The replay analyses each source with its report (`kernelscope analyze --profile`), so
the model emulates the launch the report recorded, on the report's GPU, and both numbers
describe the same work; `--capture` gives it the launch's arguments the report does not hold
(launch capture runs each program against kernelscope's stand-in runtime, no GPU needed).

Prints one row per kernel (predicted / measured) and the geomean error factor per set
(`examples`: written for kernelscope; `real`: tests/data/real/, code nobody here wrote).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks" / "accuracy"))
from run import spearman  # noqa: E402  (the accuracy benchmark's rank correlation, one definition)

REAL = REPO / "tests" / "data" / "real"
REPORTS = REPO / "tests" / "data" / "ncu-reports" / "h100"
#: programs that need more than one GPU or run for minutes under ncu's replay
SKIP = {"multi-gpu-programming-models/jacobi.cu"}


def gpu_arch() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True)
    cap = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    return "sm_" + cap.replace(".", "") if cap else None


def programs(only: str | None) -> list[tuple[str, Path, list[str]]]:
    """(set, source, extra nvcc flags) of every program to profile, examples first."""
    out: list[tuple[str, Path, list[str]]] = []
    if only in (None, "examples"):
        out += [("examples", p, []) for p in sorted((REPO / "examples").glob("*.cu"))]
    if only in (None, "real"):
        flags = json.loads((REAL / "build_flags.json").read_text())
        for p in sorted(REAL.rglob("*.cu")):
            name = p.relative_to(REAL).as_posix()
            if name not in SKIP:
                out.append(("real", p, [f.format(real=REAL) for f in (*flags["*"], *flags.get(name, ()))]))
    return out


def report_name(group: str, src: Path) -> str:
    """examples/sgemm_naive.cu -> examples__sgemm_naive.ncu-rep; tests/data/real/a/b.cu -> real__a__b.ncu-rep"""
    rel = src.relative_to(REPO / "examples" if group == "examples" else REAL).as_posix()
    return f"{group}__{rel.removesuffix('.cu').replace('/', '__')}.ncu-rep"


def capture_script(only: str | None, match: str, timeout: float) -> str:
    """The captures of `--profile` as a bash script: each program built the way `kernelscope profile`
    builds it (application.build_program) and run under the ncu command line kernelscope's
    measure.ncu builds, with the sections this ncu knows. For a GPU machine that has nvcc and ncu
    but not kernelscope's Python dependencies; the reports replay here without a GPU."""
    import shlex

    from kernelscope.analysis.measure.ncu import SECTIONS, build_ncu_command
    from kernelscope.analysis.measure.target import ProfileTarget

    q = shlex.quote
    lines = ["#!/usr/bin/env bash",
             "# written by `python benchmarks/measured.py --plan`; usage: capture.sh ARCH OUTDIR [BUDGET_S]",
             "set -u", 'arch=${1:?arch, e.g. sm_90}; out=$(realpath -m "${2:?output folder}"); budget=${3:-420}',
             'mkdir -p "$out/bin"; root=$(pwd); start=$SECONDS',
             "avail=$(ncu --list-sections 2>/dev/null); S=()",
             f"for s in {' '.join(SECTIONS)}; do",
             '  if grep -qw -- "$s" <<<"$avail"; then S+=(--section "$s"); else echo "ncu has no section $s" >&2; fi',
             "done"]
    builds: list[str] = []
    runs: list[str] = []
    for group, src, flags in programs(only):
        rel = src.relative_to(REPO).as_posix()
        if match not in rel:
            continue
        report = report_name(group, src)
        exe = f"$out/bin/{report.removesuffix('.ncu-rep')}"
        rel_flags = [f.replace(str(REAL), "$root/tests/data/real") for f in flags]
        target = ProfileTarget(command=("EXE",), first_of_each=True)
        ncu = build_ncu_command(target, "ncu", "REPORT", "")
        argv: list[str] = []
        i = 0
        while i < len(ncu):  # the sections come from the list this ncu knows ("${S[@]}")
            if ncu[i] == "--section":
                if not argv or argv[-1] != '"${S[@]}"':
                    argv.append('"${S[@]}"')
                i += 2
                continue
            argv.append({"EXE": f'"{exe}"', "REPORT": f'"$out/{report.removesuffix(".ncu-rep")}"'}.get(
                ncu[i], q(ncu[i])))
            i += 1
        build = ["nvcc", '-arch="$arch"', "-lineinfo", *(f'"{f}"' if "$root" in f else q(f) for f in rel_flags),
                 "-o", f'"{exe}"', f'"$root/{rel}"']
        builds.append(f'({" ".join(build)} > "{exe}.log" 2>&1) &')
        runs += [f"# {rel}",
                 f'if (( SECONDS - start > budget )); then echo "not run: {rel} (budget spent)"',
                 f'elif [ ! -x "{exe}" ]; then echo "not built: {rel}"; tail -5 "{exe}.log"; else',
                 f'  echo "== {rel}"; (cd "$root/{src.parent.relative_to(REPO).as_posix()}" && timeout {int(timeout)} '
                 f'{" ".join(argv)}) 2>&1 | grep -E "==(ERROR|WARNING)==|Profiling" | tail -8',
                 "fi"]
    # the builds run at once (they need no GPU), then the profiles one after another
    return "\n".join([*lines, *builds, "wait", *runs]) + "\n"


def run_cli(argv: list[str], src: Path, timeout: float) -> tuple[dict | None, str]:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 120, cwd=src.parent)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if r.returncode != 0 or not r.stdout.strip().startswith("{"):
        return None, f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}"
    return json.loads(r.stdout), ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", action="store_true", help="measure on this machine's GPU (needs ncu)")
    ap.add_argument("--reports", type=Path, default=REPORTS, help="the reports to replay")
    ap.add_argument("--out", type=Path, default=None, help="with --profile: keep the reports here")
    ap.add_argument("--budget-s", type=float, default=420.0, help="start no program after this many seconds")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per program under ncu")
    ap.add_argument("--only", choices=("examples", "real"), default=None)
    ap.add_argument("--match", default="", help="only programs whose path contains this")
    ap.add_argument("--markdown", action="store_true", help="also print the docs/accuracy.md table rows")
    ap.add_argument("--plan", action="store_true",
                    help="print a bash script that builds and profiles every program as --profile does, with "
                         "nvcc and ncu alone (run it from the repository's root: capture.sh ARCH OUTDIR)")
    ap.add_argument("--arch-file", type=Path, default=None,
                    help="device overrides for the model (e.g. launch_overhead_us = 0 to see the model without it)")
    args = ap.parse_args()
    if args.plan:
        print(capture_script(args.only, args.match, args.timeout))
        return 0
    arch = gpu_arch() if args.profile else None
    if args.profile and (arch is None or shutil.which("ncu") is None):
        print("measured.py --profile needs an NVIDIA GPU (nvidia-smi) and ncu on PATH", file=sys.stderr)
        return 2
    # absolute: each program is analysed from its own folder
    out = ((args.out or Path(tempfile.mkdtemp(prefix="kernelscope-measured-"))) if args.profile else args.reports).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rows: list[dict] = []
    print(f"{'set':8} {'program':40} {'kernel':34} {'measured':>11} {'predicted':>11} {'ratio':>7}  {'lines':>5} {'dram':>7}  {'L2 hit':>9}  grid x block")
    for group, src, flags in programs(args.only):
        if args.match not in src.relative_to(REPO).as_posix():
            continue
        if time.monotonic() - t0 > args.budget_s:
            print(f"{group:8} {src.name:44} (not run: budget of {args.budget_s:.0f} s spent)")
            continue
        rel = src.relative_to(REPO).as_posix()
        report = out / report_name(group, src)
        if args.profile:
            argv = ["profile", str(src), "--arch", arch, "--output", str(report), "--timeout", str(args.timeout)]
        elif report.is_file():
            # --capture: the report has the launch's grid and block but not its arguments (sgemm.cu's
            # K = 2048 is assigned in main(), no constant folds it); capture records them, no GPU needed
            argv = ["analyze", str(src), "--profile", str(report), "--capture", "--quick"]
        else:
            continue
        argv = [sys.executable, "-m", "kernelscope.cli", *argv, "--json"]
        if flags:
            argv.append("--flags=" + " ".join(flags))
        if args.arch_file:
            argv += ["--arch-file", str(args.arch_file.resolve())]
        started = time.monotonic()
        result, why = run_cli(argv, src, args.timeout)
        if result is None:
            print(f"{group:8} {rel:44} failed after {time.monotonic() - started:.0f} s: {why}")
            rows.append({"set": group, "program": rel, "error": why})
            continue
        measured_bytes = {mk["kernel"]: mk.get("bytes", {}) for mk in (result.get("profile") or {}).get("kernels", [])}
        measured_hits = {mk["kernel"]: mk.get("hit_rates", {}) for mk in (result.get("profile") or {}).get("kernels", [])}
        for k in result["kernels"]:
            m, p = k.get("measured_duration_s"), k.get("predicted_duration_s")
            if not m:
                continue  # compiled but not launched by the program (or not profiled)
            ratio = p / m if p else None
            # DRAM bytes: the report's dram__bytes against the modeled hierarchy's (issue 33)
            md = measured_bytes.get(k["mangled"], {}).get("dram")
            pd = ((k.get("memory") or {}).get("levels") or {}).get("dram", {}).get("bytes")
            dram_ratio = pd / md if md and pd else None
            # L2 sector hit rate: the report's (Memory Workload Analysis) against the modeled hierarchy's
            mh = measured_hits.get(k["mangled"], {}).get("l2")
            ph = ((k.get("memory") or {}).get("levels") or {}).get("l2", {}).get("hit_rate")
            # per-line hotspots: the report's line shares against the model's, over lines either samples
            pairs = [(ln["modeled_share"], ln["share"]) for ln in k.get("lines", [])
                     if ln.get("modeled_share") is not None and (ln["share"] > 0 or ln["modeled_share"] > 0)]
            rho = spearman([a for a, _ in pairs], [b for _, b in pairs]) if len(pairs) >= 3 else None
            rows.append({"set": group, "program": rel, "kernel": k["name"], "measured_s": m, "predicted_s": p,
                         "ratio": ratio, "line_rho": rho, "lines": len(pairs), "launch": k.get("launch"),
                         "dram_measured": md, "dram_predicted": pd, "dram_ratio": dram_ratio,
                         "l2_hit_measured": mh, "l2_hit_predicted": ph,
                         "device": result.get("device")})
            shown = f"{ratio:7.2f}" if ratio else "      -"
            shown += f"  {rho:5.2f}" if rho is not None and rho == rho else "      -"
            shown += f"  {dram_ratio:6.2f}" if dram_ratio else "       -"
            shown += f"  {ph * 100:3.0f}/{mh * 100:3.0f}%" if mh is not None and ph is not None else "         -"
            lc = k.get("launch") or {}
            print(f"{group:8} {rel.removeprefix('tests/data/real/'):40} {k['name'][:34]:34} {m * 1e6:9.1f}us "
                  f"{(p or 0) * 1e6:9.1f}us {shown}  {lc.get('grid')} x {lc.get('block')}", flush=True)
    for group in ("examples", "real"):
        logs = [abs(math.log(r["ratio"])) for r in rows if r.get("set") == group and r.get("ratio")]
        if logs:
            g = math.exp(sum(logs) / len(logs))
            within2 = sum(x <= math.log(2) for x in logs) / len(logs)
            rhos = sorted(r["line_rho"] for r in rows if r.get("set") == group and r.get("line_rho") is not None
                          and r["line_rho"] == r["line_rho"])
            med = f", per-line hotspot rank correlation median {rhos[len(rhos) // 2]:.2f} over {len(rhos)} kernels" \
                if rhos else ""
            print(f"{group}: {len(logs)} kernels, geomean error {g:.2f}x, {within2:.0%} within 2x{med}")
            dl = [abs(math.log(r["dram_ratio"])) for r in rows if r.get("set") == group and r.get("dram_ratio")]
            if dl:
                print(f"{group}: DRAM bytes, predicted/measured over {len(dl)} kernels with DRAM traffic: geomean "
                      f"error {math.exp(sum(dl) / len(dl)):.2f}x, {sum(x <= math.log(1.3) for x in dl) / len(dl):.0%} "
                      f"within 1.3x")
            # a few-microsecond kernel moves only its launch's code and constants (a few KB)
            big = [abs(math.log(r["dram_ratio"])) for r in rows if r.get("set") == group and r.get("dram_ratio")
                   and r["dram_measured"] >= 1e6]
            if big:
                print(f"{group}: DRAM bytes over {len(big)} kernels moving >= 1 MB: geomean error "
                      f"{math.exp(sum(big) / len(big)):.2f}x, {sum(x <= math.log(1.3) for x in big) / len(big):.0%} "
                      f"within 1.3x")
    for group in ("examples", "real"):
        pairs = [(r["l2_hit_predicted"], r["l2_hit_measured"]) for r in rows if r.get("set") == group
                 and r.get("l2_hit_measured") is not None and r.get("l2_hit_predicted") is not None]
        lacking = sum(1 for r in rows if r.get("set") == group and "error" not in r and r.get("l2_hit_measured") is None)
        if pairs:
            within = sum(abs(p - m) <= 0.15 for p, m in pairs) / len(pairs)
            mean = sum(abs(p - m) for p, m in pairs) / len(pairs) * 100
            print(f"{group}: L2 hit rate, predicted against measured over {len(pairs)} kernels: {within:.0%} within "
                  f"15 points, mean difference {mean:.1f} points")
        if lacking:
            print(f"{group}: L2 hit rate not compared for {lacking} kernels: their reports hold no "
                  "lts__t_sector_hit_rate (captured without ncu's MemoryWorkloadAnalysis section)")
    if args.markdown:
        print("\n| set | program | kernel | measured | predicted | ratio | line ρ | DRAM measured | DRAM predicted | DRAM ratio "
              "| L2 hit measured | L2 hit predicted |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "error" in r:
                continue
            name = r["kernel"].split("(")[0].removeprefix("void ").replace("<", "&lt;").replace(">", "&gt;")
            rho = f"{r['line_rho']:.2f}" if r.get("line_rho") is not None and r["line_rho"] == r["line_rho"] else "-"
            mb = (lambda v: f"{v / 1e6:.2f} MB" if v else "-")
            pct = (lambda v: "-" if v is None else f"{v * 100:.0f} %")
            dr = f"{r['dram_ratio']:.2f}" if r.get("dram_ratio") else "-"
            print(f"| {r['set']} | {r['program'].removeprefix('tests/data/real/').removeprefix('examples/')} | `{name}` | "
                  f"{r['measured_s'] * 1e6:.1f} µs | {r['predicted_s'] * 1e6:.1f} µs | {r['ratio']:.2f} | {rho} | "
                  f"{mb(r.get('dram_measured'))} | {mb(r.get('dram_predicted'))} | {dr} | {pct(r.get('l2_hit_measured'))} | "
                  f"{pct(r.get('l2_hit_predicted'))} |")
    if args.profile:
        (out / "results.json").write_text(json.dumps({"arch": arch, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
