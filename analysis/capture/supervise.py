"""The supervisor a captured program runs under: it owns the program's whole process tree.

A process group is not a boundary: a descendant that calls `setsid()` leaves it, and one that
double-forks is reparented away from its parent. This process makes itself a child subreaper
(prctl(PR_SET_CHILD_SUBREAPER), Linux 3.4), so every orphaned descendant is reparented to it
instead of to init, and at the end (the program exited, the deadline passed, or kernelscope asked
it to stop or died: PR_SET_PDEATHSIG) it stops every descendant with SIGSTOP, which cannot be
caught, until no new one appears, then kills them all and reaps them. A frozen tree cannot fork,
so a fork loop cannot outrun the kill. The program itself runs with resource limits
(`Limits`), set between fork and exec.

Run as a script with the standard library only (`python -I supervise.py CONFIG -- ARGV...`): it
must start fast and must not import kernelscope, whose import may be anything but small.
CONFIG is JSON: {"deadline": seconds, "status": path, "parent": pid, "limits": {...}}. The
program's output goes where the supervisor's goes; its outcome is written to `status` as JSON.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # kernelscope's stop, and its death (pdeathsig)
_GRACE_S = 1.0  # after the deadline, SIGTERM lets the capture runtime write its launch counts


@dataclass(frozen=True)
class Limits:
    """Resource limits of the captured program and of each process it starts (setrlimit(2)).
    None leaves a limit as the supervisor's own."""

    address_space_bytes: int | None = None  # RLIMIT_AS: its memory, mapped or not
    file_bytes: int | None = None  # RLIMIT_FSIZE: the largest file it may write (SIGXFSZ beyond)
    cpu_seconds: int | None = None  # RLIMIT_CPU, per process: SIGXCPU at the limit, SIGKILL 5 s later
    processes: int | None = None  # RLIMIT_NPROC: counted per user over the whole machine (root is exempt)

    def apply(self) -> None:
        """Set the limits in the calling process (the program, between fork and exec)."""
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the user's source folder
        for which, value, hard_extra in ((resource.RLIMIT_AS, self.address_space_bytes, 0),
                                         (resource.RLIMIT_FSIZE, self.file_bytes, 0),
                                         (resource.RLIMIT_CPU, self.cpu_seconds, 5),
                                         (resource.RLIMIT_NPROC, self.processes, 0)):
            if value is not None:
                _, hard = resource.getrlimit(which)
                soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
                top = value + hard_extra if hard == resource.RLIM_INFINITY else min(value + hard_extra, hard)
                resource.setrlimit(which, (soft, top))


@dataclass(frozen=True)
class Outcome:
    """What became of the program: its exit code or the signal that ended it, whether the deadline
    or a stop request ended it, and how many other processes of its tree were still alive at the
    end (all killed)."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    stopped: bool
    leftovers: int


def user_tasks() -> int:
    """Tasks (threads included) the current real user runs: what RLIMIT_NPROC counts."""
    uid, n = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    n += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                pass
    return n


def descendants(root: int) -> set[int]:
    """Every live descendant of `root`, from /proc/PID/task/TID/children (or the parent links of
    all of /proc where the kernel lacks that file)."""
    out: set[int] = set()
    todo = [root]
    if not Path(f"/proc/{root}/task/{root}/children").exists():
        return _descendants_by_parent(root)
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                kids = {int(k) for k in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()}
            except OSError:
                continue
            todo += kids - out
            out |= kids
    return out


def _descendants_by_parent(root: int) -> set[int]:
    parent: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                parent[int(entry.name)] = st[1]
    out: set[int] = set()
    grew = True
    while grew:
        new = {p for p, pp in parent.items() if (pp == root or pp in out) and p not in out}
        out |= new
        grew = bool(new)
    return out


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[0], int(fields[1])


def _frozen(pid: int) -> bool:
    st = _stat(pid)
    return st is None or st[0] in ("T", "t", "Z", "X", "x")


def kill_all(root: int) -> int:
    """Stop every descendant of `root`, then kill and reap them; repeat until none is left.
    Returns how many processes were killed."""
    killed: set[int] = set()
    while True:
        stopped: set[int] = set()
        # SIGSTOP arrives asynchronously: a process may still fork until it is seen stopped, so the
        # tree is rescanned until every member is frozen and no new one has appeared
        while True:
            found = descendants(root)
            new = found - stopped
            for pid in new:
                _signal(pid, signal.SIGSTOP)
            stopped |= new
            if not new and all(_frozen(p) for p in stopped):
                break
            time.sleep(0.001)
        for pid in stopped:
            _signal(pid, signal.SIGKILL)
        killed |= stopped
        _reap()
        if not stopped and not descendants(root):
            return len(killed)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(program: int | None = None) -> int | None:
    """Reap every exited child (orphans are reparented to us); the program's wait status if it was one."""
    status = None
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == program:
            status = st


def supervise(argv: list[str], *, deadline: float, limits: Limits, parent: int | None = None) -> Outcome:
    """Run argv as a child with `limits`, wait for it until `deadline` seconds or a stop signal,
    then kill whatever is left of its tree."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    waited = {signal.SIGCHLD, *_STOPS}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)  # taken synchronously by sigtimedwait below
    if parent is not None and os.getppid() != parent:
        return Outcome(None, None, False, True, 0)  # kernelscope died before pdeathsig was armed

    def child_setup() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a backstop should this process be killed
        limits.apply()

    start = time.monotonic()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=child_setup)
    status = None
    timed_out = stopped = False
    while status is None:
        left = deadline - (time.monotonic() - start)
        if left <= 0:
            timed_out = True
            break
        info = signal.sigtimedwait(waited, left)
        if info is not None and info.si_signo in _STOPS:
            stopped = True
            break
        status = _reap(child.pid)
    if timed_out:
        for pid in descendants(os.getpid()):
            _signal(pid, signal.SIGTERM)
        end = time.monotonic() + _GRACE_S
        while status is None and (left := end - time.monotonic()) > 0:
            signal.sigtimedwait({signal.SIGCHLD}, left)
            status = _reap(child.pid)
    leftovers = kill_all(os.getpid())
    if status is None:
        status = _reap(child.pid)
    if status is None:
        return Outcome(None, signal.SIGKILL, timed_out, stopped, leftovers)
    if os.WIFSIGNALED(status):
        return Outcome(None, os.WTERMSIG(status), timed_out, stopped, leftovers)
    return Outcome(os.WEXITSTATUS(status), None, timed_out, stopped, leftovers)


def main(args: list[str]) -> int:
    config = json.loads(args[0])
    if args[1] != "--":
        raise SystemExit("usage: supervise.py CONFIG -- ARGV...")
    out = supervise(args[2:], deadline=float(config["deadline"]), limits=Limits(**config.get("limits", {})),
                    parent=config.get("parent"))
    Path(config["status"]).write_text(json.dumps(asdict(out)))
    return out.exit_code if out.exit_code is not None else 128 + (out.signal or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
