"""The SASS of one cubin: the cubin decoder (`cubin/`) where its learned encoding tables cover
every instruction, else nvdisasm (`sass.py`). Kept apart from both so that the decoder, which
reuses the listing parser's records, and the parser do not import each other."""

from __future__ import annotations

import os
from pathlib import Path

from ..process import CancelToken
from .cubin.listing import decode_cubin
from .instructions import SassModule
from .sass import DisassemblyError, demangle, disassemble, with_demangled_names


def read_sass(cubin: bytes, cubin_path: Path, nvdisasm: Path, *, cancel: CancelToken | None = None,
              cxxfilt: Path | None = None, timeout: float = 120.0) -> SassModule:
    """The SASS of one cubin: decoded from its own bytes (`cubin.listing`, ~10 ms) where the
    learned encoding tables cover every instruction, else from one nvdisasm run (~0.35 s of
    start-up). Both give the same `SassModule`.

    With KERNELSCOPE_CHECK_DECODER=1 in the environment, nvdisasm runs as well and any
    difference raises `DisassemblyError` (how the test suite's every cubin can be checked).
    """
    module = decode_cubin(cubin)
    if module is None:
        return disassemble(cubin_path, nvdisasm, cancel=cancel, cxxfilt=cxxfilt, timeout=timeout)
    if os.environ.get("KERNELSCOPE_CHECK_DECODER") == "1":
        listed = disassemble(cubin_path, nvdisasm, cancel=cancel, cxxfilt=cxxfilt, timeout=timeout)
        named = with_demangled_names(module, {f.mangled_name: f.name for f in listed.functions}
                                     | {s.mangled_name: s.name for f in listed.functions for s in f.subroutines})
        if named != listed:
            raise DisassemblyError(f"the cubin decoder disagrees with nvdisasm on {cubin_path}")
        return listed
    return _readable(module, cxxfilt, cancel)


def decoded_sass(cubin: bytes, *, cxxfilt: Path | None = None, cancel: CancelToken | None = None) -> SassModule | None:
    """The decoder's SASS of one cubin as `read_sass` gives it, or None where nvdisasm would be needed."""
    module = decode_cubin(cubin)
    return _readable(module, cxxfilt, cancel) if module is not None else None


def _readable(module: SassModule, cxxfilt: Path | None, cancel: CancelToken | None) -> SassModule:
    names = demangle([f.mangled_name for f in module.functions]
                     + [s.mangled_name for f in module.functions for s in f.subroutines], cxxfilt=cxxfilt, cancel=cancel)
    return with_demangled_names(module, names)
