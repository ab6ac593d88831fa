"""Shared fixtures. Tests run the real toolchain (pip wheels or a system CUDA), never mocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.frontend.toolchain import Toolchain, ToolchainError, locate_toolchain

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    try:
        return locate_toolchain()
    except ToolchainError as e:
        pytest.fail(f"the CUDA toolchain is a dependency and must be found: {e}")


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return REPO / "examples"
