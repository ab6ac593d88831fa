"""Running external tools (nvcc, nvdisasm, ncu, a user's program) so they can always be stopped.

Every child starts in its own process group, so cancelling or timing out kills the
whole tree (nvcc forks cicc, ptxas and the host compiler) and leaves no orphans.
Commands are argument lists and never go through a shell.

A tool that owns a tree a group kill cannot reach (the capture supervisor,
analysis/capture/supervise.py) is started with `stop_grace`: it is asked to stop with SIGTERM,
and its group is killed only if it is still running that many seconds later.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path


class Cancelled(Exception):
    """The analysis was superseded or cancelled by the user."""


class ToolTimeout(Exception):
    def __init__(self, argv: list[str], seconds: float):
        super().__init__(f"{Path(argv[0]).name} did not finish within {seconds:g} s and was stopped")
        self.argv = argv
        self.seconds = seconds


@dataclass
class CancelToken:
    """Shared between the scheduler (which cancels) and the pipeline (which checks and registers children)."""

    _event: threading.Event = field(default_factory=threading.Event)
    _children: set[Started] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            children = list(self._children)
        for child in children:
            child.stop()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    def register(self, child: Started) -> None:
        """Stop `child` when the token is cancelled (at once if it already is)."""
        with self._lock:
            self._children.add(child)
        if self._event.is_set():
            child.stop()

    def _unregister(self, child: Started) -> None:
        with self._lock:
            self._children.discard(child)


def kill_tree(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True)
class ToolResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


@dataclass(eq=False)
class Started:
    """A tool `start_tool` started and nobody has waited for yet: its output is being read."""

    argv: tuple[str, ...]
    cwd: Path | None
    env: dict[str, str] | None
    child: subprocess.Popen
    _out: list[bytes]
    _err: list[bytes]
    _readers: list[threading.Thread]
    stop_grace: float | None = None

    def stop(self) -> None:
        """Kill its process group now, or, for a tool started with `stop_grace`, ask it to stop
        (SIGTERM) and kill its group if it is still running `stop_grace` seconds later."""
        if self.stop_grace is None:
            kill_tree(self.child)
            return
        try:
            os.kill(self.child.pid, signal.SIGTERM)
        except ProcessLookupError:
            return

        def overdue() -> None:
            if self.child.returncode is None:  # not reaped yet: its group id is still its own
                kill_tree(self.child)

        timer = threading.Timer(self.stop_grace, overdue)
        timer.daemon = True
        timer.start()

    def kill(self) -> None:
        """Stop it and its whole tree, and reap it (a started tool nobody adopts)."""
        self.stop()
        self.child.wait()
        for r in self._readers:
            r.join(timeout=5)


def start_tool(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
               max_output: int = 64 * 1024 * 1024, stop_grace: float | None = None) -> Started:
    """Start argv in its own process group and read its output on two threads.

    Output beyond `max_output` bytes per stream is dropped (a program that floods its
    output must not exhaust the server's memory).
    """
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []

    def pump(stream, sink: list[bytes]) -> None:
        kept = 0
        for chunk in iter(lambda: stream.read(65536), b""):
            if kept < max_output:
                sink.append(chunk[: max_output - kept])
                kept += len(sink[-1])

    readers = [threading.Thread(target=pump, args=(child.stdout, out_chunks), daemon=True),
               threading.Thread(target=pump, args=(child.stderr, err_chunks), daemon=True)]
    for r in readers:
        r.start()
    return Started(tuple(argv), cwd, env, child, out_chunks, err_chunks, readers, stop_grace)


def finish_tool(started: Started, *, timeout: float | None = None, cancel: CancelToken | None = None) -> ToolResult:
    """Wait for a started tool; raise Cancelled or ToolTimeout after killing its process group."""
    child = started.child
    if cancel is not None:
        cancel.register(started)
    # Popen.wait(timeout) polls with growing sleeps, adding up to 50 ms to every tool run;
    # a timer that kills the group keeps the wait blocking and exact.
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        started.stop()

    timer = threading.Timer(timeout, expire) if timeout else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        child.wait()
        if timed_out.is_set():
            raise ToolTimeout(list(started.argv), timeout or 0.0)
    finally:
        if timer is not None:
            timer.cancel()
        # Grandchildren (e.g. a daemonised helper of the user's program) may outlive the leader.
        kill_tree(child)
        for r in started._readers:
            r.join(timeout=5)
        if cancel is not None:
            cancel._unregister(started)
    if cancel is not None and cancel.cancelled:
        raise Cancelled()
    return ToolResult(started.argv, child.returncode, b"".join(started._out).decode("utf-8", "replace"),
                      b"".join(started._err).decode("utf-8", "replace"))


def run_tool(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
             timeout: float | None = None, cancel: CancelToken | None = None,
             max_output: int = 64 * 1024 * 1024, stop_grace: float | None = None) -> ToolResult:
    """Run argv to completion; raise Cancelled or ToolTimeout after stopping it (see `Started.stop`)."""
    if cancel is not None:
        cancel.check()
    return finish_tool(start_tool(argv, cwd=cwd, env=env, max_output=max_output, stop_grace=stop_grace),
                       timeout=timeout, cancel=cancel)
