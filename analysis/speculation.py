"""The quick stage run ahead of nvcc, on NVRTC's cubin of the file's device code.

nvcc takes 0.4-0.6 s for one of the examples here; NVRTC compiles the same device code in
0.05-0.1 s. Everything the quick stage does after the compile (the program, one emulation per
kernel, the static facts) is a pure function of `context.ProgramInputs`: the SASS, ptxas's
resources and the compile's predefined macros. So while nvcc compiles, a thread compiles the
device code with NVRTC (`frontend/nvrtc.py`, in a forked child that a cancel kills) and runs the
quick stage on what it gives. When nvcc is done, `take` hands that work over only if nvcc's
cubin gave the very same inputs; otherwise it is dropped and the stage runs on nvcc's, as it
always did. The result is what nvcc's cubin alone gives either way; only when it comes changes.

A file whose run ahead was of no use (NVRTC could not compile it, its SASS differed, or nvcc was
first) is not run ahead for its next `SKIP_AFTER_MISS` analyses in this process.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .context import AnalysisContext, ProgramInputs
from .frontend.compile import compile_flags, nvcc_argv
from .frontend.toolchain import CompileCommand, Toolchain
from .process import CancelToken

if TYPE_CHECKING:
    from .stages import QuickStage

log = logging.getLogger(__name__)

#: analyses of a file not run ahead after one whose run ahead was of no use (in this process)
SKIP_AFTER_MISS = 8
_skips: dict[tuple, int] = {}
_skips_lock = threading.Lock()


class Speculation:
    """One file's quick stage, run on a thread while nvcc compiles the file."""

    def __init__(self, key: tuple, thread_args: tuple) -> None:
        self._key = key
        self._cancel = CancelToken()
        self._compiled = threading.Event()  # NVRTC's compile ended, whatever its outcome
        self._inputs_ready = threading.Event()  # `_inputs` is final
        self._inputs: ProgramInputs | None = None
        self._result: QuickStage | None = None
        self._thread = threading.Thread(target=self._run, args=thread_args, daemon=True, name="kernelscope-ahead")

    @classmethod
    def begin(cls, ctx: AnalysisContext, compile_command: CompileCommand | None) -> Speculation | None:
        """Start the run ahead of `ctx.path`, or None where none is tried: a measured profile or no
        emulation asked for, no fork to run NVRTC in, or a recent miss."""
        from .emulator.workers import can_fork

        source, options, toolchain = ctx.path, ctx.options, ctx.toolchain
        if not (options.budget.run_ahead and options.emulate and can_fork()):
            return None
        flags, cwd = compile_flags(source, options.flags, compile_command)
        key = (str(source), flags, options.arch, toolchain.version)
        with _skips_lock:
            if _skips.get(key, 0) > 0:
                _skips[key] -= 1
                return None
        ahead = cls(key, (ctx, flags, cwd))
        ahead._thread.start()
        return ahead

    def take(self, inputs: ProgramInputs) -> QuickStage | None:
        """The work run ahead, if it was made on `inputs` (nvcc's), waiting for it to end; else None."""
        if not self._compiled.is_set():  # nvcc was first: NVRTC is no faster on this file
            self._drop()
            return None
        self._inputs_ready.wait()
        if self._inputs is None or self._inputs != inputs:
            self._drop()
            return None
        self._thread.join()
        if self._result is not None:
            with _skips_lock:
                _skips.pop(self._key, None)
        return self._result

    def close(self) -> None:
        """Stop what is still running ahead. Returns once NVRTC's child process is gone; a quick
        run already in the engine ends in the background, unused (the engine has no stop)."""
        self._cancel.cancel()
        self._compiled.wait()

    def _drop(self) -> None:
        self._cancel.cancel()
        with _skips_lock:
            _skips[self._key] = SKIP_AFTER_MISS

    def _run(self, ctx: AnalysisContext, flags: tuple[str, ...], cwd: Path) -> None:
        start = time.perf_counter()
        source, data, options, toolchain = ctx.path, ctx.data, ctx.options, ctx.toolchain
        try:
            cubin = self._device_cubin(source, data, options.arch, flags, cwd, toolchain)
        finally:
            self._compiled.set()
        try:
            if cubin is None:
                return
            from .frontend.disassembly import decoded_sass
            from .stages import quick_stage

            module = decoded_sass(cubin.cubin, cancel=self._cancel)
            if module is None:  # nvdisasm would be needed, at ~0.35 s: nvcc is as near
                return
            argv = nvcc_argv(source, Path(f"{source.stem}.cubin"), options.arch, toolchain, flags)
            self._inputs = inputs = ProgramInputs.of(module, cubin.resources, argv, options.arch, toolchain)
            self._inputs_ready.set()
            self._result = quick_stage(replace(ctx, inputs=inputs), self._cancel, start)
        except Exception as e:  # noqa: BLE001 - dropped, cancelled or failed: nvcc's path runs either way
            log.debug("run ahead of %s stopped: %r", source, e)
        finally:
            self._inputs_ready.set()

    def _device_cubin(self, source: Path, data: bytes, arch: str, flags: tuple[str, ...], cwd: Path,
                      toolchain: Toolchain):
        from .emulator.budget import Ledger
        from .emulator.workers import fan_out
        from .frontend.nvrtc import device_compile

        try:
            job = device_compile(source, data, arch, flags, cwd, toolchain)
            if job is None:
                return None
            # a child of its own, which a cancel (`take` finding nvcc done) kills: an NVRTC compile
            # cannot be stopped in the process that runs it
            return fan_out([job], 1, Ledger(issues=0, deadline=math.inf, seconds=math.inf, cancel=self._cancel),
                           here=False)[0]
        except Exception as e:  # noqa: BLE001 - cancelled, or the child failed
            log.debug("NVRTC compile of %s stopped: %r", source, e)
            return None
