"""The second stage's independent engine runs, spread over forked worker processes.

Sensitivity's perturbed runs and what-if's points are independent of one another once the base
run is done, and each is a pure function of data the process already holds. The engine is pure
Python, so threads would share one interpreter lock; forked processes inherit everything (the
program, the prepared kernel, the wave cache) without pickling it, and send back only the small
result of each job. A forked child runs nothing but the emulator: no I/O, no logging, no locks
another thread could hold, and it leaves through `os._exit` (nothing of the parent's buffered
output is flushed twice).

The outcome is the same as running the jobs in order: each job is deterministic, and results come
back in job order. Only cost moves: the children's issues are charged to the parent's ledger when
they report. A cancelled analysis kills its children at once; a child whose parent died is killed
by the kernel (PR_SET_PDEATHSIG), so none outlives the analysis.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import select
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

from .budget import Ledger

T = TypeVar("T")

#: while waiting for a child, the parent looks at its cancel token this often (seconds)
POLL_S = 0.02
_PR_SET_PDEATHSIG = 1


def available_cores() -> int:
    """CPUs this process may run on (a container's or taskset's limit, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    # macOS system frameworks are not fork-safe and Windows has no fork: those run the jobs in order
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def fan_out(jobs: Sequence[Callable[[], T]], processes: int, ledger: Ledger | None = None, *,
            here: bool = True) -> list[T]:
    """Each job's result, in order; jobs run on up to `processes` processes (this one included,
    unless `here` is False: then up to `processes` children run them all, and this process only
    waits, its interpreter free for other threads, such as a language server's requests).

    The jobs' indices wait in a pipe that every process reads the next one from (a read of a few
    bytes from a pipe is atomic), so a process that drew short jobs takes more: runs of very
    different cost (a 3-deep nest's block sizes) still end together. An exception in any job is
    raised here, the earliest job's first; `Cancelled` and `BudgetSpent` included."""
    n = min(processes, len(jobs))
    if not can_fork() or not jobs or (here and n <= 1):
        return [job() for job in jobs]
    queue_r, queue_w = os.pipe()
    os.write(queue_w, b"".join(i.to_bytes(_INDEX_BYTES, "little") for i in range(len(jobs))))
    os.close(queue_w)  # drained, the queue reads as end-of-file in every process
    running: list[tuple[int, int]] = []  # (pid, read end) of children not yet collected
    reports = []
    try:
        for _ in range(n - 1 if here else n):  # n >= 1: no jobs returned above
            running.append(_spawn(jobs, queue_r, ledger))
        mine = _run_queue(jobs, queue_r, ledger) if here else []
        while running:
            status, data = _drain(*running[0], ledger.cancel if ledger is not None else None)
            running.pop(0)  # reaped: its pid is no longer ours to kill
            reports.append(_report(status, data))
    finally:
        os.close(queue_r)
        for pid, fd in running:  # an exception above (cancel, budget, a bug): none may be left running
            _kill(pid, fd)
    results: dict[int, T] = {}
    errors: list[tuple[int, BaseException]] = []
    for outcome, spent, runs in [(mine, 0, 0), *reports]:
        if ledger is not None:
            ledger.spent += spent
            ledger.runs += runs
        for i, ok, value in outcome:
            if ok:
                results[i] = value
            else:
                errors.append((i, value))
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return [results[i] for i in range(len(jobs))]


#: a job index in the queue pipe
_INDEX_BYTES = 4


def _run_queue(jobs, queue: int, ledger: Ledger | None) -> list[tuple[int, bool, object]]:
    """(index, True, result) or (index, False, exception) per job this process took; after an
    exception it takes no more (its cause, a cancel or a spent budget, stops the others too)."""
    out: list[tuple[int, bool, object]] = []
    while len(data := os.read(queue, _INDEX_BYTES)) == _INDEX_BYTES:
        i = int.from_bytes(data, "little")
        try:
            out.append((i, True, jobs[i]()))
        except Exception as e:  # noqa: BLE001 - handed to the parent, which raises it
            out.append((i, False, e))
            break
    return out


#: held from a result pipe's creation until the parent closed its write end: a child forked by
#: another analysis in between would hold that end open, and the parent would wait for it too
_FORK_LOCK = threading.Lock()


def _spawn(jobs, queue: int, ledger: Ledger | None) -> tuple[int, int]:
    """Fork a child that takes jobs from `queue` until it is empty; (its pid, its result pipe)."""
    with _FORK_LOCK:
        r, w = os.pipe()
        with warnings.catch_warnings():
            # Python >= 3.12 warns on fork() in a threaded process (the language server is one);
            # the child touches no lock another thread may hold (module docstring)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid != 0:
            os.close(w)
            return pid, r
    # the child
    code = 0
    try:
        os.close(r)
        _close_inherited((queue, w))
        _die_with_parent()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        before = (ledger.spent, ledger.runs) if ledger is not None else (0, 0)
        outcome = _run_queue(jobs, queue, ledger)
        spent = (ledger.spent - before[0], ledger.runs - before[1]) if ledger is not None else (0, 0)
        try:
            data = pickle.dumps((outcome, *spent))
        except Exception as e:  # noqa: BLE001 - an unpicklable result or exception: say what it was
            data = pickle.dumps(([(outcome[0][0] if outcome else 0, False,
                                   RuntimeError(f"a worker's result could not be sent: {e!r}"))], *spent))
        with os.fdopen(w, "wb") as f:
            f.write(data)
    except BaseException:  # noqa: BLE001 - the parent sees a short read and raises
        code = 1
    finally:
        os._exit(code)


def _close_inherited(keep: tuple[int, ...]) -> None:
    """Close every descriptor the fork copied that this child does not use (standard streams
    aside). Another thread of the parent may have had a pipe open at the fork; its copy here would
    keep it open as long as this child lives. One such pipe is the one a `subprocess.Popen` in
    progress reads until its child has exec'd: a run ahead forked while nvcc was being started
    held nvcc's start back for the whole NVRTC compile (minutes for slow_template.cu)."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _drain(pid: int, fd: int, cancel) -> tuple[int, bytes]:
    """The child's exit code and what it wrote; while it runs, a cancel of the analysis raises
    `Cancelled` here (and the caller kills the child)."""
    chunks: list[bytes] = []
    while True:
        if cancel is not None:
            cancel.check()
        ready, _, _ = select.select([fd], [], [], POLL_S)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


def _report(code: int, data: bytes):
    if code != 0 or not data:
        raise RuntimeError(f"an emulator worker process failed (exit code {code})")
    return pickle.loads(data)


def _kill(pid: int, fd: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass
