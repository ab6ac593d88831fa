"""A cancelled analysis stops inside an engine run, not at its end (engine.CANCEL_CHECK_ISSUES): a
save that supersedes a background verification waits for no run of tens of milliseconds. The
kernel is examples/noinline_call.cu, compiled by the real nvcc; cost is counted in issues (no clock)."""

from __future__ import annotations

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.engine import CANCEL_CHECK_ISSUES
from kernelscope.analysis.emulator.listeners import HWEventListenerBase
from kernelscope.analysis.emulator.model import _waves, prepare, profile_of, run_wave
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.process import Cancelled, CancelToken

from _build import build_example


class _CancelAfter(HWEventListenerBase):
    """Counts issues; cancels `token` at the `at`-th (a save arriving in the middle of the run)."""

    def __init__(self, token: CancelToken, at: int) -> None:
        self.token, self.at, self.issues = token, at, 0

    def on_issue(self, warp, slot, cycle, bucket) -> None:
        self.issues += 1
        if self.issues == self.at:
            self.token.cancel()


@pytest.fixture(scope="module")
def prepared(toolchain, examples_dir):
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    program = build_example(examples_dir / "noinline_call.cu", toolchain)
    ctx = AnalysisContext.of(arch, cat.default_device(arch), AnalysisOptions(), program.source, program=program)
    return prepare(ctx, program.kernels[0])


def test_a_run_cancelled_midway_stops_within_the_check_interval(prepared):
    full, per_sm, _, _ = _waves(prepared, prepared.device.sm_count)
    whole = run_wave(prepared, per_sm, prepared.device.sm_count).run.issues
    assert whole > 4 * CANCEL_CHECK_ISSUES  # a run long enough to be stopped in its middle
    token = CancelToken()
    spy = _CancelAfter(token, at=100)
    with pytest.raises(Cancelled):
        run_wave(prepared, per_sm, prepared.device.sm_count, extra_listeners=[spy], cancel=token)
    assert spy.issues <= 100 + CANCEL_CHECK_ISSUES < whole


def test_the_quick_stage_passes_its_token_to_its_runs(prepared):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        profile_of(prepared, cancel=token)
    # not cancelled: the same call finishes (the check itself changes nothing)
    assert profile_of(prepared, cancel=CancelToken()).issues == profile_of(prepared).issues
