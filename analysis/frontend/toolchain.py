"""Finding the CUDA toolchain (nvcc, nvdisasm, cuobjdump) and the user's compile command.

One locator, one order (docs/toolchain.md): the explicit setting, the compiler named in
compile_commands.json, PATH, $CUDA_HOME/bin, then the pip wheels. nvdisasm is looked up
on its own because a system CUDA may ship nvcc without it (CUDA 13.0 in /usr/local/cuda
does), so a system nvcc can be paired with the wheel's nvdisasm.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..files import MAX_DATABASE_BYTES, compile_database_file, read_regular_text
from ..process import ToolTimeout, run_tool

Origin = Literal["setting", "compile_commands", "PATH", "CUDA_HOME", "pip wheel"]

INSTALL_HINT = ("Install the pip toolchain with `pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm "
                "nvidia-cuda-cuobjdump nvidia-cuda-crt nvidia-cuda-cccl nvidia-cuda-runtime`, "
                "or set `kernelscope.nvccPath` to an nvcc executable.")


class ToolchainError(Exception):
    """No usable toolchain; the message says what was searched and how to fix it."""


class Toolchain(BaseModel):
    model_config = ConfigDict(frozen=True)

    nvcc: Path
    nvdisasm: Path
    cuobjdump: Path | None
    version: str  # e.g. "13.5.37", from `nvcc --version`
    origin: Origin  # which rule found nvcc
    nvdisasm_origin: Origin | Literal["nvcc dir"]
    env: dict[str, str]  # environment to run the tools with; PATH starts with nvcc's own bin dir

    @property
    def bin_dir(self) -> Path:
        return self.nvcc.parent

    @property
    def major_minor(self) -> tuple[int, int]:
        parts = self.version.split(".")
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


class CompileCommand(BaseModel):
    """One compile_commands.json entry, reduced to what a `-cubin` compile of the same file needs."""

    model_config = ConfigDict(frozen=True)

    file: Path  # absolute
    directory: Path  # absolute; the compile's working directory
    compiler: str  # argv[0] as written (may be a bare name such as "nvcc")
    flags: tuple[str, ...]  # the user's flags minus output/mode/arch flags; -I/-isystem made absolute
    include_paths: tuple[Path, ...]
    system_include_paths: tuple[Path, ...]
    defines: tuple[str, ...]  # "NAME" or "NAME=VALUE"

    @property
    def is_nvcc(self) -> bool:
        return is_nvcc_name(self.compiler)


def is_nvcc_name(compiler: str) -> bool:
    return Path(compiler).name.split(".")[0] == "nvcc"


# ---------------------------------------------------------------------------------------------
# Flags: the user's flags are kept except those that choose the output or the target, which
# we set ourselves (-cubin -arch=sm_XX -o X).

_DROP_WITH_VALUE = {"-o", "--output-file", "-arch", "--gpu-architecture", "-gencode", "--generate-code",
                    "-code", "--gpu-code", "-MF", "-MT", "-MQ", "--dependency-output", "-odir",
                    "--output-directory"}
_DROP_ALONE = {"-c", "--compile", "-cubin", "--cubin", "-ptx", "--ptx", "-fatbin", "--fatbin", "-E",
               "--preprocess", "-M", "-MM", "-MD", "-MMD", "--generate-dependencies", "-lineinfo",
               "--generate-line-info", "-cuda", "--cuda", "-optix-ir", "--optix-ir", "-lib", "--lib",
               "-link", "--link", "-run", "--run", "-dlink", "--device-link", "-dryrun", "--dryrun",
               "-keep", "--keep", "-v", "--verbose"}
_DROP_PREFIX = ("-o=", "--output-file=", "-arch=", "--gpu-architecture=", "-gencode=", "--generate-code=",
                "-code=", "--gpu-code=", "-MF=", "-odir=", "--output-directory=")
_SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".o", ".obj")


def filter_flags(args: Sequence[str], source: Path | None = None, directory: Path | None = None) -> tuple[str, ...]:
    """The user's flags without output, mode and target flags, and without the source file."""
    out: list[str] = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a in _DROP_WITH_VALUE:
            skip = True
            continue
        if a in _DROP_ALONE or a.startswith(_DROP_PREFIX):
            continue
        if a == "-dc" or a == "--device-c":
            out.append("-rdc=true")  # -dc is -rdc=true plus -c; keep the relocatable-code half
            continue
        if not a.startswith("-") and a.endswith(_SOURCE_SUFFIXES) and (i == 0 or args[i - 1] not in _TAKES_VALUE):
            if source is None or _same_file(a, source, directory):
                continue
        out.append(a)
    return tuple(out)


_TAKES_VALUE = {"-I", "-isystem", "-D", "-U", "-include", "--pre-include", "-Xcompiler", "-Xptxas", "-Xlinker",
                "-Xnvlink", "-ccbin", "--compiler-bindir", "-std", "-maxrregcount", "--maxrregcount", "-L", "-l",
                "--options-file", "-optf", "-idirafter", "-iquote"}


def _same_file(arg: str, source: Path, directory: Path | None) -> bool:
    p = Path(arg)
    if not p.is_absolute() and directory is not None:
        p = directory / p
    try:
        return p.resolve() == source.resolve()
    except OSError:
        return False


def _split_value(args: Sequence[str], i: int, short: str, long: str | None) -> tuple[str | None, int]:
    """Return (value, extra args consumed) when args[i] is `short X`, `shortX`, `long X` or `long=X`."""
    a = args[i]
    for name in (short, long):
        if name is None:
            continue
        if a == name:
            return (args[i + 1], 1) if i + 1 < len(args) else (None, 0)
        if a.startswith(name + "="):
            return a[len(name) + 1:], 0
    if a.startswith(short) and len(a) > len(short) and short in ("-I", "-D", "-U"):
        return a[len(short):], 0
    return None, 0


#: flags whose value is another tool's command line: a -D there is the host compiler's, not nvcc's
_OTHER_TOOLS = {"-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options",
                "-Xnvlink", "--nvlink-options"}


def macro_flags(args: Sequence[str]) -> list[tuple[str, str | None]]:
    """(name, value) for each nvcc -D in `args` (value "1" when none is given) and (name, None)
    for each -U, in order."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        if args[i] in _OTHER_TOOLS:
            i += 2
            continue
        for short, long in (("-D", "--define-macro"), ("-U", "--undefine-macro")):
            value, n = _split_value(args, i, short, long)
            if value is not None:
                name, eq, text = value.partition("=")
                if name.strip():
                    out.append((name.strip(), None if short == "-U" else (text if eq else "1")))
                i += n
                break
        i += 1
    return out


def _absolutize_includes(flags: Sequence[str], directory: Path) -> tuple[tuple[str, ...], list[Path], list[Path], list[str]]:
    out: list[str] = []
    incs: list[Path] = []
    sys_incs: list[Path] = []
    defines: list[str] = []
    i = 0
    while i < len(flags):
        a = flags[i]
        inc, n = _split_value(flags, i, "-I", "--include-path")
        if inc is not None:
            p = _abs(inc, directory)
            incs.append(p)
            out.append(f"-I{p}")
            i += 1 + n
            continue
        sinc, n = _split_value(flags, i, "-isystem", "--system-include")
        if sinc is not None:
            p = _abs(sinc, directory)
            sys_incs.append(p)
            out += ["-isystem", str(p)]
            i += 1 + n
            continue
        d, n = _split_value(flags, i, "-D", "--define-macro")
        if d is not None:
            defines.append(d)
        out.append(a)
        if n:
            out.append(flags[i + 1])
        i += 1 + n
    return tuple(out), incs, sys_incs, defines


def _abs(p: str, directory: Path) -> Path:
    path = Path(p)
    return path if path.is_absolute() else directory / path


def parse_compile_command(entry: Mapping[str, object], base: Path) -> CompileCommand | None:
    """Turn one compile_commands.json entry into a CompileCommand; None when it is malformed."""
    directory = _abs(str(entry.get("directory") or base), base)
    file = entry.get("file")
    if not isinstance(file, str):
        return None
    source = _abs(file, directory)
    if isinstance(entry.get("arguments"), list):
        argv = [str(a) for a in entry["arguments"]]  # type: ignore[union-attr]
    elif isinstance(entry.get("command"), str):
        try:
            argv = shlex.split(entry["command"])  # type: ignore[arg-type]
        except ValueError:
            return None
    else:
        return None
    # Compiler launchers (ccache nvcc ...) are not the compiler.
    while argv and Path(argv[0]).name in ("ccache", "sccache", "distcc"):
        argv = argv[1:]
    if not argv:
        return None
    flags = filter_flags(argv[1:], source, directory)
    flags, incs, sys_incs, defines = _absolutize_includes(flags, directory)
    return CompileCommand(file=source, directory=directory, compiler=argv[0], flags=flags,
                          include_paths=tuple(incs), system_include_paths=tuple(sys_incs), defines=tuple(defines))


def find_compile_command(path: Path, compile_commands: Path | None) -> CompileCommand | None:
    """The entry for `path` in compile_commands.json (the file or its directory), or None (also
    where no database is given: `AnalysisOptions.compile_commands` unset): the first entry whose
    file resolves to `path` and whose command parses."""
    if compile_commands is None:
        return None
    db = _database(compile_commands)
    if db is None:
        return None
    try:
        target = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    for i in db.by_file.get(target, ()):
        cc = parse_compile_command(db.entries[i], db.base)
        if cc is not None:
            return cc
    return None


@dataclass(frozen=True)
class _Database:
    """A compile_commands.json as read at one (device, inode, mtime, size): its entries, and the
    indices of the entries of each file, by the file's real path, in the database's order."""

    stat: tuple[int, int, int, int]
    base: Path
    entries: list
    by_file: dict[str, tuple[int, ...]]

    @cached_property
    def commands(self) -> tuple[CompileCommand, ...]:
        """Every entry that parses, in order (a header's includers, a capture's build)."""
        parsed = (parse_compile_command(e, self.base) for e in self.entries if isinstance(e, dict))
        return tuple(cc for cc in parsed if cc is not None)


def database_commands(compile_commands: Path | None) -> tuple[CompileCommand, ...]:
    """The entries of the compile database a setting names (its file or folder) that parse."""
    db = _database(compile_commands) if compile_commands is not None else None
    return db.commands if db is not None else ()


#: databases read, by path: the server looks a file's entry up three times per analysis, and a
#: CMake project's database holds thousands (3,000 entries: 1.7 s a look-up when each was parsed
#: and resolved again); a database that changed on disk is read again
_DATABASES: dict[Path, _Database] = {}
_DATABASES_KEPT = 4
_DATABASES_LOCK = threading.Lock()


def _database(compile_commands: Path) -> _Database | None:
    # its entries' relative paths are resolved against its folder, wherever the process runs
    file = compile_database_file(compile_commands.absolute())
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return None
    stat = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    with _DATABASES_LOCK:
        db = _DATABASES.get(file)
        if db is not None and db.stat == stat:
            return db
        try:
            entries = json.loads(read_regular_text(file, MAX_DATABASE_BYTES))  # not a FIFO nor /dev/zero (files.py)
        except (OSError, ValueError):
            return None
        if not isinstance(entries, list):
            return None
        by_file: dict[str, list[int]] = {}
        for i, entry in enumerate(entries):
            source = _entry_file(entry, file.parent)
            if source is not None:
                by_file.setdefault(source, []).append(i)
        db = _Database(stat, file.parent, entries, {k: tuple(v) for k, v in by_file.items()})
        _DATABASES.pop(file, None)
        _DATABASES[file] = db
        while len(_DATABASES) > _DATABASES_KEPT:
            del _DATABASES[next(iter(_DATABASES))]
        return db


def _entry_file(entry: object, base: Path) -> str | None:
    """The real path of an entry's file (`parse_compile_command`'s `file`, resolved), or None."""
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        return None
    try:
        return os.path.realpath(_abs(entry["file"], _abs(str(entry.get("directory") or base), base)))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# Locating executables.

def _executable(p: Path) -> Path | None:
    return p if p.is_file() and os.access(p, os.X_OK) else None


def wheel_bin_dirs() -> list[Path]:
    """bin folders of the NVIDIA pip wheels: nvidia/cu13/bin (CUDA 13), nvidia/cuda_*/bin (CUDA 12)."""
    try:
        import nvidia  # namespace package installed by the nvidia-cuda-* wheels
    except ImportError:
        return []
    dirs: list[Path] = []
    for root in map(Path, getattr(nvidia, "__path__", [])):
        # Newest major first: cu13 before cu12 when both are installed.
        dirs += sorted((d / "bin" for d in root.glob("cu[0-9]*")), key=lambda d: d.parent.name, reverse=True)
        dirs += sorted(d / "bin" for d in root.glob("cuda_*"))
    return [d for d in dirs if d.is_dir()]


def _which(name: str, environ: Mapping[str, str]) -> Path | None:
    found = shutil.which(name, path=environ.get("PATH", ""))
    return Path(found) if found else None


def _tool_candidates(name: str, setting_dir: Path | None, cc_dir: Path | None, environ: Mapping[str, str],
                     search_wheels: bool) -> Iterator[tuple[Path, Origin]]:
    if setting_dir is not None:
        yield setting_dir / name, "setting"
    if cc_dir is not None:
        yield cc_dir / name, "compile_commands"
    p = _which(name, environ)
    if p is not None:
        yield p, "PATH"
    if environ.get("CUDA_HOME"):
        yield Path(environ["CUDA_HOME"]) / "bin" / name, "CUDA_HOME"
    if search_wheels:
        for d in wheel_bin_dirs():
            yield d / name, "pip wheel"


def _first(cands: Iterator[tuple[Path, Origin]]) -> tuple[Path, Origin] | None:
    for p, origin in cands:
        if _executable(p):
            return p, origin
    return None


def _setting_nvcc(setting: str) -> Path:
    p = Path(os.path.expanduser(setting))
    for cand in (p, p / "nvcc", p / "bin" / "nvcc"):
        if _executable(cand):
            return cand
    raise ToolchainError(f"kernelscope.nvccPath is set to '{setting}', which is not an nvcc executable "
                         f"(nor a folder holding bin/nvcc). Fix the setting or clear it to search PATH, "
                         f"CUDA_HOME and the pip wheels. {INSTALL_HINT}")


def _compile_command_nvcc(cc: CompileCommand, environ: Mapping[str, str]) -> Path | None:
    if not cc.is_nvcc:
        return None
    p = Path(cc.compiler)
    if p.is_absolute() or os.sep in cc.compiler:
        return _executable(p if p.is_absolute() else cc.directory / p)
    return _which(cc.compiler, environ)


def _tool_dirs(nvcc: Path) -> list[Path]:
    """nvcc's folder, and its resolved folder when nvcc is a symlink into a real toolkit."""
    dirs = [nvcc.parent]
    real = nvcc.resolve().parent
    if real != nvcc.parent:
        dirs.append(real)
    return dirs


def locate_toolchain(setting_nvcc: str | None = None, compile_command: CompileCommand | None = None,
                     environ: Mapping[str, str] | None = None, *, search_wheels: bool = True) -> Toolchain:
    """Find nvcc, nvdisasm and cuobjdump; raise ToolchainError with one actionable message."""
    environ = dict(os.environ if environ is None else environ)
    searched: list[str] = []
    found: tuple[Path, Origin] | None = None
    if setting_nvcc:
        found = (_setting_nvcc(setting_nvcc), "setting")
    if found is None and compile_command is not None:
        p = _compile_command_nvcc(compile_command, environ)
        searched.append(f"compile_commands.json compiler '{compile_command.compiler}'")
        if p is not None:
            found = (p, "compile_commands")
    if found is None:
        searched += ["PATH", "$CUDA_HOME/bin" if environ.get("CUDA_HOME") else "CUDA_HOME (unset)"]
        if search_wheels:
            searched.append("the nvidia pip wheels")
        found = _first(_tool_candidates("nvcc", None, None, environ, search_wheels))
    if found is None:
        raise ToolchainError(f"No nvcc found (searched {', '.join(searched)}). {INSTALL_HINT}")
    nvcc, origin = found
    nvdisasm_found = _find_beside("nvdisasm", nvcc, setting_nvcc, compile_command, environ, search_wheels)
    if nvdisasm_found is None:
        raise ToolchainError(f"Found nvcc at {nvcc} ({origin}) but no nvdisasm beside it, on PATH, in CUDA_HOME "
                             f"or in the pip wheels; kernelscope needs nvdisasm to read SASS. "
                             f"Install it with `pip install nvidia-cuda-nvdisasm`.")
    cuobjdump_found = _find_beside("cuobjdump", nvcc, setting_nvcc, compile_command, environ, search_wheels)
    env = dict(environ)
    # nvcc finds cicc/ptxas through its nvcc.profile, but a wrapper script or an older
    # toolkit may rely on PATH, so put nvcc's own folder(s) first.
    env["PATH"] = os.pathsep.join([*map(str, _tool_dirs(nvcc)), *filter(None, [environ.get("PATH", "")])])
    version = nvcc_version(nvcc, env)
    return Toolchain(nvcc=nvcc, nvdisasm=nvdisasm_found[0], cuobjdump=cuobjdump_found[0] if cuobjdump_found else None,
                     version=version, origin=origin, nvdisasm_origin=nvdisasm_found[1], env=env)


def _find_beside(name: str, nvcc: Path, setting: str | None, cc: CompileCommand | None,
                 environ: Mapping[str, str], search_wheels: bool) -> tuple[Path, Origin | Literal["nvcc dir"]] | None:
    for d in _tool_dirs(nvcc):
        if _executable(d / name):
            return d / name, "nvcc dir"
    cc_nvcc = _compile_command_nvcc(cc, environ) if cc is not None else None
    setting_dir = None
    if setting:
        try:
            setting_dir = _setting_nvcc(setting).parent
        except ToolchainError:
            pass
    return _first(_tool_candidates(name, setting_dir, cc_nvcc.parent if cc_nvcc else None, environ, search_wheels))


_VERSION_RE = re.compile(r"release \d+\.\d+, V(\d+\.\d+\.\d+)|release (\d+\.\d+)")


def nvcc_version(nvcc: Path, env: Mapping[str, str]) -> str:
    try:
        mtime = nvcc.stat().st_mtime_ns
    except OSError as e:
        raise ToolchainError(f"Cannot read {nvcc}: {e}. {INSTALL_HINT}") from None
    return _nvcc_version_cached(str(nvcc), mtime, tuple(sorted(env.items())))


@lru_cache(maxsize=32)
def _nvcc_version_cached(nvcc: str, mtime_ns: int, env: tuple[tuple[str, str], ...]) -> str:
    try:
        r = run_tool([nvcc, "--version"], env=dict(env), timeout=30)
    except (OSError, ToolTimeout) as e:
        raise ToolchainError(f"Running `{nvcc} --version` failed: {e}. {INSTALL_HINT}") from None
    m = _VERSION_RE.search(r.stdout + r.stderr)
    if r.returncode != 0 or m is None:
        raise ToolchainError(f"`{nvcc} --version` did not print a CUDA release (exit {r.returncode}); "
                             f"is it really nvcc? {INSTALL_HINT}")
    return m.group(1) or m.group(2)


def supported_archs(toolchain: Toolchain) -> frozenset[str] | None:
    """The sm_XX that this nvcc's ptxas can target (`nvcc --list-gpu-code`), or None if it cannot say."""
    try:
        mtime = toolchain.nvcc.stat().st_mtime_ns
    except OSError:
        return None
    return _list_gpu_code(str(toolchain.nvcc), mtime, tuple(sorted(toolchain.env.items())))


@lru_cache(maxsize=32)
def _list_gpu_code(nvcc: str, mtime_ns: int, env: tuple[tuple[str, str], ...]) -> frozenset[str] | None:
    try:
        r = run_tool([nvcc, "--list-gpu-code"], env=dict(env), timeout=30)
    except (OSError, ToolTimeout):
        return None
    archs = frozenset(line.strip() for line in r.stdout.splitlines() if line.strip().startswith("sm_"))
    # nvcc older than 11.0 has no --list-gpu-code; then ptxas itself will say.
    return archs if r.returncode == 0 and archs else None
