"""No process of a captured program outlives its capture (analysis/capture/supervise.py): a real
program built and run through the real capture path starts descendants that try to escape
(tests/capture/programs/escape.cu). Each would create a marker file after sleeping; after the
capture returns, none of them is alive and no marker ever appears. Every case runs with and
without the PID namespace, since CI kernels may refuse unprivileged namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelscope.analysis.capture import capture_program
from kernelscope.analysis.capture.capture import Containment
from kernelscope.analysis.capture.capture import default_limits
from kernelscope.analysis.capture.supervise import Limits, _descendants_by_parent, descendants, user_tasks
from kernelscope.analysis.process import CancelToken, Cancelled

PROGRAM = Path(__file__).parent / "programs" / "escape.cu"
LINGER_S = 2  # how long a survivor sleeps before it creates its marker


def survivors(token: str) -> set[int]:
    """Live processes whose command line holds `token` (every fork of the program keeps its argv)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        out.add(int(entry.name))
            except OSError:
                pass
    return out


def started_pids(folder: Path) -> set[int]:
    f = folder / "pids"
    return {int(x) for x in f.read_text().split()} if f.is_file() else set()


def assert_contained(folder: Path, linger_s: float = LINGER_S) -> None:
    """Nothing with the folder in its command line is alive, and no marker appears once every
    survivor's sleep would have ended."""
    assert not survivors(str(folder))
    assert all(not Path(f"/proc/{p}").exists() or _zombie(p) for p in started_pids(folder))
    pids = folder / "pids"
    if pids.is_file():  # wait out the sleep from the last descendant's start, and a margin
        time.sleep(max(0.0, pids.stat().st_mtime + linger_s + 1.0 - time.time()))
    assert not list(folder.glob("marker-*"))


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def run(toolchain, tmp_path, mode: str, linger_s: int = LINGER_S, **kw):
    folder = tmp_path / f"escape-{mode}"
    folder.mkdir()
    c = capture_program(toolchain, PROGRAM, argv=[mode, str(folder), str(linger_s)],
                        cache_dir=tmp_path / "cache", containment=Containment(**kw))
    return c, folder


@pytest.mark.parametrize("namespaces", [True, False])
def test_a_child_left_behind_at_a_normal_exit_is_killed(toolchain, tmp_path, namespaces):
    c, folder = run(toolchain, tmp_path, "child", namespaces=namespaces)
    assert c.finished and c.exit_code == 0 and len(c.launches) == 1
    assert len(started_pids(folder)) == 1  # it did start
    assert_contained(folder)


@pytest.mark.parametrize("namespaces", [True, False])
def test_a_daemon_that_leaves_the_session_and_the_preload_is_killed(toolchain, tmp_path, namespaces):
    c, folder = run(toolchain, tmp_path, "setsid", namespaces=namespaces)
    assert c.finished and c.exit_code == 0
    assert len(started_pids(folder)) == 1
    assert_contained(folder)


@pytest.mark.parametrize("namespaces", [True, False])
def test_a_program_and_child_that_ignore_every_stop_are_killed_at_the_deadline(toolchain, tmp_path, namespaces):
    # SIGALRM (the runtime's own limit) and SIGTERM are blocked: only the supervisor's kill ends
    # them, after time_limit + 5 s; the child sleeps past that
    c, folder = run(toolchain, tmp_path, "stubborn", linger_s=8, time_limit=1, namespaces=namespaces)
    assert not c.finished and c.exit_code == -signal.SIGKILL and "stopped after" in c.output
    assert len(c.launches) == 1 and len(started_pids(folder)) == 1
    assert_contained(folder, linger_s=8)


@pytest.mark.parametrize("namespaces", [True, False])
def test_a_fork_loop_is_bounded_and_killed(toolchain, tmp_path, namespaces):
    # in a user namespace the limit counts that namespace's tasks only (the kernel's per-namespace
    # ucounts); outside one, every task of the user on the machine, however busy it is
    limits = Limits(processes=40 if namespaces else user_tasks() + 40)
    c, folder = run(toolchain, tmp_path, "forks", limits=limits, namespaces=namespaces)
    assert c.exit_code == 0
    started = started_pids(folder)
    assert started
    if os.getuid() != 0 or namespaces:  # RLIMIT_NPROC does not bind root outside a user namespace
        assert len(started) < 255
    assert_contained(folder)


def test_a_file_is_cut_at_the_size_limit(toolchain, tmp_path):
    c, folder = run(toolchain, tmp_path, "bigfile", limits=Limits(file_bytes=1 << 20), namespaces=False)
    assert c.exit_code == -signal.SIGXFSZ and not c.finished
    assert (folder / "big").stat().st_size == 1 << 20
    assert len(c.launches) == 1  # what it recorded before stands


def test_memory_beyond_the_limit_is_refused(toolchain, tmp_path):
    c, _ = run(toolchain, tmp_path, "memory", limits=Limits(address_space_bytes=1 << 30))
    assert c.exit_code == 3 and "cudaMalloc failed" in c.output


def test_cpu_time_is_limited_and_the_launches_are_kept(toolchain, tmp_path):
    c, _ = run(toolchain, tmp_path, "cpu", limits=Limits(cpu_seconds=1))
    # the capture runtime catches SIGXCPU like its own time limit, so its counts are written
    assert c.exit_code == 128 + signal.SIGXCPU and len(c.launches) == 1


def test_the_default_limits_bound_every_resource():
    lim = default_limits(20.0)
    assert lim.cpu_seconds == 25 and lim.file_bytes == 1 << 30
    assert lim.processes > user_tasks() and 0 < lim.address_space_bytes <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_a_cancelled_capture_leaves_nothing(toolchain, tmp_path):
    folder = tmp_path / "escape-cancel"
    folder.mkdir()
    token = CancelToken()
    outcome: list[BaseException | None] = []

    def capture() -> None:
        try:
            capture_program(toolchain, PROGRAM, argv=["stubborn", str(folder), "60"],
                            containment=Containment(time_limit=60), cache_dir=tmp_path / "cache", cancel=token)
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - what ended it is the assertion
            outcome.append(e)

    t = threading.Thread(target=capture)
    t.start()
    _wait_for(lambda: started_pids(folder), t)
    token.cancel()
    t.join()
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled)
    assert_contained(folder, linger_s=0)


def test_a_capture_whose_caller_is_killed_leaves_nothing(toolchain, tmp_path):
    """kernelscope itself dies (SIGKILL, no cleanup of its own): the supervisor's parent-death
    signal still kills the program's tree."""
    folder = tmp_path / "escape-orphaned"
    folder.mkdir()
    script = (
        "import sys; from pathlib import Path; from kernelscope.analysis.capture.capture import Containment, "
        "capture_program; from kernelscope.analysis.frontend.toolchain import locate_toolchain;"
        "capture_program(locate_toolchain(), Path(sys.argv[3]), argv=['stubborn', sys.argv[4], '60'],"
        " containment=Containment(time_limit=60), cache_dir=Path(sys.argv[5]))")
    caller = subprocess.Popen([sys.executable, "-c", script, str(toolchain.nvcc), str(toolchain.cuobjdump), str(PROGRAM),
                               str(folder), str(tmp_path / "cache")])
    try:
        _wait_for(lambda: started_pids(folder), caller)
    finally:
        caller.kill()
        caller.wait()
    # the supervisor cleans up on its own now: give it the time a loaded machine may need
    _wait_for(lambda: not survivors(str(folder)), None, seconds=30)
    assert_contained(folder, linger_s=0)


def test_both_readings_of_the_process_tree_agree(tmp_path):
    """The supervisor reads a tree from /proc/PID/task/TID/children, or, on a kernel without that
    file, from every process's parent: both give the same descendants, grandchildren included."""
    ready = tmp_path / "ready"
    # a sleep, and a subshell with two sleeps that says it is ready once they are forked (`: >`
    # is the shell's own redirection: no process of its own to race with the count)
    tree = subprocess.Popen(["sh", "-c", f"sleep 30 & (sleep 30 & sleep 30 & : > {ready}; wait) & wait"],
                            start_new_session=True)
    try:
        _wait_for(ready.exists, tree, seconds=30)
        found = descendants(tree.pid)
        assert len(found) == 4 and found == _descendants_by_parent(tree.pid)
    finally:
        os.killpg(tree.pid, signal.SIGKILL)
        tree.wait()


def _wait_for(condition, worker, seconds: float = 300) -> None:
    """Poll until `condition()` holds (the build takes a while); fail if the worker ended first."""
    end = time.monotonic() + seconds
    while not condition():
        alive = worker.is_alive() if isinstance(worker, threading.Thread) else worker is None or worker.poll() is None
        assert alive, "the capture ended before its program started"
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.05)
