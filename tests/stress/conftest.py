"""Stress tests: sizes come from the environment so CI runs them bounded and a nightly run can go bigger.

KERNELSCOPE_STRESS_SCALE multiplies every size (default 1: the CI sizes, a few minutes in all on 2 cores).
Figures each test measured are appended to $KERNELSCOPE_STRESS_REPORT (JSON lines) when set;
docs/reliability.md quotes a real run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCALE = float(os.environ.get("KERNELSCOPE_STRESS_SCALE", "1"))


def scaled(n: int) -> int:
    return max(1, int(n * SCALE))


def report(test: str, **figures: Any) -> None:
    line = json.dumps({"test": test, **figures})
    print(line)
    if path := os.environ.get("KERNELSCOPE_STRESS_REPORT"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@pytest.fixture
def examples_ws(tmp_path: Path) -> Path:
    """The real example kernels in a fresh workspace."""
    root = tmp_path / "ws"
    root.mkdir()
    for f in (REPO / "examples").glob("*.cu"):
        shutil.copy(f, root / f.name)
    return root


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/stress/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.stress)
