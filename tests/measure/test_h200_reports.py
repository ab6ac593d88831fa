"""The reports kernelscope captured on an H200 (tests/data/ncu-reports/h200/README.md): the same
31 programs as the H100 set, on the same GH100 compute with HBM3e at 4.8 TB/s and 60 MiB of L2.

Each must be the report of the file here, name a GPU the device catalogue knows (so a replay
models the H200, not a stand-in), and carry the hit rates benchmarks/measured.py compares."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.measure.ncu_report import load_ncu_report

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "ncu-reports" / "h200"
H100 = REPO / "tests" / "data" / "ncu-reports" / "h100"
REAL = REPO / "tests" / "data" / "real"
REPORTS = sorted(H200.glob("*__*.ncu-rep"))


def source_of(report: Path) -> Path:
    group, _, rest = report.stem.partition("__")
    return REPO / "examples" / f"{rest}.cu" if group == "examples" else REAL / (rest.replace("__", "/") + ".cu")


def test_the_set_is_the_h100_set_s_programs():
    assert len(REPORTS) == 31
    assert {r.name for r in REPORTS} == {r.name for r in H100.glob("*__*.ncu-rep")}
    text = (H200 / "README.md").read_text()
    assert all(r.name in text for r in REPORTS)


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.stem)
def test_each_report_is_of_the_file_here_measured_on_an_h200_the_catalogue_knows(report):
    p = load_ncu_report(report, source=source_of(report))  # StaleReportError if the embedded source differs
    assert p.provenance.device == "NVIDIA H200" and p.provenance.arch == "sm_90"
    assert load_arch_specs().device(p.provenance.device).key == "h200-sxm"
    assert p.kernels and all(k.duration_s > 0 for k in p.kernels)
    assert all(set(k.hit_rates) == {"l1", "l2"} for k in p.kernels)


def test_the_faster_memory_shows_in_the_measured_times():
    """The same streaming kernel on both GPUs: HBM3e at 4.8 TB/s against HBM3 at 3.35 TB/s moves the
    same bytes in less time (what the catalogue's two entries tell the model)."""
    (on_h200,) = load_ncu_report(H200 / "real__how-to-optimize-in-gpu__elementwise_add.ncu-rep").kernels
    (on_h100,) = load_ncu_report(H100 / "real__how-to-optimize-in-gpu__elementwise_add.ncu-rep").kernels
    assert on_h200.bytes["dram"] == pytest.approx(on_h100.bytes["dram"], rel=0.05)
    assert on_h200.duration_s < 0.85 * on_h100.duration_s
