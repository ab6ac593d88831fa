"""The errors that mean "bad input or setup", not "bug": each carries one actionable message.

Front ends (the CLI, the language server) catch `USER_ERRORS` and show the message;
anything else is a bug and is reported as one.
"""

from __future__ import annotations


class KernelscopeError(Exception):
    """Base of every user-facing error raised by kernelscope.analysis."""


def _collect() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = [KernelscopeError]
    # Imported lazily so that a broken optional backend cannot break error reporting itself.
    for module, names in (
        ("frontend.toolchain", ("ToolchainError",)),
        ("frontend.compile", ("CompileSetupError",)),
        ("frontend.sass", ("DisassemblyError",)),
        ("machine.arch", ("ArchSpecError",)),
        ("measure.errors", ("MeasurementError", "ReportError", "StaleReportError")),
    ):
        try:
            mod = __import__(f"kernelscope.analysis.{module}", fromlist=list(names))
        except ImportError:
            continue
        found.extend(getattr(mod, n) for n in names if isinstance(getattr(mod, n, None), type))
    return tuple(found)


USER_ERRORS: tuple[type[BaseException], ...] = _collect()
