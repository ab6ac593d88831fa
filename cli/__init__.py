"""`kernelscope`: the command line. It parses, calls the application layer (analysis/application.py)
and prints through the presenters (analysis/reports/); `serve` starts kernelscope.server.

Exit codes (documented in docs/cli.md):
  0  analysed
  1  the file does not compile (errors printed as file:line:col: error: ...);
     for `verify`: the advice's edit does not compile
  2  usage, input, toolchain or file-system problems (a read-only cache folder, a full disk),
     with an actionable message
  3  an internal error (a bug: please report it with the message)
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

EXIT_OK, EXIT_COMPILE_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input or environment; the message says what to do."""


def _analysis_arguments(p: argparse.ArgumentParser) -> None:
    """The options of one analysis (`_options` reads them): `verify` must analyse exactly as `analyze` does."""
    p.add_argument("--arch", default=None,
                   help="target architecture (default sm_90, or the GPU of the report given with --profile)")
    p.add_argument("--device", default=None,
                   help="named product for peaks, e.g. 'A100' (default: the arch's flagship, or the report's GPU)")
    p.add_argument("--flags", default="", help='extra nvcc flags, e.g. "-O3 -std=c++17"')
    p.add_argument("--compile-commands", type=Path, default=None, help="compile_commands.json (file or directory)")
    p.add_argument("--nvcc", default=None, help="explicit nvcc path")
    p.add_argument("--arch-file", type=Path, default=None, help="TOML/JSON file overriding device specs")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr (it is off anyway when "
                   "stderr is not a terminal)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelscope", description="CUDA kernel performance analysis.")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("analyze", help="compile a .cu file (or every .cu in a directory), model its kernels "
                                       "and print findings")
    a.add_argument("file", type=Path, help="a .cu file, or a directory: every .cu in it, then a summary")
    _analysis_arguments(a)
    a.add_argument("--no-emulate", action="store_true", help="static facts only, no modeled profile")
    a.add_argument("--quick", action="store_true",
                   help="one emulation per kernel: skip sensitivity analysis and the what-if sweeps")
    a.add_argument("--json", action="store_true", help="print the result as JSON (schema: docs/json-schema.md)")
    a.add_argument("--html", type=Path, default=None, metavar="OUT", help="also write a self-contained HTML report")
    a.add_argument("--sarif", type=Path, default=None, metavar="OUT", help="also write SARIF 2.1.0")
    a.add_argument("--profile", type=Path, default=None, metavar="REPORT",
                   help="use a measured .ncu-rep for this file instead of the modeled profile")
    a.add_argument("--verify", action="store_true",
                   help="re-model the fix of each advice that has one (compiles a shadow copy per fix) and report "
                        "the verified figure, or 'no modeled gain'")
    a.add_argument("--capture", action="store_true",
                   help="build the file's main() and run it against kernelscope's stand-in CUDA runtime (no GPU) to "
                        "record the launches and argument values it really makes (runs your program; docs/emulator.md)")
    a.add_argument("--capture-args", default="", metavar="ARGS", help="command-line arguments for the captured program")

    v = sub.add_parser("verify", help="apply one advice's fix to a shadow copy, recompile and re-model it")
    v.add_argument("file", type=Path)
    v.add_argument("--advice", required=True, metavar="ID", help="the advice id `kernelscope analyze` prints")
    _analysis_arguments(v)
    v.add_argument("--fast-math", action="store_true", help="float math fixes use intrinsics (__powf, __expf)")
    v.add_argument("--json", action="store_true", help="print the Verification as JSON")
    v.set_defaults(no_emulate=False)

    r = sub.add_parser("profile", usage="kernelscope profile FILE.cu [--remote ssh:HOST|srun:ARGS|sbatch:ARGS] [options] "
                                        "[-- PROGRAM ARGS]", help="build and run the program under Nsight Compute (ncu), locally or remotely, "
                                       "and print the analysis with the measured profile")
    r.add_argument("file", type=Path, help="the .cu file to report on (built with -lineinfo when no program is given)")
    _analysis_arguments(r)
    r.add_argument("--remote", default=None, metavar="ssh:HOST|srun:ARGS|sbatch:ARGS",
                   help="run on a GPU machine: 'ssh:gpu01', or a Slurm job 'srun:-p gpu --gres=gpu:1' "
                        "('sbatch:...' where srun is not allowed; the directory must be shared)")
    r.add_argument("--ncu", default="ncu", help="ncu executable (default: ncu on PATH)")
    r.add_argument("--kernel-regex", default=None, help="profile only kernels whose name matches")
    r.add_argument("--launch-count", type=int, default=None,
                   help="launches profiled in all, over every kernel (default: the first launch of each kernel)")
    r.add_argument("--timeout", type=float, default=600.0, help="seconds before ncu and the program are killed")
    r.add_argument("--output", type=Path, default=None, metavar="REPORT", help="keep the .ncu-rep here")
    r.add_argument("--json", action="store_true", help="print the result as JSON")
    # The program and its arguments come after `--` (main() splits them off before parsing:
    # argparse's REMAINDER would also swallow this command's own options).
    r.set_defaults(no_emulate=False, program=[])

    i = sub.add_parser("import", help="read an Nsight Compute report (.ncu-rep) into the profile model")
    i.add_argument("report", type=Path)
    i.add_argument("--source", type=Path, default=None, help="the .cu the report was captured from")
    i.add_argument("--json", action="store_true")

    s = sub.add_parser("serve", help="run the language server (stdio by default)")
    s.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default; editors pass it)")
    s.add_argument("--tcp", default=None, metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)")
    s.add_argument("--log-file", type=Path, default=None)
    return p


class _VersionAction(argparse.Action):
    """`--version`, reading the installed version only when asked: the package metadata is a
    noticeable share of a command's start-up (docs/performance.md)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"kernelscope {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kernelscope")
    except PackageNotFoundError:  # run from a tree that was never installed
        return "unknown (not installed)"


def _options(args: argparse.Namespace, *, arch: str | None = None, device: str | None = None):
    from kernelscope.analysis.application import AnalysisOptions
    from pydantic import ValidationError

    try:
        flags = tuple(shlex.split(args.flags))
    except ValueError as e:
        raise UsageError(f"--flags: {e}") from None
    try:
        return AnalysisOptions(arch=args.arch or arch or "sm_90", device=args.device or device, nvcc_path=args.nvcc,
                               flags=flags, compile_commands=args.compile_commands, arch_file=args.arch_file,
                               emulate=not args.no_emulate)
    except ValidationError as e:
        raise UsageError("; ".join(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None


def _report_device(args: argparse.Namespace, report: Path, catalog) -> tuple[str | None, str | None]:
    """(arch, device) of the GPU a report was captured on, unless the user named one: the report's
    numbers belong to that GPU, so the model beside them must use its specs."""
    if args.arch or args.device:
        return None, None
    from kernelscope.analysis import application

    arch, device, note = application.report_device(report, args.file, catalog)
    if note:  # a GPU the catalogue lacks: its arch's default device, and we say so
        print(f"kernelscope: {note}", file=sys.stderr)
    return arch, device


def _progress(args: argparse.Namespace, label: str):
    """Progress on stderr, one rewritten line, only for a person watching a terminal."""
    if args.quiet or args.json or not sys.stderr.isatty():
        return None

    def show(stage: str, fraction: float) -> None:
        sys.stderr.write(f"\r\033[K{label}: {stage} ({fraction:.0%})")
        sys.stderr.flush()

    return show


def _end_progress(show) -> None:
    if show is not None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


#: fixes re-modeled per file by `analyze --verify` (the server's default, `kernelscope.verify.maxFixes`)
VERIFY_LIMIT = 8


def _analyze_file(args: argparse.Namespace, source: Path, report: Path | None, catalog, label: str | None = None,
                  prelaunch=None):
    """`source` analysed with `catalog`, the arch catalog the command loaded once (the report's
    device, capture, the analysis, its verifications and the HTML chart all use it)."""
    from kernelscope.analysis import application

    arch, device = _report_device(args, report, catalog) if report else (None, None)
    options = _options(args, arch=arch, device=device)
    capture_argv = None
    if getattr(args, "capture", False):  # the user's own command line: their program may run
        try:
            capture_argv = shlex.split(args.capture_args)
        except ValueError as e:
            raise UsageError(f"--capture-args: {e}") from None
    show = _progress(args, label or source.name)
    try:
        return application.analyse_file(
            source, options, capture_argv=capture_argv,
            on_capture=None if args.quiet else lambda m: print(f"kernelscope: {m}", file=sys.stderr),
            measured_report=report, depth="quick" if getattr(args, "quick", False) else "full",
            verify_limit=VERIFY_LIMIT if getattr(args, "verify", False) else 0, progress=show, prelaunch=prelaunch,
            catalog=catalog)
    finally:
        _end_progress(show)


def _print_messages(result) -> None:
    for m in result.messages:
        if m.severity in ("error", "warning"):
            col = f"{m.column}:" if m.column else ""
            line = f"{m.line}:" if m.line else ""
            print(f"{m.file}:{line}{col} {m.severity}: {m.message}", file=sys.stderr)


def _exit_code(result) -> int:
    errors = [m for m in result.messages if m.severity == "error"]
    if errors and not result.kernels:
        return EXIT_COMPILE_ERROR
    return EXIT_COMPILE_ERROR if errors and not result.device_only else EXIT_OK


def _require_regular(source: Path) -> None:
    """A source to analyse must be a regular file: a FIFO would block, a device never end."""
    if not source.is_file():
        what = "not a regular file (a FIFO, a device or a directory)" if source.exists() else "no such file"
        raise UsageError(f"{source}: {what}")


def _analyze(args: argparse.Namespace) -> int:
    source: Path = args.file
    if source.is_dir():
        return _analyze_directory(args, source)
    _require_regular(source)
    # nvcc starts now, from the invocation the last run on this file recorded, while the engine
    # imports (analysis/frontend/prelaunch.py); the compile step adopts it only if it is the same
    from kernelscope.analysis import application

    pre = None if args.capture else application.start_compile(source, args.command_line, Path.cwd())
    try:
        catalog = application.arch_catalog(args.arch_file)
        result = _analyze_file(args, source, args.profile, catalog, prelaunch=pre)
    finally:
        if pre is not None:
            pre.close()
    if args.html:
        from kernelscope.analysis.reports import render_html

        args.html.write_text(render_html(result, catalog=catalog), encoding="utf-8")
    if args.sarif:
        from kernelscope.analysis.reports import render_sarif

        args.sarif.write_text(render_sarif(result, base=Path.cwd()), encoding="utf-8")
    _print_messages(result)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        from kernelscope.analysis.reports import render_text

        print(render_text(result))
    return _exit_code(result)


def _analyze_directory(args: argparse.Namespace, folder: Path) -> int:
    """Every .cu directly in `folder`, each reported as for one file, then one summary line per file."""
    from kernelscope.analysis import application
    from kernelscope.analysis.application import MAX_SOURCE_BYTES, regular_size
    from kernelscope.analysis.reports import render_text

    if args.html or args.sarif or args.profile:
        raise UsageError(f"{folder} is a directory: --html, --sarif and --profile take one file")

    files = []
    for f in sorted(folder.glob("*.cu")):
        size = regular_size(f)
        if size is None or size > MAX_SOURCE_BYTES:  # a FIFO would block the read, /dev/zero never end it
            print(f"kernelscope: skipped {f}: not a regular file of at most {MAX_SOURCE_BYTES >> 20} MiB",
                  file=sys.stderr)
            continue
        files.append(f)
    if not files:
        raise UsageError(f"{folder} is a directory with no .cu files; give a .cu file or a directory of them")
    results, worst = [], EXIT_OK
    catalog = application.arch_catalog(args.arch_file)  # one for the folder: the files share the options
    for n, f in enumerate(files, start=1):
        result = _analyze_file(args, f, None, catalog, label=f"[{n}/{len(files)}] {f.name}")
        _print_messages(result)
        results.append(result)
        worst = max(worst, _exit_code(result))
        if not args.json:
            print(render_text(result) + "\n")
    if args.json:
        print("[" + ",\n".join(r.model_dump_json(indent=2) for r in results) + "]")
        return worst
    print(f"summary: {len(files)} file{'s' if len(files) != 1 else ''} in {folder}")
    for f, r in zip(files, results):
        state = "does not compile" if not r.compiled else (
            f"{len(r.kernels)} kernel{'s' if len(r.kernels) != 1 else ''}, {len(r.advice)} advice")
        best = max(r.advice, key=lambda a: a.speedup, default=None)
        top = f"; best: {best.title} (est. {best.speedup:.2f}x, {best.where})" if best else ""
        print(f"  {f.name}: {state}{top}")
    return worst


def _verify(args: argparse.Namespace) -> int:
    from kernelscope.analysis import application

    source: Path = args.file
    _require_regular(source)
    options = _options(args)
    show = _progress(args, source.name)
    out = application.verify_advice(source, args.advice, options, fast_math=args.fast_math, progress=show,
                                    on_analysed=lambda: _end_progress(show))
    baseline, advice, v, plan = out.baseline, out.advice, out.verification, out.plan
    if not baseline.compiled:
        for m in baseline.messages:
            if m.severity == "error":
                print(f"{m.file}:{m.line or ''}: error: {m.message}", file=sys.stderr)
        return EXIT_COMPILE_ERROR
    if advice is None or v is None or plan is None:
        ids = ", ".join(f"{a.id} ({a.title})" for a in baseline.advice) or "none"
        raise UsageError(f"no advice {args.advice} for {source}; the advice ids are: {ids}")
    if args.json:
        print(v.model_dump_json(indent=2))
    else:
        print(f"{advice.id}  {plan.title}  [{v.status.replace('_', ' ')}, {plan.kind}]")
        print(f"  {v.reason}")
        for e in v.compiler_errors:
            print(f"  {e}")
    return EXIT_COMPILE_ERROR if v.status == "does_not_compile" else EXIT_OK


def _profile(args: argparse.Namespace) -> int:
    """`kernelscope profile FILE.cu [--remote ...] [-- PROGRAM ARGS]`: the measured path of the editor's
    "Profile now" from a terminal. The program comes only from this command line (or is FILE.cu built
    alone): nothing here runs a command taken from a project's configuration files."""
    import tempfile

    from kernelscope.analysis import application
    from kernelscope.analysis.reports import render_text

    source: Path = args.file
    _require_regular(source)
    program = list(args.program)
    remote = _remote(args.remote) if args.remote else None
    if remote is not None and not program:
        raise UsageError("with --remote, give the program after `--` (built where the GPU machine sees it), "
                         "e.g. kernelscope profile gemm.cu --remote ssh:gpu01 -- ./build/app")
    with tempfile.TemporaryDirectory(prefix="kernelscope-profile-") as work:
        if not program:
            program = [str(_build(args, source, Path(work)))]
        # srun writes the report on the shared filesystem, so it goes beside the program, not in /tmp
        shared = remote is not None and not remote.fetch
        report = args.output or (Path.cwd() / f"{source.stem}.ncu-rep" if shared else Path(work) / "profile.ncu-rep")
        target = application.ProfileTarget(command=tuple(program), cwd=Path.cwd(), timeout_s=args.timeout,
                                           kernel_regex=args.kernel_regex, launch_count=args.launch_count,
                                           first_of_each=args.launch_count is None, remote=remote)
        try:
            # ncu; where the counters are refused, CUPTI PC sampling; else the model (measure/fallback.py)
            measured = application.profile(
                target, ncu_path=args.ncu, report_path=report, source=source.resolve(), nvcc_path=args.nvcc,
                on_warning=lambda w: print(f"kernelscope: {w}", file=sys.stderr),
                on_progress=lambda p: print(f"kernelscope: {p}", file=sys.stderr))
        except application.ToolNotFoundError as e:
            if remote is not None:  # ssh/srun missing here, or ncu on the GPU machine: the message says which
                raise
            # the measured path needs a GPU; say what works without one (the analysis's hint names editor settings)
            raise UsageError(f"{e.message}. `profile` runs the program under Nsight Compute (ncu) on an NVIDIA GPU: "
                             "install Nsight Compute (it ships with the CUDA toolkit) or give its path with --ncu PATH.\n"
                             "Without a GPU, `kernelscope analyze FILE.cu` prints the modeled report, and "
                             "`kernelscope analyze FILE.cu --profile REPORT.ncu-rep` reads a report captured on a GPU "
                             "machine.") from None
        if measured.ran != "ncu":
            # no counters here: the one message (every fix), which profile ran, and CUPTI's hot lines if it sampled;
            # the report below is the model's ([modeled])
            print(f"kernelscope: {measured.message}", file=sys.stderr)
            print(f"kernelscope: profile: {measured.label}", file=sys.stderr)
            for line in application.hot_lines(measured.profile) if measured.profile is not None else ():
                print(f"kernelscope: sampled by CUPTI: {line}", file=sys.stderr)
            report = None
        result = _analyze_file(args, source, report, application.arch_catalog(args.arch_file))
    _print_messages(result)
    print(result.model_dump_json(indent=2) if args.json else render_text(result))
    if report is not None and (args.output or shared):
        print(f"report kept at {report}", file=sys.stderr)
    return _exit_code(result)


def _remote(spec: str):
    """'ssh:HOST', 'srun:ARGS' or 'sbatch:ARGS' as a RemoteWrapper over a shared filesystem (same paths on both sides)."""
    from kernelscope.analysis.application import RemoteWrapper

    kind, _, rest = spec.partition(":")
    if kind == "ssh" and rest.strip():
        host = rest.strip()
        # ncu writes the report in the remote /tmp and scp copies it back
        return RemoteWrapper(run=("ssh", host, "cd {cwd} && {command}"), fetch=("scp", f"{host}:{{remote}}", "{local}"))
    if kind in ("srun", "sbatch"):  # a Slurm job (analysis/measure/slurm.py)
        try:
            extra = tuple(shlex.split(rest))
        except ValueError as e:
            raise UsageError(f"--remote: {e}") from None
        return RemoteWrapper(run=(kind, *extra, "--chdir={cwd}", "{command}"))
    raise UsageError(f"--remote {spec!r}: expected ssh:HOST or srun:ARGS (or sbatch:ARGS), e.g. 'srun:-p gpu'")


def _build(args: argparse.Namespace, source: Path, work: Path) -> Path:
    """FILE.cu built alone (it needs a main()) with -lineinfo, so the report maps stalls to lines."""
    from kernelscope.analysis import application

    built = application.build_program(source, _options(args), work / source.stem)
    if built.returncode != 0:
        raise UsageError(f"{source} does not build as a program on its own (exit {built.returncode}):\n"
                         f"{built.output[-2000:]}\n"
                         "Give the program to run after `--`, e.g. kernelscope profile gemm.cu -- ./build/app")
    return built.program


def _import(args: argparse.Namespace) -> int:
    from kernelscope.analysis import application

    if not args.report.is_file():
        raise UsageError(f"{args.report}: no such file")
    profile = application.import_report(args.report, args.source)
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
    from kernelscope.analysis.application import USER_ERRORS

    errors.extend(USER_ERRORS)
    return tuple(errors)


def _os_error(e: OSError) -> str:
    where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    what = f"{e.strerror}: {where}" if e.strerror and where else str(e)
    return (f"{what}. kernelscope could not read or write a file or folder it needs (its cache is in "
            f"$XDG_CACHE_HOME/kernelscope, else ~/.cache/kernelscope): check that it exists, is writable and "
            f"that the disk has free space")


def _join_option_values(argv: list[str]) -> list[str]:
    """`--flags "-O3"` as `--flags=-O3`: argparse takes a value starting with '-' for an option."""
    out, it = [], iter(argv)
    for a in it:
        if a in _VALUE_OPTIONS:
            nxt = next(it, None)
            out.append(a if nxt is None else f"{a}={nxt}")
        else:
            out.append(a)
    return out


_VALUE_OPTIONS = {"--flags"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    program = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = _parser()
    args = parser.parse_args(_join_option_values(argv[:len(argv) - len(program) - 1] if "--" in argv else argv))
    args.command_line = tuple(argv)
    if "--" in argv:
        if args.command != "profile":
            parser.error(f"`--` introduces the program to profile; `{args.command}` runs none")
        args.program = program
    handler = {"analyze": _analyze, "verify": _verify, "profile": _profile, "import": _import,
               "serve": _serve}[args.command]
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # never a traceback on user input; a bug still gets a clear line
        if isinstance(e, _known_errors()):  # looked up only now: the engine's imports wait for nvcc
            print(f"kernelscope: {e}", file=sys.stderr)
            return EXIT_USAGE
        if isinstance(e, OSError):  # the machine's files (a read-only cache folder, a full disk), not a bug
            print(f"kernelscope: {_os_error(e)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"kernelscope: internal error: {type(e).__name__}: {e}\n"
              "This is a bug in kernelscope; please report it with the file that triggered it.", file=sys.stderr)
        return EXIT_INTERNAL


def run() -> NoReturn:
    """The console script: `main`, then out without tearing the interpreter down.

    An analysis leaves a large heap (the program, its models, the engine's waves); freeing it
    object by object at exit cost ~0.1 s after the result was already printed, on every run. The
    process keeps nothing that needs a finaliser: its temporary files are removed by the `with`
    blocks that made them, its worker processes are gone, and the log is flushed here."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a reader that left (`| head`), a closed stream
        pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(code)


if __name__ == "__main__":
    run()
