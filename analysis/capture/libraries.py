"""Stand-in CUDA math libraries for a captured program: cuBLAS, cuBLASLt, cuRAND, cuFFT and
cuSPARSE calls return success without computing, as kernels are recorded without running.

A program that links `-lcublas` cannot run its library calls without a GPU (cublasCreate fails,
and programs check it), and many machines have no cuBLAS at all (it is not in the wheels
kernelscope installs). So each library the program imports from, or names with `-l`, is replaced
by a generated shared library with the same soname that defines exactly the functions the
program's objects leave undefined. Every one returns 0, the libraries' success status, and a
`...Create...` function stores a non-null handle through its first argument (cuBLAS, cuRAND and
cuSPARSE handles and descriptors are pointers; a handle passed back by value points at a buffer
it may harmlessly write). Error-string functions return a string.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..process import CancelToken, run_tool


@dataclass(frozen=True)
class Library:
    name: str  # as in `-l<name>`
    soname: str  # CUDA 13's
    prefix: str  # its functions' names start with it


# cublasLt before cublas: the longer prefix decides
LIBRARIES = (
    Library("cublasLt", "libcublasLt.so.13", "cublasLt"),
    Library("cublas", "libcublas.so.13", "cublas"),
    Library("curand", "libcurand.so.10", "curand"),
    Library("cufft", "libcufft.so.12", "cufft"),
    Library("cusparse", "libcusparse.so.12", "cusparse"),
)
_STRING = re.compile(r"(GetErrorString|GetStatusString|GetStatusName|GetErrorName)$")
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def library_of(symbol: str) -> Library | None:
    return next((lib for lib in LIBRARIES if symbol.startswith(lib.prefix)), None)


def imported_symbols(objects: Sequence[Path], cancel: CancelToken | None = None) -> set[str]:
    """C symbols the objects use and none of them defines (`nm`, from binutils like the linker)."""
    nm = shutil.which("nm")
    if nm is None:
        return set()
    undefined: set[str] = set()
    defined: set[str] = set()
    for obj in objects:
        for line in run_tool([nm, "-P", str(obj)], timeout=60, cancel=cancel).stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2 and _SYMBOL.match(parts[0]):
                (undefined if parts[1] == "U" else defined).add(parts[0])
    return undefined - defined


def stand_ins(symbols: set[str], flags: Sequence[str], out: Path, cancel: CancelToken | None = None) -> tuple[Path, ...]:
    """Build in `out` a stand-in for each library the program imports from or names with `-l`:
    `out/<soname>` with a `lib<name>.so` link for the linker. Returns the built libraries."""
    named = {f[2:] for f in flags if f.startswith("-l")} | {b for a, b in zip(flags, flags[1:]) if a == "-l"}
    wanted: dict[Library, set[str]] = {lib: set() for lib in LIBRARIES if lib.name in named}
    for s in symbols:
        if (lib := library_of(s)) is not None:
            wanted.setdefault(lib, set()).add(s)
    if not wanted:
        return ()
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return ()
    out.mkdir(parents=True, exist_ok=True)
    built = []
    for lib, names in wanted.items():
        source = out / f"{lib.name}.c"
        source.write_text(stub_source(lib, sorted(names)))
        target = out / lib.soname
        result = run_tool([cc, "-shared", "-fPIC", "-O1", f"-Wl,-soname,{lib.soname}", "-o", str(target), str(source)],
                          timeout=120, cancel=cancel)
        if result.returncode != 0:
            continue  # the link then says what is missing, as without stand-ins
        link = out / f"lib{lib.name}.so"
        link.unlink(missing_ok=True)
        link.symlink_to(lib.soname)
        built.append(target)
    return tuple(built)


def stub_source(lib: Library, names: Sequence[str]) -> str:
    """C source of a stand-in defining `names`."""
    lines = [f"/* kernelscope launch capture: a stand-in {lib.soname} (analysis/capture/libraries.py) */",
             "static char handle[4096];",
             'static const char message[] = "success (kernelscope capture stand-in)";']
    for n in names:
        if _STRING.search(n):
            lines.append(f"const char* {n}(void) {{ return message; }}")
        elif "Create" in n and lib.name != "cufft":  # a cufftHandle is an int: nothing to store
            lines.append(f"int {n}(void** out) {{ if (out) *out = handle; return 0; }}")
        else:
            lines.append(f"int {n}(void) {{ return 0; }}")
    return "\n".join(lines) + "\n"
