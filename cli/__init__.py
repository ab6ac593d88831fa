"""`kernelscope`: the command line. The composition root over kernelscope.analysis and kernelscope.server.

Exit codes (documented in docs/cli.md):
  0  analysed
  1  the file does not compile (errors printed as file:line:col: error: ...);
     for `verify`: the advice's edit does not compile
  2  usage, input or toolchain problems, with an actionable message
  3  an internal error (a bug: please report it with the message)
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

EXIT_OK, EXIT_COMPILE_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input or environment; the message says what to do."""


def _analysis_arguments(p: argparse.ArgumentParser) -> None:
    """The options of one analysis (`_options` reads them): `verify` must analyse exactly as `analyze` does."""
    p.add_argument("--arch", default="sm_90", help="target architecture (default sm_90)")
    p.add_argument("--device", default=None, help="named product for peaks, e.g. 'A100' (default: the arch's flagship)")
    p.add_argument("--flags", default="", help='extra nvcc flags, e.g. "-O3 -std=c++17"')
    p.add_argument("--compile-commands", type=Path, default=None, help="compile_commands.json (file or directory)")
    p.add_argument("--nvcc", default=None, help="explicit nvcc path")
    p.add_argument("--arch-file", type=Path, default=None, help="TOML/JSON file overriding device specs")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelscope", description="CUDA kernel performance analysis.")
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("analyze", help="compile a .cu file, model its kernels and print findings")
    a.add_argument("file", type=Path)
    _analysis_arguments(a)
    a.add_argument("--no-emulate", action="store_true", help="static facts only, no modeled profile")
    a.add_argument("--quick", action="store_true",
                   help="one emulation per kernel: skip sensitivity analysis and the what-if sweeps")
    a.add_argument("--json", action="store_true", help="print the result as JSON (schema: docs/json-schema.md)")
    a.add_argument("--html", type=Path, default=None, metavar="OUT", help="also write a self-contained HTML report")
    a.add_argument("--sarif", type=Path, default=None, metavar="OUT", help="also write SARIF 2.1.0")
    a.add_argument("--profile", type=Path, default=None, metavar="REPORT",
                   help="use a measured .ncu-rep for this file instead of the modeled profile")

    v = sub.add_parser("verify", help="apply one advice's fix to a shadow copy, recompile and re-model it")
    v.add_argument("file", type=Path)
    v.add_argument("--advice", required=True, metavar="ID", help="the advice id `kernelscope analyze` prints")
    _analysis_arguments(v)
    v.add_argument("--fast-math", action="store_true", help="float math fixes use intrinsics (__powf, __expf)")
    v.add_argument("--json", action="store_true", help="print the Verification as JSON")
    v.set_defaults(no_emulate=False)

    i = sub.add_parser("import", help="read an Nsight Compute report (.ncu-rep) into the profile model")
    i.add_argument("report", type=Path)
    i.add_argument("--source", type=Path, default=None, help="the .cu the report was captured from")
    i.add_argument("--json", action="store_true")

    s = sub.add_parser("serve", help="run the language server (stdio by default)")
    s.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default; editors pass it)")
    s.add_argument("--tcp", default=None, metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)")
    s.add_argument("--log-file", type=Path, default=None)
    return p


def _options(args: argparse.Namespace):
    from kernelscope.analysis.options import AnalysisOptions
    from pydantic import ValidationError

    try:
        flags = tuple(shlex.split(args.flags))
    except ValueError as e:
        raise UsageError(f"--flags: {e}") from None
    try:
        return AnalysisOptions(arch=args.arch, device=args.device, nvcc_path=args.nvcc, flags=flags,
                               compile_commands=args.compile_commands, arch_file=args.arch_file,
                               emulate=not args.no_emulate)
    except ValidationError as e:
        raise UsageError("; ".join(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None


def _analyze(args: argparse.Namespace) -> int:
    from kernelscope.analysis.pipeline import analyze
    from kernelscope.analysis.reports.text import render_text

    source: Path = args.file
    if not source.is_file():
        raise UsageError(f"{source}: no such file")
    result = analyze(source.resolve(), _options(args), measured_report=args.profile,
                     depth="quick" if args.quick else "full")
    if args.html:
        from kernelscope.analysis.reports.html import render_html

        args.html.write_text(render_html(result), encoding="utf-8")
    if args.sarif:
        from kernelscope.analysis.reports.sarif import render_sarif

        args.sarif.write_text(render_sarif(result), encoding="utf-8")
    errors = [m for m in result.messages if m.severity == "error"]
    for m in result.messages:
        if m.severity in ("error", "warning"):
            col = f"{m.column}:" if m.column else ""
            line = f"{m.line}:" if m.line else ""
            print(f"{m.file}:{line}{col} {m.severity}: {m.message}", file=sys.stderr)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(render_text(result))
    if errors and not result.kernels:
        return EXIT_COMPILE_ERROR
    return EXIT_COMPILE_ERROR if errors and not result.device_only else EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    from kernelscope.analysis.fixes import attach_fixes
    from kernelscope.analysis.pipeline import analyze
    from kernelscope.analysis.verify import rank_actions, verify

    source: Path = args.file
    if not source.is_file():
        raise UsageError(f"{source}: no such file")
    options = _options(args)
    baseline = analyze(source.resolve(), options)
    if not baseline.compiled:
        for m in baseline.messages:
            if m.severity == "error":
                print(f"{m.file}:{m.line or ''}: error: {m.message}", file=sys.stderr)
        return EXIT_COMPILE_ERROR
    advice = next((a for a in baseline.advice if a.id == args.advice), None)
    if advice is None:
        ids = ", ".join(f"{a.id} ({a.title})" for a in baseline.advice) or "none"
        raise UsageError(f"no advice {args.advice} for {source}; the advice ids are: {ids}")
    v = verify(source.resolve(), advice, options, baseline=baseline, fast_math=args.fast_math)
    if args.json:
        print(v.model_dump_json(indent=2))
    else:
        text = source.read_text(encoding="utf-8", errors="replace")
        plan = rank_actions(attach_fixes([advice], text, fast_math=args.fast_math), [v])[0]
        print(f"{advice.id}  {plan.title}  [{v.status.replace('_', ' ')}, {plan.kind}]")
        print(f"  {v.reason}")
        for e in v.compiler_errors:
            print(f"  {e}")
    return EXIT_COMPILE_ERROR if v.status == "does_not_compile" else EXIT_OK


def _import(args: argparse.Namespace) -> int:
    from kernelscope.analysis.measure.ncu_report import load_ncu_report

    if not args.report.is_file():
        raise UsageError(f"{args.report}: no such file")
    profile = load_ncu_report(args.report, source=args.source)
    if args.json:
        print(profile.model_dump_json(indent=2))
    else:
        print(f"{args.report}: {profile.provenance.summary}")
        for k in profile.kernels:
            lines = sorted(k.lines, key=lambda ls: ls.total, reverse=True)[:5]
            hot = ", ".join(f"line {ls.line} {ls.total / max(k.total_samples, 1):.0%}" for ls in lines)
            print(f"  {k.name}: {k.duration_s * 1e6:.1f} us, grid {k.launch.grid}, block {k.launch.block}"
                  + (f"; hottest: {hot}" if hot else "; no line information in the report"))
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from kernelscope.server.app import main as serve_main

    argv = []
    if args.tcp:
        argv += ["--tcp", args.tcp]
    if args.log_file:
        argv += ["--log-file", str(args.log_file)]
    return serve_main(argv)


def _known_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input or setup, not a bug; each carries an actionable message."""
    errors: list[type[BaseException]] = [UsageError]
    from kernelscope.analysis import errors as analysis_errors

    errors.extend(analysis_errors.USER_ERRORS)
    return tuple(errors)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = {"analyze": _analyze, "verify": _verify, "import": _import, "serve": _serve}[args.command]
    known = _known_errors()
    try:
        return handler(args)
    except known as e:
        print(f"kernelscope: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # never a traceback on user input; a bug still gets a clear line
        print(f"kernelscope: internal error: {type(e).__name__}: {e}\n"
              "This is a bug in kernelscope; please report it with the file that triggered it.", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
