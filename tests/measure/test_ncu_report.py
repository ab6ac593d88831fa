"""The .ncu-rep importer against three real reports (RTX 3080, GTX 1660 SUPER, A100), no GPU needed."""

from __future__ import annotations

import shutil
from pathlib import Path

import ncu_report
import pytest

from kernelscope.analysis.measure.errors import ReportError, StaleReportError
from kernelscope.analysis.measure.ncu_report import (NO_LINEINFO, base_name, load_ncu_report, mangled_base_name,
                                                     match_kernels, per_pc)
from kernelscope.analysis.measure.source_check import SourceEvidence, check_source, text_sha256
from kernelscope.analysis.measure.stalls import stall_reason
from kernelscope.analysis.profile import StallReason


def actions(path: Path):
    ctx = ncu_report.load_report(str(path))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            yield rng.action_by_idx(a)


def notes(prov) -> list[str]:
    return [a.value for a in prov.assumptions]


# --- names, launch, duration --------------------------------------------------------------------


def test_names_launch_and_duration_of_every_report(rtx3080, gtx1660, a100):
    p = load_ncu_report(rtx3080)
    assert [k.name for k in p.kernels] == ["initRNG(curandStateXORWOW*, unsigned int)",
                                          "void computeValue<float>(unsigned int*, curandStateXORWOW*, unsigned int)"]
    assert [k.kernel for k in p.kernels] == ["_Z7initRNGP17curandStateXORWOWj",
                                            "_Z12computeValueIfEvPjP17curandStateXORWOWj"]
    assert p.provenance.device == "GeForce RTX 3080" and p.provenance.arch == "sm_86"
    g = load_ncu_report(gtx1660)
    assert len(g.kernels) == 2 and {k.kernel for k in g.kernels} == {"_Z10naive_gemmPKfS0_Pfiiiff"}
    k = g.kernels[0]
    assert k.name == "naive_gemm(const float *, const float *, float *, int, int, int, float, float)"
    assert (k.launch.grid, k.launch.block, k.registers_per_thread) == ((32, 32, 1), (32, 32, 1), 51)
    assert g.provenance.arch == "sm_75" and "GTX 1660 SUPER" in g.provenance.device
    a = load_ncu_report(a100)
    assert a.kernels[0].kernel == "_Z22nodeCalculationsKernelPjS_S_S_PdS_PyS1_S0_S_S_S_S_S1_S_S_"
    assert a.kernels[0].launch.grid == (32636, 1, 1) and a.provenance.arch == "sm_80"
    for prof in (p, g, a):
        assert prof.provenance.kind == "measured" and prof.provenance.tool == "ncu"
        for k in prof.kernels:
            assert k.duration_s > 0
            assert 0 < k.occupancy <= 1.01  # achieved; ncu reports up to ~100.95 % on the GTX 1660 (max over SMs)
    # gpu__time_duration.sum is in ns in all three reports: 4 789 792 ns for the first GEMM launch
    assert g.kernels[0].duration_s == pytest.approx(4.789792e-3)


def test_occupancy_limiter_names_the_smallest_block_limit(gtx1660, a100):
    # GTX 1660: launch__occupancy_limit_registers = warps = 1 block/SM (1024-thread blocks)
    assert load_ncu_report(gtx1660).kernels[0].occupancy_limiter == "registers, warps"
    assert load_ncu_report(a100).kernels[0].occupancy_limiter == "blocks"  # 32 blocks of 32 threads


# --- per-PC samples -------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["gtx1660", "a100"])
def test_per_pc_totals_equal_the_reports_sample_count(which, request):
    path = request.getfixturevalue(which)
    profile = load_ncu_report(path)
    for act, kp in zip(actions(path), profile.kernels, strict=True):
        count = per_pc(act, "smsp__pcsamp_sample_count")
        assert count, "this report has per-PC sample counts"
        starts = sorted(per_pc(act, "launch__function_pcs").values())
        by_offset = {(p.pc + starts[0]): p for p in kp.pcs}  # single-function kernels
        for pc, n in count.items():
            assert by_offset[pc].total == n
        assert kp.total_samples == sum(count.values())


def test_inst_executed_is_joined_by_pc_not_by_index(gtx1660):
    act = next(actions(gtx1660))
    executed = per_pc(act, "inst_executed")
    sampled = per_pc(act, "smsp__pcsamp_sample_count")
    assert len(executed) != len(sampled)  # 201 vs 120: the trap measurement.md describes
    kp = load_ncu_report(gtx1660).kernels[0]
    start = min(per_pc(act, "launch__function_pcs").values())
    got = {p.pc + start: p.executed for p in kp.pcs if p.executed is not None}
    assert got == {pc: float(n) for pc, n in executed.items()}


def test_offsets_are_relative_to_the_function_start(gtx1660, rtx3080):
    kp = load_ncu_report(gtx1660).kernels[0]
    assert min(p.pc for p in kp.pcs) == 0 and all(p.pc % 16 == 0 for p in kp.pcs)  # 16-byte SASS
    assert {p.function for p in kp.pcs} == {kp.kernel}
    # computeValue has 6 functions (device functions not inlined in a Debug build): labelled by address order
    cv = load_ncu_report(rtx3080).kernels[1]
    assert {p.function for p in cv.pcs} == {f"{cv.kernel}#fn{i}" for i in range(6)}
    assert any("6 functions" in n for n in notes(cv.provenance))


def test_stall_reasons_map_onto_the_enum(gtx1660):
    kp = load_ncu_report(gtx1660).kernels[0]
    reasons = {r for p in kp.pcs for r in p.samples}
    assert StallReason.long_scoreboard in reasons and StallReason.selected in reasons
    assert all(isinstance(r, StallReason) for r in reasons)


# --- lines -----------------------------------------------------------------------------------------


def test_rtx3080_has_lines_for_piestimator(rtx3080):
    p = load_ncu_report(rtx3080)
    files = {ls.file.replace("\\", "/").split("/")[-1] for k in p.kernels for ls in k.lines}
    assert {"piestimator.cu", "curand_kernel.h"} <= files
    assert NO_LINEINFO not in notes(p.provenance)
    for k in p.kernels:  # every sampled PC with a line lands in exactly one line
        assert sum(ls.total for ls in k.lines) <= k.total_samples


@pytest.mark.parametrize("which", ["gtx1660", "a100"])
def test_reports_without_lineinfo_say_so(which, request):
    p = load_ncu_report(request.getfixturevalue(which))
    assert all(not k.lines for k in p.kernels)
    assert NO_LINEINFO in notes(p.provenance)
    assert "-lineinfo" in NO_LINEINFO


def test_time_is_the_file_time_and_says_so(gtx1660):
    prov = load_ncu_report(gtx1660).provenance
    time_note = next(a for a in prov.assumptions if a.name == "time")
    assert "modification time" in time_note.detail and prov.time.tzinfo is not None


# --- FLOPs and bytes ---------------------------------------------------------------------------------


def _opcode_counts(act) -> dict[str, int]:
    m = act.metric_by_name("sass__thread_inst_executed_true_per_opcode")
    ids = m.correlation_ids()
    return {ids.as_string(i): m.as_uint64(i) for i in range(m.num_instances())}


def test_flops_from_per_cycle_rates_match_the_per_opcode_counts(gtx1660, a100):
    # The reports hold only `.per_cycle_elapsed` rates; the per-opcode thread counts are an independent check.
    ops = _opcode_counts(next(actions(gtx1660)))
    k = load_ncu_report(gtx1660).kernels[0]
    assert k.flops["fp32"] == pytest.approx(2 * ops["FFMA"] + ops["FMUL"], rel=1e-9)
    # 1024³ GEMM: one FFMA per k, then alpha·acc (FMUL) + beta·C (FFMA) per output element
    assert k.flops["fp32"] == pytest.approx(2 * (1024**3 + 1024**2) + 1024**2, rel=1e-9)
    ops = _opcode_counts(next(actions(a100)))
    k = load_ncu_report(a100).kernels[0]
    assert k.flops["fp64"] == pytest.approx(ops["DADD"] + 2 * ops["DFMA"], rel=1e-9)
    assert any("per-cycle" in n for n in notes(k.provenance))


def test_bytes_and_utilization(gtx1660):
    k = load_ncu_report(gtx1660).kernels[0]
    act = next(actions(gtx1660))
    assert k.bytes["dram"] == act["dram__bytes_read.sum"].value() + act["dram__bytes_write.sum"].value()
    assert k.bytes["l2"] == act["lts__t_sectors.sum"].value() * 32
    assert set(k.bytes) == {"dram", "l2", "l1", "shared"}
    assert k.utilization["sm"] == pytest.approx(act["sm__throughput.avg.pct_of_peak_sustained_elapsed"].value() / 100)
    assert 0 < k.utilization["fp32"] < 1


# --- matching kernels -------------------------------------------------------------------------------


def test_match_kernels_by_mangled_name_then_base_name(gtx1660, rtx3080):
    g = load_ncu_report(gtx1660)
    m = match_kernels(g, ["_Z10naive_gemmPKfS0_Pfiiiff", "_Z10naive_gemmPfS_S_iii", "_Z5otherv"])
    assert len(m["_Z10naive_gemmPKfS0_Pfiiiff"]) == 2  # both launches
    assert len(m["_Z10naive_gemmPfS_S_iii"]) == 2  # signature changed: matched by base name
    assert m["_Z5otherv"] == ()
    r = load_ncu_report(rtx3080)
    assert match_kernels(r, ["_Z12computeValueIdEvPjP17curandStateXORWOWj"])[
        "_Z12computeValueIdEvPjP17curandStateXORWOWj"][0].kernel == "_Z12computeValueIfEvPjP17curandStateXORWOWj"


@pytest.mark.parametrize("mangled, base", [("_Z10naive_gemmPKfS0_Pfiiiff", "naive_gemm"),
                                           ("_Z12computeValueIfEvPjP17curandStateXORWOWj", "computeValue"),
                                           ("_ZN2ns6kernelEPf", "kernel"), ("plain_c_kernel", "plain_c_kernel")])
def test_mangled_base_name(mangled, base):
    assert mangled_base_name(mangled) == base


@pytest.mark.parametrize("demangled, base", [("void computeValue<float>(unsigned int*, curandStateXORWOW*, unsigned int)",
                                              "computeValue"), ("naive_gemm(const float *, int)", "naive_gemm"),
                                             ("void ns::k<(int)2, float>(float*)", "k")])
def test_base_name(demangled, base):
    assert base_name(demangled) == base


@pytest.mark.parametrize("name, reason", [("no_instructions", StallReason.no_instruction),
                                          ("smsp__pcsamp_warps_issue_stalled_long_scoreboard", StallReason.long_scoreboard),
                                          ("stall_sleep", StallReason.sleeping), ("imc_miss", StallReason.imc_miss),
                                          ("warpgroup_arrive", StallReason.misc), ("tex_throttle", StallReason.tex_throttle)])
def test_stall_reason_names(name, reason):
    assert stall_reason(name) is reason


# --- staleness --------------------------------------------------------------------------------------


def test_source_shorter_than_the_line_table_is_refused(rtx3080, tmp_path):
    src = tmp_path / "piestimator.cu"
    src.write_text("__global__ void initRNG() {}\n")  # the real file has far more lines than this
    with pytest.raises(StaleReportError, match="piestimator.cu"):
        load_ncu_report(rtx3080, source=src)


def test_matching_source_is_accepted_and_lines_use_the_local_path(rtx3080, tmp_path):
    src = tmp_path / "piestimator.cu"
    src.write_text("// initRNG computeValue\n" * 400)
    p = load_ncu_report(rtx3080, source=src)
    assert p.provenance.source_sha256 == text_sha256(src.read_text())
    assert any(ls.file == str(src) for k in p.kernels for ls in k.lines)


def test_kernels_missing_from_the_source_are_noted_not_refused(gtx1660, tmp_path):
    src = tmp_path / "naive.cu"
    src.write_text("int main() {}\n")
    p = load_ncu_report(gtx1660, source=src)
    assert any("naive_gemm" in n and "not found" in n for n in notes(p.provenance))


def test_embedded_source_hash_decides():
    ev = SourceEvidence(embedded={"C:\\work\\k.cu": "__global__ void k() {}\r\n"}, kernel_names=("k",))
    assert check_source(ev, Path("/home/u/k.cu"), "__global__ void k() {}\n") == ()  # CRLF vs LF: same text
    with pytest.raises(StaleReportError, match="changed"):
        check_source(ev, Path("/home/u/k.cu"), "__global__ void k() { int x; }\n")


# --- errors -----------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(ReportError, match="No report at"):
        load_ncu_report(tmp_path / "nope.ncu-rep")


@pytest.mark.parametrize("content", [b"", b"hello, not a report\n", b"ID,Kernel Name\n"])
def test_not_a_report(tmp_path, content):
    f = tmp_path / "x.ncu-rep"
    f.write_bytes(content)
    with pytest.raises(ReportError, match="not an Nsight Compute report"):
        load_ncu_report(f)


@pytest.mark.parametrize("keep", [64, 200_000])
def test_truncated_report(gtx1660, tmp_path, keep):
    f = tmp_path / "cut.ncu-rep"
    f.write_bytes(gtx1660.read_bytes()[:keep])
    with pytest.raises(ReportError, match="corrupt or truncated"):
        load_ncu_report(f)


def test_directory_is_not_a_report(tmp_path):
    with pytest.raises(ReportError, match="not a file"):
        load_ncu_report(tmp_path)


def test_report_is_not_modified(gtx1660, tmp_path):
    copy = tmp_path / "g.ncu-rep"
    shutil.copy(gtx1660, copy)
    before = copy.read_bytes()
    load_ncu_report(copy)
    assert copy.read_bytes() == before
