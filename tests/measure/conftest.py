"""Real Nsight Compute reports captured by others on real GPUs (tests/data/ncu-reports/README.md)."""

from __future__ import annotations

import pytest
from _reports import report


@pytest.fixture
def rtx3080():
    return report("rtx3080-monte-carlo-pi.ncu-rep")


@pytest.fixture
def gtx1660():
    return report("gtx1660s-naive-gemm.ncu-rep")


@pytest.fixture
def a100():
    return report("a100-node-calc.ncu-rep")
