"""Launch capture without a GPU: run the user's program against a stand-in CUDA runtime that
records launches instead of executing them (docs/emulator.md, "Launch capture")."""

from .capture import Capture, CapturedLaunch, CaptureError, Containment, capture_program, parse_records
from .layout import kparam_sizes

__all__ = ["Capture", "CapturedLaunch", "CaptureError", "Containment", "capture_program", "parse_records", "kparam_sizes"]
