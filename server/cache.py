"""Analysis results by cache key: the engine's one cache (analysis/cache.py) over a size-bounded
directory, one sub-folder per result schema.

Keys are the scheduler's (the file and its local headers, the options, the toolchain's version and
the engine's own code and data). Only finished analyses reach `put`: a compile that timed out, was
killed or failed for a reason of the machine raises instead (frontend/compile.py).
"""

from __future__ import annotations

from pathlib import Path

from kernelscope.analysis.application import SCHEMA_VERSION, AnalysisResult, DiskCache, Hit

__all__ = ["Hit", "MAX_ENTRY_BYTES", "ResultCache"]

#: the largest entry read or written: a result of a file with thousands of kernels is a few MB
MAX_ENTRY_BYTES = 64 * 2**20


class ResultCache(DiskCache[AnalysisResult]):
    def __init__(self, directory: Path, max_bytes: int, memory_entries: int = 64):
        # One sub-folder per schema version: an old server and a new one never read each other's entries.
        super().__init__(AnalysisResult, directory / f"results-v{SCHEMA_VERSION}", max_entry_bytes=MAX_ENTRY_BYTES,
                         max_bytes=max_bytes, memory_entries=memory_entries)
