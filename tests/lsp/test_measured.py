"""Measured profiles in the editor, end to end over stdio: loadReport, profileNow (and its trust
rules), the roofline and analyzeNow commands, verifyAdvice, and the measured-vs-modeled hover.

The reports are real .ncu-rep files captured by others on real GPUs (tests/data/ncu-reports;
its README says where each came from). `naive_gemm.cu` in tests/data/lsp is ours, written with
the signature of the GTX 1660 SUPER report's kernel, so the report matches it by mangled name.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from _gpu import gpu_absent
from _reports import report
from conftest import TIMEOUT, _plain  # tests/lsp/conftest.py (rootdir-relative import, as pytest loads it)

NAIVE_GEMM_DECL = 4  # 0-based line of `__global__ void naive_gemm(`
NAIVE_GEMM_INNER = 10  # 0-based line of `acc += A[row * K + k] * B[k * N + col];`


async def command(s, name: str, *args: Any) -> Any:
    return _plain(await asyncio.wait_for(s.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(args))), TIMEOUT))


def shown(s, since: int = 0) -> list[str]:
    return [m.message for m in s.client.messages[since:]]


def tagged(s, name: str) -> list[str]:
    return sorted({d.message.split("]")[0] + "]" for d in s.diagnostics(name) if d.source == "kernelscope"})


async def until(predicate, timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.02)


# -- loadReport ---------------------------------------------------------------------------------

async def test_report_of_another_kernel_is_refused_and_the_model_kept(lsp):
    gemm = report("gtx1660s-naive-gemm.ncu-rep")  # profiled naive_gemm; saxpy.cu defines saxpy and scale
    async with lsp() as s:
        await s.open("saxpy.cu")
        before = tagged(s, "saxpy.cu")
        assert before == ["[modeled]"]
        n = len(s.client.messages)
        reply = await command(s, "kernelscope.loadReport", s.uri("saxpy.cu"), str(gemm))
        assert reply["ok"] is False and "message" not in reply  # the client shows nothing twice
        (msg,) = shown(s, n)
        assert "gtx1660s-naive-gemm.ncu-rep profiled no kernel that saxpy.cu defines" in msg
        assert "showing the model" in msg
        assert tagged(s, "saxpy.cu") == before
        # Dropped: the next save is an ordinary modeled analysis, with no second message.
        done = await s.save("saxpy.cu")
        assert done["kind"] == "modeled" and len(s.client.messages) == n + 1


async def test_report_captured_from_a_different_version_is_refused(lsp, workspace):
    pi = report("rtx3080-monte-carlo-pi.ncu-rep")  # has line info for piestimator.cu up to line 118
    (workspace / "piestimator.cu").write_text(
        "__global__ void initRNG(unsigned int *state, unsigned int seed) {\n"
        "  state[threadIdx.x] = seed + threadIdx.x;\n}\n", encoding="utf-8")
    async with lsp() as s:
        await s.open("piestimator.cu")
        n = len(s.client.messages)
        after = len(s.finished)
        reply = await command(s, "kernelscope.loadReport", s.uri("piestimator.cu"), str(pi))
        assert reply["ok"] is False and "line 118" in reply["error"]
        (msg,) = shown(s, n)
        assert msg.startswith("kernelscope: report rtx3080-monte-carlo-pi.ncu-rep was captured from a different "
                              "version of piestimator.cu; showing the model")
        # The fallback: the file is analysed again without the report (a cache hit, no compile).
        done = await s.wait_finished(s.uri("piestimator.cu"), after + 1)
        assert done.get("kind") == "modeled" and done["cache"].startswith("hit")


async def test_missing_report_and_not_a_report(lsp, workspace):
    async with lsp() as s:
        await s.open("saxpy.cu")
        n = len(s.client.messages)
        reply = await command(s, "kernelscope.loadReport", s.uri("saxpy.cu"), str(workspace / "nope.ncu-rep"))
        assert reply["ok"] is False
        (msg,) = shown(s, n)
        assert "No report at" in msg and "nope.ncu-rep" in msg and "showing the model" in msg
        reply = await command(s, "kernelscope.loadReport", s.uri("saxpy.cu"), "saxpy.cu")  # relative: the root
        assert reply["ok"] is False
        assert "is not an Nsight Compute report" in shown(s, n)[-1]
        assert tagged(s, "saxpy.cu") == ["[modeled]"]
        assert (await s.stats())["openDocuments"] == 1  # the server is still up


async def test_matching_report_gives_measured_result_with_the_prediction_beside_it(lsp):
    gemm = report("gtx1660s-naive-gemm.ncu-rep")
    async with lsp() as s:
        await s.open("naive_gemm.cu")
        uri = s.uri("naive_gemm.cu")
        reply = await command(s, "kernelscope.loadReport", uri, str(gemm))
        assert reply["ok"] is True and reply["kernels"] and "naive_gemm" in reply["message"]
        assert tagged(s, "naive_gemm.cu") == ["[measured]"]
        summary = (await s.hover("naive_gemm.cu", NAIVE_GEMM_DECL, 20)).contents.value
        # 4 789 792 ns: gpu__time_duration.sum of the report's first launch
        assert "duration 4.79 ms measured · " in summary and " predicted" in summary
        line = (await s.hover("naive_gemm.cu", NAIVE_GEMM_INNER, 8)).contents.value
        # No -lineinfo in that build: no measured line shares, and the hover says so beside the model's.
        assert "hotspot measured n/a (the report has no line information" in line and "% modeled" in line
        assert "duration 4.79 ms measured" in line
        roof = await command(s, "kernelscope.roofline", uri)
        assert roof["kind"] == "measured" and [k["provenance"] for k in roof["kernels"]] == ["measured"]

        # A save of the same content keeps the report; a changed file ends it, with one message.
        done = await s.save("naive_gemm.cu")
        assert done["kind"] == "measured"
        n = len(s.client.messages)
        after = len(s.finished)
        await s.save("naive_gemm.cu", s.text("naive_gemm.cu") + "// changed\n", wait=False)
        await s.wait_finished(uri, after)
        await until(lambda: any(f.get("kind") == "modeled" for f in s.finished[after:]))
        (msg,) = shown(s, n)
        assert msg.startswith("kernelscope: report gtx1660s-naive-gemm.ncu-rep was captured from a different "
                              "version of naive_gemm.cu; showing the model")
        assert tagged(s, "naive_gemm.cu") == ["[modeled]"]


# -- roofline, analyzeNow, verifyAdvice ---------------------------------------------------------

async def test_roofline_is_one_svg_of_every_kernel(lsp):
    async with lsp() as s:
        with pytest.raises(Exception, match="no roofline: saxpy.cu has no analysis result yet"):
            await command(s, "kernelscope.roofline", s.uri("saxpy.cu"))
        await s.open("saxpy.cu")
        roof = await command(s, "kernelscope.roofline", s.uri("saxpy.cu"))
        assert roof["svg"].startswith("<svg") and "saxpy" in roof["svg"] and "scale" in roof["svg"]
        assert roof["kind"] == "modeled"
        names = {k["name"].split("(")[0]: k for k in roof["kernels"]}
        assert set(names) == {"saxpy", "scale"}
        for k in names.values():
            assert k["bound"] in ("memory", "compute", "latency") and 0 < k["fraction"] and k["provenance"] == "modeled"
            assert k["trajectory"] > 0  # the full result carries the SM-scaling trajectory


async def test_analyze_now_skips_the_debounce_and_with_no_cache_compiles(lsp):
    async with lsp({"debounceMs": 5000}) as s:
        await s.open("saxpy.cu")
        runs = (await s.stats())["compilerRuns"]
        uri = s.uri("saxpy.cu")
        after = len(s.finished)
        assert await command(s, "kernelscope.analyzeNow", uri) == {"scheduled": True}
        done = await s.wait_finished(uri, after, timeout=4)  # well inside the 5 s debounce
        assert done["cache"].startswith("hit") and (await s.stats())["compilerRuns"] == runs
        after = len(s.finished)
        await command(s, "kernelscope.analyzeNow", uri, {"noCache": True})
        done = await s.wait_finished(uri, after)
        assert done["cache"] == "miss" and (await s.stats())["compilerRuns"] == runs + 1


async def test_verify_advice_returns_a_verification(lsp):
    async with lsp() as s:
        await s.open("saxpy.cu")
        uri = s.uri("saxpy.cu")
        ids = [d.data["adviceId"] for d in s.diagnostics("saxpy.cu") if d.source == "kernelscope"]
        results = [await command(s, "kernelscope.verifyAdvice", uri, i) for i in ids]
        verified = [r for r in results if r is not None]
        assert verified, "no advice with a fix in saxpy.cu"
        for v in verified:
            assert v["status"] and "reason" in v
        assert await command(s, "kernelscope.verifyAdvice", uri, "no-such-advice") is None


# -- profileNow and workspace trust -------------------------------------------------------------

def _program(marker: str) -> list[str]:
    # A real program that exists; it never starts when ncu is missing, and must not outlive the server's reply.
    return [sys.executable, "-c", f"import time; time.sleep(60)  # {marker}"]


def _running(marker: str) -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and "pytest" not in cmd:
            out.append(cmd)
    return out


needs_no_ncu = pytest.mark.skipif(shutil.which("ncu") is not None, reason="ncu is on PATH: the GPU test covers it")


@needs_no_ncu
async def test_profile_command_from_a_workspace_file_needs_trust(lsp, workspace):
    marker = f"ks-{uuid.uuid4().hex}"
    (workspace / ".kernelscope.toml").write_text(
        "[profile]\ncommand = [" + ", ".join(f'"{a}"' for a in _program(marker)) + "]\n", encoding="utf-8")
    async with lsp(init_options=None) as s:  # a client that says nothing about trust
        await s.open("saxpy.cu")
        n = len(s.client.messages)
        reply = await command(s, "kernelscope.profileNow", s.uri("saxpy.cu"))
        assert reply["ok"] is False and reply["refused"] is True
        (msg,) = shown(s, n)
        assert f"not running the profile command from {workspace / '.kernelscope.toml'}" in msg
        assert "Manage Workspace Trust" in msg and '"workspaceTrusted": true' in msg
        # The user grants trust (the notification the VS Code extension sends): now it runs, and fails cleanly.
        s.client.protocol.notify("kernelscope/didGrantWorkspaceTrust", {"workspaceTrusted": True})
        reply = await command(s, "kernelscope.profileNow", s.uri("saxpy.cu"))
        assert reply["ok"] is False and reply["errorType"] == "ToolNotFoundError"
        assert "ncu was not found" in shown(s, n)[-1]
        assert _running(marker) == []


@needs_no_ncu
async def test_trusted_at_start_up_through_initialization_options(lsp, workspace):
    (workspace / ".kernelscope.toml").write_text('[profile]\ncommand = ["./app"]\n', encoding="utf-8")
    async with lsp(init_options={"workspaceTrusted": True}) as s:
        await s.open("saxpy.cu")
        reply = await command(s, "kernelscope.profileNow", s.uri("saxpy.cu"))
        assert reply.get("errorType") == "ToolNotFoundError"
        assert not [m for m in s.client.messages if "invalid settings" in m.message]  # not taken for a setting


@needs_no_ncu
async def test_profile_command_from_user_settings_runs_and_fails_cleanly_without_ncu(lsp):
    marker = f"ks-{uuid.uuid4().hex}"
    async with lsp({"profile": {"command": _program(marker), "timeoutS": 30}}) as s:
        await s.open("saxpy.cu")
        n = len(s.client.messages)
        reply = await command(s, "kernelscope.profileNow", s.uri("saxpy.cu"))
        assert reply["ok"] is False and reply["errorType"] == "ToolNotFoundError"
        (msg,) = shown(s, n)
        assert msg.startswith("kernelscope: profiling saxpy.cu failed: Cannot run ncu --help: ncu was not found")
        assert "Install Nsight Compute" in msg
        assert _running(marker) == []
        assert (await s.stats())["openDocuments"] == 1
        assert tagged(s, "saxpy.cu") == ["[modeled]"]


@needs_no_ncu
async def test_profile_on_save_runs_after_the_save_and_fails_cleanly(lsp):
    marker = f"ks-{uuid.uuid4().hex}"
    async with lsp({"profile": {"command": _program(marker), "onSave": True}}) as s:
        await s.open("saxpy.cu")  # opening does not profile
        n = len(s.client.messages)
        done = await s.save("saxpy.cu")
        assert done["kind"] == "modeled"  # the model is published as usual
        await until(lambda: len(s.client.messages) > n)
        (msg,) = shown(s, n)
        assert msg.startswith("kernelscope: profiling saxpy.cu failed: Cannot run ncu --help: ncu was not found")
        assert _running(marker) == []


async def test_nothing_to_profile_says_which_setting(lsp):
    async with lsp() as s:
        await s.open("saxpy.cu")
        reply = await command(s, "kernelscope.profileNow", s.uri("saxpy.cu"))
        assert reply["ok"] is False and "set kernelscope.profile.command" in reply["error"]


# -- on a GPU: a report of our own source -------------------------------------------------------

def _gpu_absent() -> str | None:
    if (why := gpu_absent()) is not None:
        return f"{why} (this test profiles examples/sgemm_naive.cu with ncu)"
    if shutil.which("ncu") is None:
        return "ncu (Nsight Compute) not on PATH"
    return None


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_absent() is not None, reason=str(_gpu_absent()))
async def test_profile_now_on_a_gpu_shows_measured_beside_modeled(lsp, workspace):
    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    src = Path(__file__).resolve().parents[2] / "examples" / "sgemm_naive.cu"
    shutil.copy(src, workspace / "sgemm_naive.cu")
    tc = locate_toolchain()
    subprocess.run([str(tc.nvcc), "-O3", "-lineinfo", "-o", str(workspace / "sgemm_naive"),
                    str(workspace / "sgemm_naive.cu")], check=True, env=tc.env)
    async with lsp({"profile": {"command": [str(workspace / "sgemm_naive")], "kernelRegex": "sgemm_naive",
                                "timeoutS": 300}}) as s:
        await s.open("sgemm_naive.cu")
        reply = await command(s, "kernelscope.profileNow", s.uri("sgemm_naive.cu"))
        assert reply["ok"] is True, s.log_text()
        assert tagged(s, "sgemm_naive.cu") == ["[measured]"]
        text = s.text("sgemm_naive.cu").splitlines()
        inner = next(i for i, ln in enumerate(text) if "acc +=" in ln)
        decl = next(i for i, ln in enumerate(text) if "__global__ void sgemm_naive" in ln)
        line = (await s.hover("sgemm_naive.cu", inner, 8)).contents.value
        # as it read on an H100 (2026-11-26): "hotspot **98.5 %** measured · 98.8 % modeled"
        assert "hotspot **" in line and "%** measured · " in line and "% modeled" in line
        summary = (await s.hover("sgemm_naive.cu", decl, 18)).contents.value
        assert " measured · " in summary and " predicted" in summary
