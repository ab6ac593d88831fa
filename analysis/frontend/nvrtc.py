"""A file's device code compiled with NVRTC, ~10x faster than nvcc: the input of the quick stage
run ahead while nvcc compiles (`analysis/speculation.py`).

NVRTC's cubin is never a result of its own. Host code, host headers and the host compiler's
macros do not reach it, and its flags are a translation of nvcc's, so nothing proves from the
source that it equals nvcc's; what is run ahead on it is kept only when nvcc's cubin decodes to
the same SASS with the same resources (docs/toolchain.md, "NVRTC ahead of nvcc").
"""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .compile import blank_spans, host_function_spans, namespace_scope
from .resources import KernelResources, parse_resources
from .toolchain import Toolchain
from .treesitter import parser

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeviceCubin:
    cubin: bytes
    resources: tuple[KernelResources, ...]


@dataclass(frozen=True)
class DeviceCompile:
    """One NVRTC compile, ready to run. Run it in a child process: NVRTC compiles in the calling
    process and cannot be stopped, and a file can take it minutes (tests/data/lsp/slow_template.cu)."""

    source: bytes  # the device part (`device_part`)
    name: str  # the file's path: NVRTC writes it in the line table, as nvcc does
    options: tuple[str, ...]

    def __call__(self) -> DeviceCubin | None:
        """The cubin, or None on a compile error. Imports nothing: in a child forked while another
        thread imported, the import lock may be held for good."""
        result, program = _nvrtc.nvrtcCreateProgram(self.source, self.name.encode(), 0, [], [])
        if result != _nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None
        try:
            encoded = [o.encode() for o in self.options]
            (result,) = _nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
            _, size = _nvrtc.nvrtcGetProgramLogSize(program)
            output = bytearray(size)
            _nvrtc.nvrtcGetProgramLog(program, output)
            if result != _nvrtc.nvrtcResult.NVRTC_SUCCESS:
                return None
            _, size = _nvrtc.nvrtcGetCUBINSize(program)
            cubin = bytearray(size)
            _nvrtc.nvrtcGetCUBIN(program, cubin)
        finally:
            _nvrtc.nvrtcDestroyProgram(program)
        text = bytes(output).rstrip(b"\0").decode("utf-8", errors="replace")
        return DeviceCubin(cubin=bytes(cubin), resources=parse_resources(_as_nvcc_prints(text)))


_nvrtc = None  # cuda.bindings.nvrtc, loaded by `device_compile` before any compile runs
_loaded: Path | None = None  # the libnvrtc that `_nvrtc` calls: one per process, the first toolkit's


def device_compile(source: Path, data: bytes, arch: str, flags: Sequence[str], cwd: Path,
                   toolchain: Toolchain) -> DeviceCompile | None:
    """The NVRTC compile of `data`'s device code (`source` names it), or None where it is not
    worth trying: a flag NVRTC cannot take, no NVRTC in nvcc's own toolkit, another CUDA release."""
    root = toolkit_root(toolchain)
    include = root / "include"
    options = nvrtc_options(flags, arch, cwd, (source.parent, include, include / "cccl"))
    if options is None:
        return None
    library = toolkit_nvrtc(root)
    nvrtc = _bindings(library) if library is not None else None
    if nvrtc is None:
        return None
    result, major, minor = nvrtc.nvrtcVersion()
    # the same release's NVRTC and nvcc share their front end and ptxas; another release's may
    # schedule differently, and would only be compiled to be thrown away
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS or (major, minor) != toolchain.major_minor:
        return None
    return DeviceCompile(source=device_part(data, include), name=str(source), options=tuple(options))


def toolkit_root(toolchain: Toolchain) -> Path:
    """The folder of the toolkit that nvcc runs from: nvcc's own TOP, which a wrapper script
    (`/usr/local/bin/nvcc` exec-ing a toolkit's) or a symlink hides from nvcc's path."""
    nvcc = toolchain.nvcc
    try:
        mtime = nvcc.stat().st_mtime_ns
    except OSError:
        mtime = 0
    top = _dryrun_top(str(nvcc), mtime, tuple(sorted(toolchain.env.items())))
    return top if top is not None else nvcc.resolve().parent.parent


@lru_cache(maxsize=8)
def _dryrun_top(nvcc: str, mtime_ns: int, env: tuple[tuple[str, str], ...]) -> Path | None:
    # `--dryrun` prints the settings of nvcc.profile, TOP among them, and runs nothing (~10 ms)
    try:
        out = subprocess.run([nvcc, "--dryrun", "-cubin", "-x", "cu", os.devnull], env=dict(env), cwd=os.sep,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        log.debug("no TOP from %s --dryrun: %r", nvcc, e)
        return None
    for line in (out.stderr + out.stdout).splitlines():
        if line.startswith("#$ TOP="):
            return Path(line[len("#$ TOP="):].strip()).resolve()
    return None


def toolkit_nvrtc(root: Path) -> Path | None:
    """The NVRTC library a toolkit ships: `lib64/` (a system install), `lib/` (NVIDIA's wheels, whose
    NVRTC wheel installs beside nvcc's) or `targets/<triple>/lib/`; None when it ships none."""
    for folder in (root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib"))):
        found = sorted(p for p in folder.glob("libnvrtc.so.*") if p.is_file()) if folder.is_dir() else []
        if found:
            return found[0]
    return None


def _bindings(library: Path):
    """cuda.bindings.nvrtc calling `library`, or None when this process already calls another NVRTC.

    The bindings load NVRTC once per process through cuda.pathfinder, which takes a library already
    loaded before the wheels' own: loading the toolkit's first makes the bindings call it."""
    global _nvrtc, _loaded
    if _nvrtc is None:
        try:
            ctypes.CDLL(str(library), mode=os.RTLD_GLOBAL)
            from cuda.bindings import nvrtc
            from cuda.pathfinder import load_nvidia_dynamic_lib

            nvrtc.nvrtcVersion()  # loads the library here, and not in a forked child
            _loaded = Path(load_nvidia_dynamic_lib("nvrtc").abs_path).resolve()
        except (ImportError, OSError, RuntimeError) as e:  # a broken cuda-python install: nvcc alone then
            log.debug("no NVRTC: %s", e)
            return None
        _nvrtc = nvrtc
    if _loaded != library.resolve():
        log.debug("NVRTC %s is loaded; %s is not run ahead", _loaded, library)
        return None
    return _nvrtc


def device_part(data: bytes, cuda_include: Path) -> bytes:
    """`data` with its host functions and its host headers blanked (lines kept): what NVRTC can
    compile of a file that nvcc compiles whole. A `<header>` the CUDA include folder does not
    have (`<cstdio>`, `<vector>`) is a host compiler's, which NVRTC does not have."""
    tree = parser().parse(data)
    spans = host_function_spans(data, tree)
    for node in namespace_scope(tree.root_node):
        path = node.child_by_field_name("path") if node.type == "preproc_include" else None
        if path is not None and path.type == "system_lib_string":
            name = path.text.decode(errors="replace").strip("<>")
            if name in _HOST_API or not (cuda_include / name).is_file():
                spans.append((node.start_byte, node.end_byte))
    return blank_spans(data, spans)


#: the CUDA headers of host APIs (the driver's, graphics interop, the profiler's), which include the
#: host's C headers
_HOST_API = frozenset({"cuda.h", "cudaTypedefs.h", "cudaProfiler.h", "cudaProfilerTypedefs.h", "cuda_profiler_api.h",
                       "cudaGL.h", "cudaGLTypedefs.h", "cudaEGL.h", "cudaEGLTypedefs.h", "cudaVDPAU.h",
                       "cudaVDPAUTypedefs.h", "cuda_gl_interop.h", "cuda_egl_interop.h", "cuda_vdpau_interop.h"})
#: nvcc flags (with a value) that change only the host compile
_HOST_ONLY = ("-Xcompiler", "--compiler-options", "-ccbin", "--compiler-bindir", "-Xlinker", "--linker-options")
#: nvcc flags for the host compile alone, or that the options below already give
_NOTHING_TO_ADD = ("-g", "--debug", "-O0", "-O1", "-O2", "-O3", "-Wno-deprecated-gpu-targets", "-w",
                    "--disable-warnings", "-lineinfo", "--generate-line-info")
#: nvcc flags NVRTC takes as they are written
_SAME = ("--use_fast_math", "-use_fast_math", "--expt-relaxed-constexpr", "-expt-relaxed-constexpr",
         "--extended-lambda", "-extended-lambda", "--expt-extended-lambda", "-expt-extended-lambda", "-G",
         "--device-debug")
_SAME_PREFIX = ("-ftz=", "--ftz=", "-prec-div=", "--prec-div=", "-prec-sqrt=", "--prec-sqrt=", "-fmad=", "--fmad=",
                "-rdc=", "--relocatable-device-code=", "-std=", "--std=", "-maxrregcount=", "--maxrregcount=")


def nvrtc_options(flags: Sequence[str], arch: str, cwd: Path, include_dirs: Sequence[Path]) -> list[str] | None:
    """nvcc's device-side `flags` as NVRTC options, or None when one has no known NVRTC
    meaning (the run ahead is then not tried, rather than tried on a guess)."""
    # -default-device: what is left of the host side after `device_part` (declarations, namespace
    # scope variables) compiles as device code, as nvcc's device pass would take it
    out = [f"--gpu-architecture={arch}", "-lineinfo", "--ptxas-options=-v", "-default-device"]
    i = 0
    while i < len(flags):
        a = flags[i]
        value = flags[i + 1] if i + 1 < len(flags) else None
        if a in _HOST_ONLY:
            i += 2
            continue
        if a in _NOTHING_TO_ADD or a.startswith(("-Xcompiler=", "--compiler-options=", "-ccbin=", "-Xlinker=")):
            pass
        elif a in _SAME or a.startswith(_SAME_PREFIX):
            out.append(a)
        elif a in ("-D", "-U", "--define-macro", "--undefine-macro") and value is not None:
            out.append(("-U" if a in ("-U", "--undefine-macro") else "-D") + value)
            i += 1
        elif a.startswith(("-D", "-U")):
            out.append(a)
        elif a in ("-I", "-isystem", "--include-path", "--system-include") and value is not None:
            out.append(f"-I{cwd / value}")
            i += 1
        elif a.startswith("-I"):
            out.append(f"-I{cwd / a[2:]}")
        elif a in ("-std", "-maxrregcount", "--maxrregcount", "-rdc") and value is not None:
            out.append(f"{a}={value}")
            i += 1
        elif a in ("-Xptxas", "--ptxas-options") and value is not None:
            out.append(f"--ptxas-options={value}")
            i += 1
        else:
            return None
        i += 1
    # after the user's -I, as nvcc searches its own include folder after them
    return out + [f"-I{d}" for d in include_dirs]


def _as_nvcc_prints(log_text: str) -> str:
    """NVRTC's ptxas report with nvcc's line heads: NVRTC prefixes the continuation lines
    ("    128 bytes stack frame, ...") with "ptxas ." as well."""
    lines = []
    for line in log_text.splitlines():
        head, _, rest = line.partition(".")
        lines.append(f"    {rest.strip()}" if head.strip() == "ptxas" and rest.startswith(" ") else line)
    return "\n".join(lines)
