"""This test process's own child processes, for the tests that no child is left behind."""

from __future__ import annotations

import os
from pathlib import Path


def children() -> set[int]:
    """This process's live child processes (every thread's), from /proc."""
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return out
