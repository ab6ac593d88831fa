"""The editor's "Profile now" on a Slurm cluster: the real server, its `profile.remote` setting as an srun
template, and a real single-node Slurm (tests/_slurm.py). The node has no ncu (no GPU here), so the
profile cannot succeed; what is tested is that it runs where the setting says, that the node's own
words reach the user, and that the editor's cancel reaches the job (scancel) while it waits in the queue.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from lsprotocol import types

import _slurm
from conftest import TIMEOUT, _plain  # tests/lsp/conftest.py (rootdir-relative import, as pytest loads it)

pytestmark = pytest.mark.skipif(_slurm.missing() is not None, reason=str(_slurm.missing()))


@pytest.fixture(scope="module")
def cluster():
    with _slurm.cluster() as c:
        yield c


def settings(cluster) -> dict:
    return {"profile": {"command": [sys.executable, "-c", "print('the program')"], "ncuPath": "ncu-not-on-the-node",
                        "timeoutS": 120,
                        "remote": {"run": [*cluster.prefix, "srun", f"--partition={cluster.partition}",
                                           "--chdir={cwd}", "{command}"]}}}


def ours(cluster) -> list[str]:
    return [ln for ln in cluster.left().splitlines() if " kernelscope-" in ln]


async def profile_now(s):
    return _plain(await s.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelscope.profileNow", arguments=[s.uri("saxpy.cu")])))


async def test_slurm_profile_now_runs_on_the_node_and_its_error_reaches_the_user(lsp, cluster):
    async with lsp(settings(cluster), init_options={"workspaceTrusted": True}) as s:
        await s.open("saxpy.cu")
        n = len(s.client.messages)
        reply = await asyncio.wait_for(profile_now(s), TIMEOUT)
        assert reply["ok"] is False and reply["errorType"] == "ToolNotFoundError", reply
        (msg,) = [m.message for m in s.client.messages[n:]]
        # the shell on the compute node said it: the command ran through srun, not here
        assert msg.startswith("kernelscope: profiling saxpy.cu failed: Cannot run ncu on the Slurm node: "
                              "ncu-not-on-the-node was not found ("), msg
        assert "module load" in msg  # how to get ncu onto the node
        assert ours(cluster) == []
        assert {d.message.split("]")[0] + "]" for d in s.diagnostics("saxpy.cu") if d.source == "kernelscope"} \
            == {"[modeled]"}  # the modeled profile stays


async def test_slurm_cancel_in_the_editor_cancels_the_queued_job(lsp, cluster):
    # a job that takes every CPU of the node: the profile's job waits in the queue behind it
    blocker = cluster.run("sbatch", "--parsable", f"--ntasks={cluster.cpus}", "--output=/dev/null",
                          "--job-name=blocker", "--wrap=sleep 300").stdout.strip()
    try:
        async with lsp(settings(cluster), init_options={"workspaceTrusted": True}) as s:
            await s.open("saxpy.cu")
            pending = asyncio.ensure_future(profile_now(s))
            deadline = asyncio.get_running_loop().time() + TIMEOUT
            while not any("PENDING" in ln for ln in ours(cluster)):
                assert not pending.done(), pending.result()
                assert asyncio.get_running_loop().time() < deadline, cluster.jobs()
                await asyncio.sleep(0.2)
            (token,) = [t for t, reports in s.client.progress_reports.items()
                        if any(getattr(r, "title", "") and "profiling saxpy.cu" in r.title for r in reports)]
            # the job's state reaches the editor's progress, from Slurm's own squeue
            while not any("pending" in (getattr(r, "message", None) or "")
                          for r in s.client.progress_reports[token]):
                assert asyncio.get_running_loop().time() < deadline, s.client.progress_reports[token]
                await asyncio.sleep(0.2)
            s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
            reply = await asyncio.wait_for(pending, TIMEOUT)
            assert reply == {"ok": False, "error": "profiling was cancelled", "cancelled": True}
            assert ours(cluster) == []  # scancel reached the queued job
            assert blocker in cluster.jobs()  # and only ours
    finally:
        cluster.run("scancel", blocker, check=False)
