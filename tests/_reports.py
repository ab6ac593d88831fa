"""The real Nsight Compute reports the importer is tested on (tests/data/ncu-reports/README.md
says where each came from)."""

from __future__ import annotations

from pathlib import Path

REPORTS = Path(__file__).resolve().parent / "data" / "ncu-reports"


def report(name: str) -> Path:
    path = REPORTS / name
    assert path.is_file(), f"{path} is missing from the repository"
    return path
