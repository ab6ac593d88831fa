"""Build the user's program with `-cudart shared`, run it against the stand-in runtime
(`runtime/capture_cudart.cpp`, compiled with the machine's g++ and cached like the CUPTI shim),
and read back every launch it made.

This executes user code: callers gate it on a trusted workspace or a user-level setting, exactly
as they gate `profile` (server/settings.py). Contained: the program runs under a supervisor that
owns its whole process tree and kills all of it at the end (`supervise.py`), with limits on
memory, file size, CPU time and processes, and a time limit (the program stops itself with
SIGALRM; the supervisor kills its tree 5 s later). It gets an empty network namespace and a PID
namespace of its own where `unshare` allows them. At most a set number of launches per kernel
are recorded.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
import shutil
import struct
import sys
import tempfile
from functools import cache
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..files import read_regular, regular_size
from ..frontend.compile import comment_spans, device_body_spans
from ..frontend.kernel_names import mangled_base_name
from ..frontend.toolchain import Toolchain
from ..frontend.treesitter import parser
from ..process import CancelToken, ToolTimeout, run_tool
from .layout import kparam_sizes
from .libraries import imported_symbols, stand_ins
from .supervise import Limits, user_tasks

SUPERVISOR = Path(__file__).parent / "supervise.py"

RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_SOURCE = RUNTIME_DIR / "capture_cudart.cpp"
EXPORTS = RUNTIME_DIR / "exports.map"
CAPTURE_FORMAT = 1  # bump when a record's meaning changes: cached captures are keyed by it


class CaptureError(Exception):
    def __init__(self, message: str, hint: str = "", output: str = ""):
        super().__init__(message)
        self.hint = hint
        self.output = output


@dataclass(frozen=True)
class CapturedLaunch:
    kernel: str  # mangled device name
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    stream: int
    api: str  # "<<<>>>", "cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchCooperativeKernel"
    args: tuple[bytes, ...] | None  # one entry per parameter, None when the layout is unknown
    allocation_bytes: tuple[int | None, ...]  # per argument: size of the cudaMalloc it points into

    def scalar(self, index: int, size: int | None = None, signed: bool = True) -> int | None:
        """Argument `index` read as a little-endian integer (the CUDA ABI on x86-64 and aarch64)."""
        if self.args is None or index >= len(self.args):
            return None
        raw = self.args[index]
        if size is not None and len(raw) != size or len(raw) not in (1, 2, 4, 8):
            return None
        return int.from_bytes(raw, "little", signed=signed)

    def real(self, index: int) -> float | None:
        if self.args is None or index >= len(self.args) or len(self.args[index]) not in (4, 8):
            return None
        raw = self.args[index]
        return struct.unpack("<f" if len(raw) == 4 else "<d", raw)[0]


@dataclass(frozen=True)
class Capture:
    launches: tuple[CapturedLaunch, ...]
    counts: dict[str, int]  # mangled name -> launches made (above the recording cap too)
    finished: bool  # False: the program was stopped (time limit) or crashed; what it recorded stands
    exit_code: int
    output: str  # the program's last output, for messages

    def of(self, kernel: str) -> tuple[CapturedLaunch, ...]:
        """Launches of a kernel by mangled name or by base name."""
        return tuple(x for x in self.launches if x.kernel == kernel or mangled_base_name(x.kernel) == kernel)

    def configurations(self, kernel: str) -> dict[tuple, int]:
        """(grid, block, shared bytes, argument bytes) -> launches recorded with it."""
        out: dict[tuple, int] = {}
        for x in self.of(kernel):
            key = (x.grid, x.block, x.shared_bytes, x.args)
            out[key] = out.get(key, 0) + 1
        return out


def parse_records(lines: Iterable[str], sizes: dict[str, tuple[int, ...]]) -> tuple[tuple[CapturedLaunch, ...], dict[str, int], bool]:
    """The runtime's JSON lines -> launches, launch counts per kernel, and whether it reached its end."""
    names: dict[str, str] = {}
    allocations: list[tuple[int, int]] = []
    launches: list[CapturedLaunch] = []
    counts: dict[str, int] = {}
    ended = False
    for raw in lines:
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a line cut short by a killed program
        t = rec.get("t")
        if t == "register":
            names[rec["stub"]] = rec["name"]
        elif t == "malloc":
            allocations.append((_ptr(rec["ptr"]), int(rec["size"])))
        elif t == "launch":
            name = rec.get("name") or names.get(rec["stub"], rec["stub"])
            args = tuple(bytes.fromhex(h) for h in rec["args"]) if rec.get("args") is not None else None
            launches.append(CapturedLaunch(
                kernel=name, grid=tuple(rec["grid"]), block=tuple(rec["block"]), shared_bytes=int(rec["smem"]),
                stream=_ptr(rec["stream"]), api=rec["api"], args=args,
                allocation_bytes=tuple(_allocation(a, allocations) for a in args) if args is not None else ()))
            counts[name] = counts.get(name, 0) + 1
        elif t == "count":
            name = names.get(rec["stub"], rec["stub"])
            counts[name] = int(rec["launches"])
        elif t == "end":
            ended = True
    return tuple(launches), counts, ended


def _ptr(text: str) -> int:
    return 0 if text in ("(nil)", "0") else int(text, 16)


def _allocation(raw: bytes, allocations: Sequence[tuple[int, int]]) -> int | None:
    """Bytes from the pointer to the end of the recorded allocation it points into, if any."""
    if len(raw) != 8:
        return None
    p = int.from_bytes(raw, "little")
    for base, size in reversed(allocations):  # the latest allocation wins when freed memory is reused
        if base <= p < base + max(size, 1):
            return base + size - p
    return None


# --- building -------------------------------------------------------------------------------------


def _cache_dir() -> Path:
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("kernelscope")) / "capture"
    except ImportError:
        return Path.home() / ".cache" / "kernelscope" / "capture"


def cuda_include(nvcc: Path) -> Path:
    """The CUDA headers next to nvcc (a toolkit) or in the NVIDIA wheel."""
    candidates = [Path(nvcc).resolve().parent.parent / "include"]
    try:
        import nvidia

        candidates += [Path(r) / "cu13" / "include" for r in nvidia.__path__]
    except ImportError:
        pass
    for c in candidates:
        if (c / "cuda_runtime_api.h").is_file():
            return c
    raise CaptureError("No cuda_runtime_api.h next to nvcc or in the nvidia wheel", hint="pip install nvidia-cuda-runtime")


def build_runtime(nvcc: Path, *, out_dir: Path | None = None, cancel: CancelToken | None = None) -> Path:
    """The stand-in runtime as `<cache>/<key>/libcudart.so.13`, built once per source and headers."""
    include = cuda_include(nvcc)
    key = hashlib.sha256(b"\0".join([RUNTIME_SOURCE.read_bytes(), EXPORTS.read_bytes(),
                                     (include / "cuda_runtime_api.h").read_bytes()])).hexdigest()[:16]
    out = (out_dir or _cache_dir()) / f"runtime-{key}" / "libcudart.so.13"
    if out.is_file():
        return out
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        raise CaptureError("Launch capture needs a C++ compiler (g++) to build its runtime", hint="apt-get install g++")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"libcudart.{secrets.token_hex(4)}.tmp")
    # the version script names the node the program's imports ask for (`cudaMalloc@libcudart.so.13`)
    argv = [gxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-I", str(include), f"-Wl,--version-script={EXPORTS}",
            "-Wl,-soname,libcudart.so.13", "-o", str(tmp), str(RUNTIME_SOURCE)]
    result = run_tool(argv, timeout=300, cancel=cancel)
    if result.returncode != 0 or not tmp.is_file():
        raise CaptureError("Building the capture runtime failed", output=result.stderr[-4000:])
    tmp.replace(out)  # atomic: a concurrent build never sees half a library
    return out


def _real_cudart(nvcc: Path) -> Path | None:
    """The shared libcudart the program would load: a toolkit's lib64/ or the wheel's lib/."""
    top = Path(nvcc).resolve().parent.parent
    candidates = [top / "lib64" / "libcudart.so", top / "lib" / "libcudart.so",
                  top / "lib64" / "libcudart.so.13", top / "lib" / "libcudart.so.13"]
    try:
        import nvidia

        candidates += [Path(r) / "cu13" / "lib" / "libcudart.so.13" for r in nvidia.__path__]
    except ImportError:
        pass
    return next((c for c in candidates if c.is_file()), None)


def link_dir(nvcc: Path, runtime: Path) -> Path:
    """A folder whose `libcudart.so` satisfies `-lcudart`. The NVIDIA wheel ships only
    `libcudart.so.13` (no development symlink), so nvcc's own `-L` finds nothing to link with; the
    real runtime is preferred (a call the stand-in lacks still links), else the stand-in, which has
    the same soname."""
    target = _real_cudart(nvcc) or runtime
    d = runtime.parent / f"link-{hashlib.sha256(str(target).encode()).hexdigest()[:12]}"
    link = d / "libcudart.so"
    if not link.is_file():
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f"libcudart.{secrets.token_hex(4)}.tmp"
        tmp.symlink_to(target)
        tmp.replace(link)  # atomic, as for the runtime itself
    return d


@dataclass(frozen=True)
class Unit:
    """One translation unit of the program, with the flags its own compile adds (its
    compile_commands.json entry's) to the program's."""

    path: Path
    flags: tuple[str, ...] = ()


def build_program(nvcc: Path, units: Sequence[Unit], out: Path, arch: str, runtime: Path, flags: Sequence[str] = (),
                  cancel: CancelToken | None = None, timeout: float = 300) -> tuple[Path, ...]:
    """The whole program, host code included, linked against a shared cudart we can stand in for.
    Each unit is compiled on its own, so the libraries its objects import can be stood in for
    (libraries.py) before the link. Returns those stand-ins: they are preloaded at the run."""
    env = {**os.environ, "PATH": f"{Path(nvcc).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    base = [str(nvcc), f"-arch={arch}", "-cudart", "shared"]
    objects = out.parent / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    built: list[Path] = []
    for i, unit in enumerate(units):
        obj = objects / f"{i}-{unit.path.stem}.o"
        result = run_tool([*base, *flags, *unit.flags, "-c", "-o", str(obj), str(unit.path)], cwd=unit.path.parent,
                          env=env, timeout=timeout, cancel=cancel)
        if result.returncode != 0:
            raise CaptureError(f"Compiling {unit.path.name} for capture failed{_last_lines(result)}",
                               hint="Check that it compiles with nvcc and the analysis flags, or set a capture command",
                               output=(result.stdout + result.stderr)[-4000:])
        built.append(obj)
    all_flags = [*flags, *(f for u in units for f in u.flags)]
    stand_ins_dir = out.parent / "libraries"
    libraries = stand_ins(imported_symbols(built, cancel=cancel), all_flags, stand_ins_dir, cancel=cancel)
    argv = [*base, "-L", str(link_dir(nvcc, runtime)), *(["-L", str(stand_ins_dir)] if libraries else []),
            *(str(o) for o in built), *_link_flags(all_flags), "-o", str(out)]
    result = run_tool(argv, cwd=units[0].path.parent, env=env, timeout=timeout, cancel=cancel)
    if result.returncode != 0:
        names = ", ".join(u.path.name for u in units)
        if re.search(r"undefined reference to `main'", result.stdout + result.stderr):
            raise CaptureError(f"{names} has no main(): capture needs a main() to run",
                               hint="Capture a file whose program has one, or the file that #includes this one",
                               output=(result.stdout + result.stderr)[-4000:])
        raise CaptureError(f"Linking {names} for capture failed{_last_lines(result)}",
                           hint="Add the program's other files or libraries to the analysis flags (-l, -L), "
                                "or list them in compile_commands.json",
                           output=(result.stdout + result.stderr)[-4000:])
    return libraries


def _link_flags(flags: Sequence[str]) -> list[str]:
    """The flags without `-x LANGUAGE`, which would make nvcc read the objects as sources."""
    out: list[str] = []
    skip = False
    for f in flags:
        if skip:
            skip = False
        elif f == "-x" or f == "--x":
            skip = True
        elif not f.startswith(("-x=", "--x=")):
            out.append(f)
    return out


def _last_lines(result, n: int = 6) -> str:
    """The tool's last lines, for the message itself: the error a build ends with is the one to read."""
    lines = [ln.rstrip() for ln in (result.stdout + result.stderr).splitlines() if ln.strip()]
    return "".join(f"\n  {ln[:300]}" for ln in lines[-n:])


# --- running --------------------------------------------------------------------------------------


def default_limits(time_limit: float) -> Limits:
    """What a captured program may use: no more address space than the machine has memory (the
    stand-in runtime's device memory is host memory, mapped lazily), files up to 1 GiB, the CPU
    time one core gives in the time limit and its 5 s of grace, and 256 tasks (4 per core where
    that is more: threads count) more than the user already runs (RLIMIT_NPROC counts them all)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Limits(address_space_bytes=memory, file_bytes=1 << 30, cpu_seconds=math.ceil(time_limit) + 5,
                  processes=user_tasks() + max(256, 4 * (os.cpu_count() or 1)))


@dataclass(frozen=True)
class Containment:
    """How long, how far and how contained the user's program runs under capture (a part of the
    capture's cache key). `namespaces=False` runs it without the network and PID namespaces even
    where the kernel allows them."""

    time_limit: float = 20.0  # seconds of wall-clock time
    launches_per_kernel: int = 64  # launches recorded per kernel; the runtime counts the rest
    limits: Limits | None = None  # None: default_limits(time_limit)
    namespaces: bool = True


def capture_program(toolchain: Toolchain, source: Path, *, arch: str = "sm_90", flags: Sequence[str] = (),
                    argv: Sequence[str] = (), sm_count: int = 132, cache_dir: Path | None = None,
                    cancel: CancelToken | None = None, units: Sequence[Unit] = (),
                    containment: Containment = Containment()) -> Capture:
    """Build `source` with its main() and the program's other translation units `units` with the
    toolchain's nvcc, run it with the stand-in runtime (as a GPU `arch` of `sm_count` SMs), and
    return its launches. Captures are cached by the program's inputs, the arguments and the
    containment."""
    source = source.resolve()
    nvcc, cuobjdump = toolchain.nvcc, toolchain.cuobjdump
    time_limit, launches_per_kernel = containment.time_limit, containment.launches_per_kernel
    limits, namespaces = containment.limits, containment.namespaces
    cache = cache_dir or _cache_dir()
    limits = limits or default_limits(time_limit)
    runtime = build_runtime(nvcc, out_dir=cache, cancel=cancel)
    # nvcc embeds a random module id in every binary, so two builds of one source never share a
    # digest; the key is what the binary is built from (the source and its quoted includes), how,
    # and how it is run
    program = [Unit(source), *(Unit(u.path.resolve(), tuple(u.flags)) for u in units)]
    digest = hashlib.sha256(b"\0".join([*(b for u in program for b in _inputs(u.path)), runtime.read_bytes(), json.dumps(
        [str(nvcc), [(str(u.path), list(u.flags)) for u in program], arch, list(flags), list(argv), time_limit, launches_per_kernel, sm_count, CAPTURE_FORMAT,
         limits.address_space_bytes, limits.file_bytes, limits.cpu_seconds]).encode()
    ])).hexdigest()[:24]
    cached = cache / "runs" / f"{digest}.jsonl"
    if cached.is_file():
        meta, sizes_line, *lines = cached.read_text().splitlines()
        m = json.loads(meta)
        launches, counts, ended = parse_records(lines, {k: tuple(v) for k, v in json.loads(sizes_line).items()})
        return Capture(launches, counts, ended and m["exit"] == 0, m["exit"], m["output"])
    with tempfile.TemporaryDirectory(prefix="kernelscope-capture-") as tmpdir:
        tmp = Path(tmpdir)
        binary = tmp / "program"
        libraries = build_program(nvcc, program, binary, arch, runtime, flags, cancel=cancel)
        dump = run_tool([str(cuobjdump), "-elf", str(binary)], timeout=120, cancel=cancel)
        sizes = kparam_sizes(dump.stdout)
        params = tmp / "params.txt"
        params.write_text("".join(f"{k} {' '.join(map(str, v))}\n" for k, v in sizes.items()))
        records = tmp / "records.jsonl"
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
        # the program's own variables, set by `env` right before it: the runtime would arm its alarm
        # and signal handlers in any process it were preloaded into (the supervisor, `unshare`)
        program_env = {
            "LD_LIBRARY_PATH": os.pathsep.join([str(runtime.parent), *{str(x.parent) for x in libraries},
                                                env.get("LD_LIBRARY_PATH", "")]),
            # preloaded, they win over an rpath to the real runtime or a real library
            "LD_PRELOAD": ":".join([str(runtime), *map(str, libraries)]),
            "KERNELSCOPE_CAPTURE_OUT": str(records), "KERNELSCOPE_CAPTURE_PARAMS": str(params),
            "KERNELSCOPE_CAPTURE_CAP": str(launches_per_kernel),
            "KERNELSCOPE_CAPTURE_SECONDS": str(max(1, int(time_limit))), "KERNELSCOPE_CAPTURE_SMS": str(sm_count),
            "KERNELSCOPE_CAPTURE_CC": arch.removeprefix("sm_").rstrip("a"),
        }
        status = tmp / "status.json"
        config = {"deadline": time_limit + 5, "status": str(status), "parent": os.getpid(),
                  "limits": {k: v for k, v in vars(limits).items() if v is not None}}
        run = [sys.executable, "-I", str(SUPERVISOR), json.dumps(config), "--",
               *(_namespaces() if namespaces else ()), shutil.which("env") or "/usr/bin/env",
               *(f"{k}={v}" for k, v in program_env.items()), str(binary), *argv]
        try:
            # the supervisor stops itself at its deadline; this one, later, is for a supervisor that hangs
            result = run_tool(run, cwd=source.parent, env=env, timeout=time_limit + 20, cancel=cancel, stop_grace=5)
            (code, timed_out), output = _outcome(status, result.returncode), (result.stdout + result.stderr)[-2000:]
            if timed_out:
                output = f"{output}\nstopped after {time_limit + 5:g} s".lstrip()
        except ToolTimeout:
            code, output = -9, f"stopped after {time_limit + 20:g} s"
        lines = records.read_text().splitlines() if records.is_file() else []
        if not lines:
            raise CaptureError(f"{source.name} ran but the capture runtime recorded nothing",
                               hint="The program may load libcudart itself or link it statically", output=output)
        cached.parent.mkdir(parents=True, exist_ok=True)
        part = cached.with_suffix(f".{secrets.token_hex(4)}.tmp")
        part.write_text("\n".join([json.dumps({"exit": code, "output": output}), json.dumps(sizes), *lines]) + "\n")
        part.replace(cached)
        launches, counts, ended = parse_records(lines, sizes)
        return Capture(launches, counts, ended and code == 0, code, output)


#: a space that separates no two words: beside punctuation or a line end, except before `(`, where
#: `#define A (x)` and `#define A(x)` are two macros
_TOKEN_GAP = re.compile(rb"(?<=[^A-Za-z0-9_\n]) | (?=[^A-Za-z0-9_\n(])|(?<=\n) | (?=\n)")


def _inputs(source: Path, depth: int = 0) -> list[bytes]:
    """What the program's launches depend on, from the source and the files it includes with
    quotes, recursively (bounded depth): each with the bodies of its kernels and device-only
    functions blanked. The stand-in runtime never runs device code, so an edit inside a kernel
    (the usual edit of a performance session) finds the capture of the version before it, and
    capture by default costs one build per change of host code, not one per save."""
    text = read_regular(source)
    tree = parser().parse(text)
    kept, at = [], 0
    # cut out, not blanked: a longer body is no other program; nor is a comment
    for start, end in sorted(device_body_spans(text, tree) + comment_spans(text, tree)):
        if start >= at:  # a comment inside a cut body is cut with it
            kept.append(text[at:start])
            at = end
    # and the spacing between tokens: one space where two words meet, none beside punctuation; line
    # ends stay (they end a #define), blank lines go
    spaced = re.sub(rb"[ \t\f\v]+", b" ", b"".join(kept) + text[at:])
    out = [re.sub(rb"\n(?:[ \r]*\n)+", b"\n", _TOKEN_GAP.sub(b"", spaced))]
    if depth < 8:
        for m in re.finditer(rb'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            f = source.parent / m.group(1).decode(errors="replace")
            if regular_size(f) is not None:
                try:
                    out += _inputs(f, depth + 1)
                except OSError:  # over the size limit: the compile says what it makes of it
                    out.append(str(f).encode())
    return out


def _outcome(status: Path, fallback: int) -> tuple[int, bool]:
    """The program's exit code, or minus the signal that ended it (subprocess's convention), and
    whether the supervisor's deadline ended it."""
    try:
        out = json.loads(status.read_text())
    except (OSError, ValueError):
        return fallback, False
    return (out["exit_code"] if out["exit_code"] is not None else -int(out["signal"])), bool(out["timed_out"])


@cache
def _namespaces() -> tuple[str, ...]:
    """The `unshare` prefix that gives user code no network and its own PIDs (whose first process
    takes every other with it when it ends), or only no network, or nothing, as the kernel allows
    unprivileged user namespaces."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    for prefix in ([unshare, "--user", "--map-current-user", "--net", "--pid", "--fork", "--kill-child"],
                   [unshare, "--user", "--map-current-user", "--net"]):
        try:
            if run_tool([*prefix, "true"], timeout=10).returncode == 0:
                return tuple(prefix)
        except (OSError, ToolTimeout):
            continue
    return ()
