"""The errors front ends show as one message rather than as a bug (analysis/errors.py): each
stage's setup error is found where the stage now lives (a moved module once turned a missing
nvcc into "This is a bug in kernelscope")."""

from __future__ import annotations

from kernelscope.analysis.errors import USER_ERRORS


def test_every_stages_setup_error_is_a_user_error():
    names = {e.__name__ for e in USER_ERRORS}
    assert {"KernelscopeError", "ToolchainError", "CompileSetupError", "DisassemblyError", "ArchSpecError",
            "ReportError", "StaleReportError", "MeasurementError"} <= names
