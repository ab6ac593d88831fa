"""The CUPTI PC-sampling shim: it compiles against the real CUPTI headers and loads; its record
parser folds the shim's own output format. Running it needs a GPU (test_gpu.py)."""

from __future__ import annotations

import ctypes
from datetime import datetime, timezone

import pytest

from kernelscope.analysis.measure.cupti import (SHIM_SOURCE, build_shim, find_cupti, parse_pcsampling, sampled_error,
                                                sampled_profile)
from kernelscope.analysis.measure.errors import CounterPermissionError, MeasurementError
from kernelscope.analysis.profile import StallReason


@pytest.fixture(scope="module")
def cupti():
    found = find_cupti()
    if found is None:
        pytest.skip("CUPTI headers/library not found (pip install nvidia-cuda-cupti, or a CUDA toolkit in CUDA_HOME)")
    return found


def test_shim_compiles_and_exports_the_injection_entry(toolchain, cupti, tmp_path):
    lib = build_shim(toolchain.nvcc, cupti.include, cupti.library, out_dir=tmp_path)
    assert lib.is_file() and lib.suffix == ".so"
    handle = ctypes.CDLL(str(lib))  # resolves libcupti through the rpath; no GPU needed to load
    init = handle.InitializeInjection
    init.restype = ctypes.c_int
    # Without KERNELSCOPE_PCSAMPLING_OUT the shim declines (returns 0) before touching CUPTI.
    assert init() == 0
    # Cached by content: a second build is the same file.
    assert build_shim(toolchain.nvcc, cupti.include, cupti.library, out_dir=tmp_path) == lib


def test_shim_source_uses_the_pc_sampling_api():
    text = SHIM_SOURCE.read_text()
    for call in ("cuptiPCSamplingEnable", "cuptiPCSamplingGetStallReasons", "cuptiPCSamplingSetConfigurationAttribute",
                 "cuptiPCSamplingGetData", "cuptiPCSamplingDisable", "InitializeInjection"):
        assert call in text


# SYNTHETIC input in the shim's own JSON-lines format (defined by pcsampling_shim.cpp), written
# here to test the parser; it is not measured data. Reason names follow CUPTI's metric-style table.
SYNTHETIC = [
    '{"type":"reasons","context":1,"reasons":[{"index":0,"name":"smsp__pcsamp_warps_issue_stalled_long_scoreboard"},'
    '{"index":1,"name":"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"},'
    '{"index":2,"name":"smsp__pcsamp_warps_issue_stalled_selected"},'
    '{"index":3,"name":"smsp__pcsamp_warps_issue_stalled_no_instructions"}]}',
    '{"type":"pc","context":1,"cubinCrc":7,"function":"_Z1kPf","functionIndex":0,"pcOffset":16,'
    '"correlationId":0,"stalls":{"0":5,"1":4,"2":2}}',
    '{"type":"pc","context":1,"cubinCrc":7,"function":"_Z1kPf","functionIndex":0,"pcOffset":32,'
    '"correlationId":0,"stalls":{"3":1}}',
    '{"type":"flush","context":1,"totalSamples":8,"droppedSamples":0,"nonUserKernelSamples":0,"hardwareBufferFull":0}',
    '{"type":"pc","context":1,"cubinCrc":7,"function":"_Z1kPf","functionIndex":0,"pcOffset":16,'
    '"correlationId":0,"stalls":{"0":1}}',
    '{"type":"pc","context":1,"cubinCrc":7,"function":"_Z1kPf","functionInd',  # cut short by a crash
]


def test_parser_resolves_reasons_drops_not_issued_and_sums_flushes():
    s = parse_pcsampling(SYNTHETIC)
    assert s.pcs[("_Z1kPf", 16)] == {StallReason.long_scoreboard: 6.0, StallReason.selected: 2.0}
    assert s.pcs[("_Z1kPf", 32)] == {StallReason.no_instruction: 1.0}
    assert s.total_samples == 8 and sampled_error(s) is None
    p = sampled_profile(s, {("_Z1kPf", 16): ("k.cu", 3)}, time=datetime.now(timezone.utc), tool_version="13.0")
    (k,) = p.kernels
    assert k.kernel == "_Z1kPf" and k.name == "k" and k.total_samples == 9
    assert [(ls.file, ls.line, ls.total) for ls in k.lines] == [("k.cu", 3, 8.0)]
    assert p.provenance.tool == "cupti" and any(a.name == "launch" for a in p.provenance.assumptions)


def test_parser_reports_cupti_errors():
    denied = ['{"type":"error","where":"cuptiPCSamplingEnable","result":35,"message":"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}']
    assert type(sampled_error(parse_pcsampling(denied))) is CounterPermissionError
    assert "no CUDA context" in str(sampled_error(parse_pcsampling([])))
    unsupported = ['{"type":"error","where":"cuptiPCSamplingEnable","result":27,"message":"CUPTI_ERROR_NOT_SUPPORTED"}']
    assert "not supported" in str(sampled_error(parse_pcsampling(unsupported)))
    assert isinstance(sampled_error(parse_pcsampling(unsupported)), MeasurementError)
