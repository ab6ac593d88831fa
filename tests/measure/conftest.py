"""Real Nsight Compute reports captured by others on real GPUs (see ../shared/ncu-reports/README.md).

They live outside the repository, beside it; tests that need them skip when they are absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPORTS = Path(__file__).resolve().parents[2].parent / "shared" / "ncu-reports"


def report(name: str) -> Path:
    path = REPORTS / name
    if not path.is_file():
        pytest.skip(f"real report {name} not found in {REPORTS} (the shared test data sits beside the repository)")
    return path


@pytest.fixture
def rtx3080() -> Path:
    return report("rtx3080-monte-carlo-pi.ncu-rep")


@pytest.fixture
def gtx1660() -> Path:
    return report("gtx1660s-naive-gemm.ncu-rep")


@pytest.fixture
def a100() -> Path:
    return report("a100-node-calc.ncu-rep")
