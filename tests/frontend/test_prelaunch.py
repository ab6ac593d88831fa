"""The head start on the compile (analysis/frontend/prelaunch.py), with real nvcc: the command
line's recorded invocation is started before the engine imports, the language server's known
one before its job resolves capture and its context; either is adopted only when the compile
step builds the very same one; anything else is stopped and compiled as always."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kernelscope.analysis import application
from kernelscope.analysis.frontend.compile import compile_cuda
from kernelscope.analysis.frontend.prelaunch import Prelaunch, record_key
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.process import CancelToken

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "tests" / "data" / "lsp" / "saxpy.cu"


def _record(toolchain, tmp_path: Path, key: str, arch: str = "sm_90") -> Path:
    """What a first run leaves behind: the invocation that compiled the file."""
    pre = Prelaunch.start(key, tmp_path / "records")
    assert pre.started is None  # nothing recorded yet
    r = compile_cuda(SAXPY, arch=arch, toolchain=toolchain, workdir=tmp_path / "first", prelaunch=pre)
    assert r.success
    pre.close()
    assert pre.path.exists()
    return pre.path


def test_the_recorded_compile_is_adopted_and_gives_the_same_cubin(toolchain, tmp_path):
    _record(toolchain, tmp_path, "k")
    plain = compile_cuda(SAXPY, toolchain=toolchain, workdir=tmp_path / "plain")
    pre = Prelaunch.start("k", tmp_path / "records")
    assert pre.started is not None
    child = pre.started.child
    work = pre.cubin.parent
    r = compile_cuda(SAXPY, toolchain=toolchain, workdir=tmp_path / "second", prelaunch=pre)
    assert pre.started is None and child.returncode == 0  # taken and waited for, not re-run
    assert r.success and r.cubin == plain.cubin and r.resources == plain.resources
    assert r.cubin_path.read_bytes() == r.cubin and not work.exists()


def test_another_invocation_stops_the_started_one(toolchain, tmp_path):
    _record(toolchain, tmp_path, "k", arch="sm_80")
    pre = Prelaunch.start("k", tmp_path / "records")
    child, work = pre.started.child, pre.cubin.parent
    r = compile_cuda(SAXPY, arch="sm_90", toolchain=toolchain, workdir=tmp_path / "second", prelaunch=pre)
    assert r.success and r.command[r.command.index("-o") + 1] == str(tmp_path / "second" / "saxpy.cubin")
    assert child.returncode is not None and child.returncode != 0  # killed, reaped
    assert not work.exists()
    assert "-arch=sm_90" in json.loads(pre.path.read_text())["argv"]  # the next run starts this one


def test_a_record_someone_else_could_write_is_not_run(toolchain, tmp_path):
    path = _record(toolchain, tmp_path, "k")
    path.chmod(0o666)
    assert Prelaunch.start("k", tmp_path / "records").started is None
    path.chmod(0o600)
    path.write_text("{not json")
    assert Prelaunch.start("k", tmp_path / "records").started is None


def test_an_unused_start_is_stopped_on_close(toolchain, tmp_path):
    _record(toolchain, tmp_path, "k")
    pre = Prelaunch.start("k", tmp_path / "records")
    child, work = pre.started.child, pre.cubin.parent
    pre.close()
    assert child.returncode is not None and not work.exists()


def test_two_command_line_runs_give_the_same_result(tmp_path):
    """The second run starts nvcc from the first run's record; what it prints is the same."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "kernelscope.cli", "analyze", "--json", "--quick", str(SAXPY)]
    outs = []
    for _ in range(2):
        p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert p.returncode == 0, p.stderr
        outs.append(json.dumps(_timeless(json.loads(p.stdout)), sort_keys=True))
    records = list((tmp_path / "cache" / "kernelscope" / "prelaunch").glob("*.json"))
    assert len(records) == 1 and records[0].stem == record_key(SAXPY, tuple(argv[3:]), tmp_path)
    assert outs[0] == outs[1]


def test_the_analysis_adopts_the_compile_begun_before_it(toolchain, tmp_path):
    """What the language server does on a cache miss: nvcc first, the analysis adopts it, and the
    result is the one an analysis that compiled itself gives; no record is written."""
    options = AnalysisOptions()
    plain = application.analyse(SAXPY, options, toolchain=toolchain, depth="quick")
    pre = application.begin_compile(SAXPY, options, toolchain)
    assert pre is not None and pre.started is not None and pre.path is None
    child, work = pre.started.child, pre.cubin.parent
    adopted = application.analyse(SAXPY, options, toolchain=toolchain, depth="quick", prelaunch=pre)
    pre.close()
    assert pre.started is None and child.returncode == 0 and not work.exists()
    assert _timeless(adopted.model_dump(mode="json")) == _timeless(plain.model_dump(mode="json"))


def test_a_compile_that_fails_is_adopted_with_its_messages(toolchain, tmp_path):
    broken = tmp_path / "broken.cu"
    broken.write_text("__global__ void k(float *x) {\n  x[0] = undefined_name;\n}\n")
    options = AnalysisOptions()
    pre = application.begin_compile(broken, options, toolchain)
    child = pre.started.child
    r = application.analyse(broken, options, toolchain=toolchain, depth="quick", prelaunch=pre)
    pre.close()
    assert child.returncode != 0 and not r.compiled
    assert [(m.line, m.severity) for m in r.messages if m.severity == "error"] == [(2, "error")]


def test_a_cancel_stops_the_compile_begun_before_its_analysis(toolchain):
    token = CancelToken()
    pre = application.begin_compile(SAXPY, AnalysisOptions(), toolchain, token)
    child, work = pre.started.child, pre.cubin.parent
    token.cancel()  # a newer save, while the job still resolves capture
    assert child.wait(timeout=10) != 0
    pre.close()
    assert not work.exists()


def test_no_compile_is_begun_that_the_analysis_would_not_run(toolchain, tmp_path):
    header = tmp_path / "k.cuh"
    header.write_text("__global__ void k() {}\n")
    shell = tmp_path / "$(touch x).cu"
    shell.write_text("__global__ void k() {}\n")
    assert application.begin_compile(header, AnalysisOptions(), toolchain) is None  # its includer is compiled
    assert application.begin_compile(shell, AnalysisOptions(), toolchain) is None  # nvcc's shell would run it
    assert application.begin_compile(SAXPY, AnalysisOptions(arch="sm_1"), toolchain) is None
    assert not (tmp_path / "x").exists()


def _timeless(o):
    """The result without what differs between two runs of the same analysis: when and how long."""
    if isinstance(o, dict):
        return {k: _timeless(v) for k, v in o.items() if k not in ("time", "timings")}
    if isinstance(o, list):
        return [_timeless(v) for v in o]
    return o
