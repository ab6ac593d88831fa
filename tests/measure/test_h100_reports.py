"""The reports kernelscope itself captured on an H100 (tests/data/ncu-reports/h100/README.md):
every program of examples/ and tests/data/real/, profiled by `kernelscope profile` on a GPU.

They run here without a GPU: each must be the report of the file in this repository (the source
ncu embedded is checked against it), a program with several kernels must have each kernel's first
launch (not only its first kernel's), and the analysis must put a measured time on each kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelscope.analysis.machine.arch import launch_overhead, load_arch_specs
from kernelscope.analysis.measure.ncu_report import base_name, load_ncu_report
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "tests" / "data" / "ncu-reports" / "h100"
REAL = REPO / "tests" / "data" / "real"


def source_of(report: Path) -> Path:
    group, _, rest = report.stem.partition("__")
    if group == "examples":
        return REPO / "examples" / f"{rest}.cu"
    return REAL / (rest.replace("__", "/") + ".cu")


REPORTS = sorted(p for p in H100.glob("*__*.ncu-rep"))


def test_every_program_has_its_report():
    """31 programs: the 8 examples and every real program but the multi-GPU Jacobi."""
    assert len(REPORTS) == 31
    assert all(source_of(r).is_file() for r in REPORTS), [r.name for r in REPORTS if not source_of(r).is_file()]


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.stem)
def test_each_report_is_of_the_file_here_and_measured_on_an_h100(report):
    p = load_ncu_report(report, source=source_of(report))  # StaleReportError if the embedded source differs
    assert p.provenance.device == "NVIDIA H100 80GB HBM3" and p.provenance.arch == "sm_90"
    assert p.kernels and all(k.duration_s > 0 for k in p.kernels)
    # no kernel runs faster than the empty kernel the launch overhead was measured with, give or
    # take the spread between launches of that empty kernel (2.18-2.24 us: 3 %)
    overhead, on = launch_overhead(load_arch_specs().device("H100 SXM"))
    assert on is not None and all(k.duration_s >= 0.97 * overhead for k in p.kernels), \
        [(k.name, k.duration_s) for k in p.kernels]


def test_a_program_of_several_kernels_has_the_first_launch_of_each():
    """`--launch-count 1` used to mean ncu's `-c 1`: one launch over all kernels, the first
    kernel's. transpose.cu launches five kernels 101 times each; finite-difference.cu six."""
    transpose = load_ncu_report(H100 / "real__code-samples__transpose.ncu-rep")
    assert sorted(base_name(k.name) for k in transpose.kernels) == sorted(
        ["copy", "copySharedMem", "transposeNaive", "transposeCoalesced", "transposeNoBankConflicts"])
    fd = load_ncu_report(H100 / "real__code-samples__finite-difference.ncu-rep")
    assert len({base_name(k.name) for k in fd.kernels}) == len(fd.kernels) == 6


def test_the_analysis_puts_the_measured_time_beside_the_model_for_every_kernel(toolchain):
    report = H100 / "real__code-samples__transpose.ncu-rep"
    r = analyze(source_of(report), AnalysisOptions(arch="sm_90", device="H100 SXM"), toolchain=toolchain,
                measured_report=report, depth="quick")
    launched = {k.name: k for k in r.kernels if k.measured_duration_s}
    assert len(launched) == 5
    for k in launched.values():
        assert k.predicted_duration_s and k.predicted_duration_s > 0
        # the model emulated the launch the report recorded: 1024 x 1024 floats, tiles of 32 x 8 threads
        assert tuple(k.launch.grid) == (32, 32, 1) and tuple(k.launch.block) == (32, 8, 1)
    # naive transposition (strided stores) measured slower than the copy it is compared with
    naive = next(k for n, k in launched.items() if n.startswith("transposeNaive"))
    copy = next(k for n, k in launched.items() if n.startswith("copy("))
    assert naive.measured_duration_s > 2 * copy.measured_duration_s


def test_the_readme_lists_every_report():
    text = (H100 / "README.md").read_text()
    assert all(r.name in text for r in REPORTS)


def test_a_prediction_beside_a_measurement_shows_what_it_rests_on(toolchain):
    """learn-cuda-programming's sgemm assigns K = 2048 in main() after its declaration. Without
    capture the model once ran the K loop a default 64 trips and predicted 0.09x the H100's time,
    and said nothing beside the report's notes. Now the late assignment folds (issue 31), the loop
    runs its 2048 / 16 SASS iterations, and the model's own defaults (its emulator fallbacks) still
    follow the report's notes (the launch stays the report's)."""
    report = H100 / "real__learn-cuda-programming__sgemm.ncu-rep"
    r = analyze(source_of(report), AnalysisOptions(arch="sm_90", device="H100 SXM",
                                                   flags=(f"-I{REAL / 'cuda-samples' / 'Common'}",)),
                toolchain=toolchain, measured_report=report, depth="quick")
    (k,) = r.kernels
    assert k.measured_duration_s and k.predicted_duration_s
    got = {a.name: a for a in k.assumptions}
    assert (got["K"].value, got["K"].source) == ("2048", "launch_site")
    trips = [a for a in k.assumptions if a.name.startswith("trip_count")]
    assert trips and all(a.source != "default" for a in trips)
    assert 0.5 < k.predicted_duration_s / k.measured_duration_s < 2.0
    assert any(a.source == "default" and a.name.startswith("latency.") for a in k.assumptions)
    assert not any(a.name in ("grid", "block") and a.detail == "what-if" for a in k.assumptions)


def test_a_report_is_read_once_per_file_version(tmp_path):
    """The CLI reads a report's GPU before analysing with it: each read is a child process, so the
    second is the first's result; a report written anew is read anew."""
    copy = tmp_path / "saxpy.ncu-rep"
    copy.write_bytes((H100 / "saxpy.ncu-rep").read_bytes())
    first = load_ncu_report(copy)
    assert load_ncu_report(copy) is first
    copy.write_bytes(copy.read_bytes())  # same bytes, a new version of the file
    os.utime(copy, ns=(1, 1))
    again = load_ncu_report(copy)
    assert again is not first  # read anew (its time is the new file time), the same launches in it
    assert [(k.kernel, k.duration_s, k.pcs) for k in again.kernels] == [(k.kernel, k.duration_s, k.pcs) for k in first.kernels]


def test_the_reports_hold_the_memory_hierarchy_s_hit_rates():
    """Recaptured on 2026-11-27 with ncu's Memory Workload Analysis sections (issue 33): each kernel
    carries its L1 and L2 sector hit rates, which benchmarks/measured.py compares with the model's.
    The saxpy report was captured before, without the sections: it has none, and says nothing."""
    for report in REPORTS:
        for k in load_ncu_report(report).kernels:
            assert set(k.hit_rates) == {"l1", "l2"}, (report.name, k.name)
            assert all(0.0 <= v <= 1.0 for v in k.hit_rates.values())
    assert all(not k.hit_rates for k in load_ncu_report(H100 / "saxpy.ncu-rep").kernels)
    # the naive SGEMM rereads A and B from L2: nearly every sector hits there
    (naive,) = load_ncu_report(H100 / "examples__sgemm_naive.ncu-rep").kernels
    assert naive.hit_rates["l2"] > 0.9
