"""The second stage's runs spread over forked processes (emulator/workers.py): the same result as
in one process, the children's cost on the parent's ledger, and no child left after a cancel,
an error or a spent budget."""

from __future__ import annotations

import os
import threading
import time

import pytest
from _processes import children

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.budget import BudgetSpent, Ledger
from kernelscope.analysis.emulator.workers import can_fork, fan_out
from kernelscope.analysis.options import AnalysisBudget
from kernelscope.analysis.process import Cancelled, CancelToken

pytestmark = pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux only)")


def pid_job(i: int, seconds: float = 0.0):
    def job():
        time.sleep(seconds)
        return i, os.getpid()
    return job


def test_results_come_back_in_order_from_several_processes():
    before = children()
    out = fan_out([pid_job(i, 0.2) for i in range(7)], 3)
    assert [i for i, _ in out] == list(range(7))
    pids = {pid for _, pid in out}
    assert len(pids) > 1 and os.getpid() in pids  # each process takes jobs while they last
    assert children() <= before  # every child reaped


def test_workers_only_leaves_this_process_out():
    """What the language server asks for: every job in a child, this process only waiting; with
    one process allowed, one child still takes them all."""
    before = children()
    for processes in (1, 2):
        out = fan_out([pid_job(i, 0.05) for i in range(5)], processes, here=False)
        assert [i for i, _ in out] == list(range(5))
        pids = {pid for _, pid in out}
        assert os.getpid() not in pids and 1 <= len(pids) <= processes
    assert children() <= before


def test_one_process_runs_here_in_order():
    out = fan_out([pid_job(i) for i in range(3)], 1)
    assert out == [(0, os.getpid()), (1, os.getpid()), (2, os.getpid())]


def test_a_childs_cost_is_charged_to_the_parents_ledger():
    ledger = Ledger.start(AnalysisBudget())

    def job(n):
        def run():
            ledger.charge(n)
            return n
        return run

    assert fan_out([job(n) for n in (10, 20, 30, 40)], 2, ledger) == [10, 20, 30, 40]
    assert ledger.spent == 100 and ledger.runs == 4


def test_an_error_in_a_child_is_raised_in_the_parent():
    def boom():
        raise BudgetSpent("the wall-clock budget of 1 s was spent")

    with pytest.raises(BudgetSpent, match="wall-clock"):
        fan_out([pid_job(0), boom, pid_job(2), pid_job(3)], 2)
    assert not children()


def test_a_cancel_kills_the_children_at_once(tmp_path):
    token = CancelToken()
    ledger = Ledger.start(AnalysisBudget(), token)

    def run():  # like an engine run, it sees a cancel only between runs: in a child, never
        for _ in range(6000):
            ledger.check()
            time.sleep(0.01)
        (tmp_path / f"finished-{os.getpid()}").touch()
        return None

    threading.Timer(0.3, token.cancel).start()
    with pytest.raises(Cancelled):
        fan_out([run, run, run], 3, ledger)
    # killed, not waited for: no child reached the end of its minute, and none is left
    assert not list(tmp_path.iterdir())
    assert not children()


def test_sensitivity_and_what_if_do_not_depend_on_the_number_of_processes(toolchain, examples_dir):
    from _build import build_example
    from kernelscope.analysis.emulator.model import sensitivity, what_if
    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.options import AnalysisOptions

    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    device = cat.default_device(arch)
    program = build_example(examples_dir / "sgemm_naive.cu", toolchain)
    k = program.kernels[0]
    opts = AnalysisOptions()
    serial = [Ledger.start(AnalysisBudget()) for _ in range(2)]
    forked = [Ledger.start(AnalysisBudget()) for _ in range(2)]
    s1 = sensitivity(AnalysisContext.of(arch, device, opts, program.source, program=program), k, ledger=serial[0], processes=1)
    s3 = sensitivity(AnalysisContext.of(arch, device, opts, program.source, program=program), k, ledger=forked[0], processes=3)
    w1 = what_if(AnalysisContext.of(arch, device, opts, program.source, program=program), k, ledger=serial[1], processes=1)
    w3 = what_if(AnalysisContext.of(arch, device, opts, program.source, program=program), k, ledger=forked[1], processes=3)
    assert s1 == s3 and w1 == w3
    assert s1.kernel_region.bottleneck is not None and len(w1.sm_scaling) > 2
    # every run is charged, whichever process ran it (a child repeats a cached base wave at most)
    assert [f.spent >= s.spent > 0 for s, f in zip(serial, forked)] == [True, True]


def test_a_child_holds_no_descriptor_of_the_parent():
    """A pipe the parent has open when it forks (another thread's `subprocess.Popen` reads one
    until its child has exec'd) is closed in the child at once: held there, it kept nvcc's start
    waiting for a run ahead's whole NVRTC compile."""
    r, w = os.pipe()
    try:
        (fds,) = fan_out([lambda: sorted(int(fd) for fd in os.listdir("/proc/self/fd"))], 1, here=False)
    finally:
        os.close(r)
        os.close(w)
    assert r not in fds and w not in fds
    assert len([fd for fd in fds if fd > 2]) <= 3  # the job queue, the result pipe, the listing's own
