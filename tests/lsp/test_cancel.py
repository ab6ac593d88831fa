"""Cancelling a long analysis kills the compiler: from the client's progress UI, and by a newer save."""

import asyncio
import hashlib
import os
from pathlib import Path

from lsprotocol import types

SLOW = "slow_template.cu"  # minutes to compile


def _procs() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, session, name) for every live (non-zombie) process."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        out[int(d.name)] = (int(fields[1]), int(fields[3]), name)
    return out


def _descendants(root: int) -> dict[int, tuple[int, int, str]]:
    procs = _procs()
    found, frontier = {}, {root}
    while frontier:
        frontier = {pid for pid, (ppid, _, _) in procs.items() if ppid in frontier and pid not in found}
        found.update({pid: procs[pid] for pid in frontier})
    return found


async def _wait_for_compiler(server_pid: int, timeout: float = 60) -> set[int]:
    """Sessions of the compiler tree once cicc or ptxas runs under the server (nvcc runs in a
    session of its own; NVRTC's child, forked, in the server's)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        kids = _descendants(server_pid)
        if any(name in ("cicc", "ptxas") for _, _, name in kids.values()):
            return {sid for _, sid, _ in kids.values() if sid != os.getsid(server_pid)}
        await asyncio.sleep(0.05)
    raise TimeoutError("the compiler never started")


async def _gone(sessions: set[int], server_pid: int | None = None, timeout: float = 10) -> bool:
    """No process of the compiler's sessions is left; with `server_pid`, no child of the server either."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if not any(sid in sessions for _, sid, _ in _procs().values()) and not (
                server_pid is not None and _descendants(server_pid)):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_cancel_from_progress_kills_the_compiler(lsp):
    async with lsp() as s:
        server_pid = s.client._server.pid
        await s.open(SLOW, wait=False)
        sessions = await _wait_for_compiler(server_pid)
        tokens = [t for t, reports in s.client.progress_reports.items()
                  if any(isinstance(r, types.WorkDoneProgressBegin) and r.cancellable for r in reports)]
        assert len(tokens) == 1, s.client.progress_reports
        n = len(s.finished)
        s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=tokens[0]))
        done = await s.wait_finished(s.uri(SLOW), n, timeout=30, final=False)
        assert done["cancelled"] == "user"
        assert await _gone(sessions, server_pid), f"compiler processes left: {_descendants(server_pid)}"
        # the progress ends after the outcome is published: wait for that message, briefly
        for _ in range(100):
            if isinstance(s.client.progress_reports[tokens[0]][-1], types.WorkDoneProgressEnd):
                break
            await asyncio.sleep(0.05)
        assert isinstance(s.client.progress_reports[tokens[0]][-1], types.WorkDoneProgressEnd)
        stats = await s.stats()
        assert stats["running"] == 0 and stats["cancelled"] == 1


async def test_newer_save_supersedes_a_running_compile(lsp, workspace):
    async with lsp() as s:
        server_pid = s.client._server.pid
        await s.open(SLOW, wait=False)
        sessions = await _wait_for_compiler(server_pid)
        fast = (workspace / "tracked.cu").read_text()
        s.change(SLOW, types.TextDocumentContentChangeWholeDocument(text=fast))
        done = await s.save(SLOW, fast)  # the file now compiles in a second
        assert done["cache"] == "miss" and done["compiled"] is True
        assert await _gone(sessions, server_pid), f"compiler processes left: {_descendants(server_pid)}"
        assert [f.get("cancelled") for f in s.finished if f["uri"] == s.uri(SLOW)][0] == "superseded"
        assert [d.range.start.line for d in s.diagnostics(SLOW) if d.source == "nvcc"] == [3]


async def test_shutdown_kills_running_compiles(lsp):
    async with lsp() as s:
        server_pid = s.client._server.pid
        await s.open(SLOW, wait=False)
        sessions = await _wait_for_compiler(server_pid)
    assert await _gone(sessions)


NEST = """__global__ void nest3(float* out, int n) {
  float s = 0.f;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      for (int c = 0; c < n; ++c) s = s * 0.999f + (float)(a ^ b ^ c);
  out[threadIdx.x] = s;
}

int main() { nest3<<<64, 256>>>((float*)0, 1000); return 0; }
"""


async def test_a_save_during_the_second_stage_stops_it_at_once(lsp, workspace):
    """Issue 13: a 3-deep loop nest's second stage runs for seconds after its quick result (a large
    budget here); a newer save stops it between two engine runs, not at the end of the kernel's
    study. The cancelled job reports only once its thread has stopped, and it does so before the
    newer save's compile has even produced a quick result."""
    (workspace / "nest.cu").write_text(NEST)
    async with lsp({"analysis": {"budget": {"issues": 20_000_000, "seconds": 600}}}) as s:
        uri = s.uri("nest.cu")
        n = len(s.finished)
        await s.open("nest.cu", wait=False)
        quick = await s.wait_finished(uri, n, timeout=120, final=False)
        assert quick.get("depth") == "quick", quick
        edited = NEST.replace("0.999f", "0.998f")
        s.change("nest.cu", types.TextDocumentContentChangeWholeDocument(text=edited))
        done = await s.save("nest.cu", edited)
        after = [f for f in s.finished[n:] if f["uri"] == uri][1:]  # past the first quick result
        assert "cancelled" in after[0] and after[0]["cancelled"] == "superseded", after
        assert after[1].get("depth") == "quick" and done["depth"] == "full" and done["compiled"], after
        # each result names the text it describes: a client tells the first save's from the second's
        assert quick["sourceSha256"] == hashlib.sha256(NEST.encode()).hexdigest()
        assert after[1]["sourceSha256"] == done["sourceSha256"] == hashlib.sha256(edited.encode()).hexdigest()
        stats = await s.stats()
        assert stats["running"] == 0 and stats["cancelled"] == 1, stats
