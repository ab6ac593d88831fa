"""The whole static pipeline for one file: compile -> program -> facts -> profile -> advice.

`analyze` is the single entry point the CLI and the language server call. It is a pure
function of (file content, options, toolchain) apart from running the compiler, so its
result can be cached under `AnalysisOptions.cache_key`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

from .options import AnalysisOptions
from .process import CancelToken
from .results import AnalysisResult

#: progress(stage, fraction) — fraction in 0..1 of the whole analysis
Progress = Callable[[str, float], None]


def source_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def analyze(source: Path, options: AnalysisOptions, *, cancel: CancelToken | None = None,
            progress: Progress | None = None) -> AnalysisResult:
    """Analyse the file on disk at `source` (editors analyse what was saved)."""
    raise NotImplementedError("pipeline under construction")
