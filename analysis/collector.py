"""The cycle collector while an analysis runs: young collections only.

An analysis builds a heap that lives until its result is made (the SASS, the program, the
decoded kernels, the profiles): ~230 MB of small objects for a 5,000-line file of 179 kernels.
CPython's full collections come each time the long-lived heap has grown by a quarter, so while
that heap is being built they walk it again and again: 7 full collections, 0.95 s of an 11.5 s
analysis of that file (`benchmarks/scaling.py --part shapes`, solver_5000), ~0.1 s of an
example's. Almost none of it is garbage: the heap is freed when the analysis ends.

While at least one analysis runs in the process, the collector's thresholds are raised so that
young objects are still collected (cycles made and dropped within a stage go) and full
collections wait until the last analysis ends; then the interpreter's thresholds come back. The
memory an analysis can hold is bounded by its budget, not by the collector (the solver file:
230 MB with and without this). A result does not depend on it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: generation 0 every 20,000 net allocations (CPython's default: 700), generation 1 every 100 of
#: those, the whole heap every 10 of those: for the solver file, 96 young collections (0.25 s)
#: instead of 1,047 with 95 of generation 1 and 7 full ones (1.2 s). Generation 1 every 20 young
#: collections instead of 100 still walked a stage's survivors 7 times (0.3 s more).
THRESHOLDS = (20_000, 100, 10)

_lock = threading.Lock()
_running = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def young_only() -> Iterator[None]:
    """Hold full collections off for the duration (nested and concurrent analyses share it)."""
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*THRESHOLDS)
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
