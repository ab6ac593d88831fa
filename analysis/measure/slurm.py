"""Running the profiler on a Slurm cluster through `srun`, with Slurm's own commands around it.

A remote wrapper whose `run` template contains `srun` (alone, or behind `ssh login01`) is a Slurm
submission. What Slurm adds to running any remote command:
- **a name to find the job by.** srun gets `--job-name=kernelscope-<random>`; `scancel --name` and
  `squeue --name` then reach exactly this run, without parsing srun's messages for a job id;
- **cancel and timeout reach the job.** Killing the local srun is not enough: behind ssh the kill
  never reaches the login node's srun, and a killed srun's step can outlive it until slurmctld
  notices. So an editor's cancel or a timeout also runs `scancel --name=...`;
- **a pending job that can never start is refused.** srun waits for resources forever when every
  node of the partition is down or drained; the watcher asks `squeue` for the job's state and
  `sinfo` for its partition's nodes, and cancels the job with the nodes' states and reasons
  (each second at first, then every 10 s);
- **progress.** The job's state changes (pending and why, running on which node) are reported
  while srun waits and runs; `srun --unbuffered` passes the profiler's own lines on as they are
  written, so the output of a run that was stopped is complete up to the stop.

Slurm commands behind the same prefix as srun (e.g. `ssh login01`) run the same way, so a laptop
can submit through a login node.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..process import ToolResult, ToolTimeout, run_tool

#: Node states (sinfo %T, without its `*`/`~`/`#`... suffixes) in which a node takes no new job until
#: an admin acts (sinfo(1), NODE STATE CODES): `draining` still runs what it has but takes nothing new.
#: Passing states are not here: `unknown` (slurmd not registered yet), powered down (`~`: powered up
#: for a job), rebooting, `maint` (a reservation that ends).
_DEAD = {"down", "drained", "draining", "drain", "fail", "failing", "future", "inval"}
#: Pending reasons (squeue %r) that no amount of waiting resolves (squeue(1), JOB REASON CODES).
_NEVER = {"PartitionDown", "PartitionInactive", "InvalidAccount", "InvalidQOS", "BadConstraints",
          "PartitionNodeLimit", "PartitionTimeLimit", "AccountNotAllowed", "QOSNotAllowed"}
#: srun's and slurmstepd's own error lines; "task N: <how it ended>" is the program's failure, not
#: Slurm's. "*** STEP 12.0 ON gpu017 CANCELLED AT ... DUE TO TIME LIMIT ***" is Slurm's, and is kept.
_SLURM_ERROR = re.compile(r"^(?:srun|sbatch|slurmstepd(?:-[\w.-]+)?): error: (.*)$", re.MULTILINE)
_TASK_EXIT = re.compile(r"\btasks? [\d,\-\[\]]+: ")  # "vm: task 0: Segmentation fault", "vm: tasks 0-1: Exited with ..."
_EXEC_MISSING = re.compile(r"execve\(\): (\S+): No such file or directory")

NODE_TOOL_HINT = ("Give its full path as the compute nodes see it, or load its module in the job "
                  "(e.g. srun ... bash -lc 'module load cuda && exec \"$@\"' sh); ncu comes with the CUDA toolkit")

#: squeue each second for the first polls (a job that starts at once, a partition that is down), then
#: every 10 s: each squeue is an RPC to slurmctld, which a cluster's users share
POLL_S, POLL_LATER_S, QUICK_POLLS = 1.0, 10.0, 10


@dataclass(frozen=True)
class SlurmJob:
    """One submission: its unique name, and how this machine runs Slurm's commands."""

    name: str
    prefix: tuple[str, ...]  # what precedes srun/sbatch in the template (nothing, or e.g. ssh login01)
    quote: bool  # a remote shell parses the commands (ssh): quote them
    batch: bool = False  # sbatch --wait: the output goes to files in the job's working directory

    def argv(self, command: Sequence[str]) -> list[str]:
        return [*self.prefix, shlex.join(command)] if self.quote else [*self.prefix, *command]

    @property
    def output_files(self) -> tuple[str, str]:
        """The batch job's stdout and stderr, relative to its working directory (sbatch --chdir)."""
        return f"{self.name}.out", f"{self.name}.err"


_SUBMIT = ("srun", "sbatch")


def srun_index(run: Sequence[str]) -> int | None:
    """Where `srun` or `sbatch` stands in a run template (by its basename), or None for a non-Slurm wrapper."""
    return next((i for i, a in enumerate(run) if Path(a).name in _SUBMIT), None)


def job_for(run: Sequence[str], token: str, *, quote: bool) -> SlurmJob | None:
    i = srun_index(run)
    if i is None:
        return None
    return SlurmJob(name=f"kernelscope-{token}", prefix=tuple(run[:i]), quote=quote,
                    batch=Path(run[i]).name == "sbatch")


def named(run: Sequence[str], job: SlurmJob) -> tuple[str, ...]:
    """The template with our options added as the last ones before the program (later options win,
    so a `-J` of the user's cannot hide the job from `scancel --name`).

    srun: the job's name and unbuffered output. sbatch: the name, `--wait` (sbatch returns when the
    job ends, with its exit status), output files of ours, and the command as `--wrap` (a line a
    shell on the node parses: `fill` quotes an argv embedded in a longer argument)."""
    if job.batch:
        out, err = job.output_files
        ours: tuple[str, ...] = (f"--job-name={job.name}", "--wait", f"--output={out}", f"--error={err}")
        program: tuple[str, ...] = ("--wrap={command}",)
    else:
        ours, program = (f"--job-name={job.name}", "--unbuffered"), ("{command}",)
    if "{command}" in run:
        at = run.index("{command}")
        return (*run[:at], *ours, *program, *run[at + 1:])
    at = (srun_index(run) or 0) + 1
    return (*run[:at], *ours, *run[at:])


def take_batch_output(job: SlurmJob, workdir: Path) -> tuple[str, str]:
    """A batch job's stdout and stderr, read from its working directory (a shared filesystem) and removed."""
    texts = []
    for name in job.output_files:
        path = workdir / name
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
            path.unlink()
        except OSError:
            texts.append("")
    return texts[0], texts[1]


# --- reading Slurm's answers (pure) ---------------------------------------------------------------


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETING, ... (squeue %T)
    partition: str
    reason: str  # why it is pending (squeue %r), "None" when running
    nodes: str


@dataclass(frozen=True)
class NodeState:
    node: str
    state: str  # sinfo %T, lower case, suffixes such as `*` (not responding) kept
    reason: str  # sinfo %E, the admin's reason

    @property
    def usable(self) -> bool:
        # A trailing `*` (not responding) alone is not final: the node may answer again within seconds.
        base = self.state.rstrip("*~#!%$@^-")
        return base not in _DEAD and "drain" not in base


QUEUE_FORMAT = "%i|%T|%P|%r|%N"
NODES_FORMAT = "%N|%T|%E"


def parse_queue(text: str) -> JobState | None:
    """The first line of `squeue -h -o QUEUE_FORMAT` (a job step of ours has one line)."""
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5:
            return JobState(*parts)
    return None


def parse_nodes(text: str) -> tuple[NodeState, ...]:
    out = []
    for line in text.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3:
            out.append(NodeState(parts[0], parts[1].lower(), parts[2]))
    return tuple(out)


def unschedulable(job: JobState, nodes: Sequence[NodeState]) -> str | None:
    """Why a pending job can never start, in Slurm's words; None while waiting can still help."""
    if job.state != "PENDING":
        return None
    if job.reason in _NEVER:
        return f"Slurm will not start the job in partition {job.partition}: {job.reason}"
    if nodes and not any(n.usable for n in nodes):
        why = "; ".join(f"{n.node} is {n.state}" + (f" ({n.reason})" if n.reason and n.reason != "none" else "")
                        for n in nodes)
        return f"No node of partition {job.partition} can run the job: {why}"
    return None


def progress_text(job: JobState) -> str:
    if job.state == "PENDING":
        return f"Slurm job {job.job_id} pending in {job.partition} ({job.reason})"
    if job.state == "RUNNING":
        return f"Slurm job {job.job_id} running on {job.nodes}"
    return f"Slurm job {job.job_id} {job.state.lower()}"


def slurm_failure(result: ToolResult) -> tuple[str, str | None] | None:
    """(Slurm's own error text, the missing program if execve failed) when Slurm failed, not the program."""
    if result.returncode == 0:
        return None
    lines = [m.group(1).strip() for m in _SLURM_ERROR.finditer(result.stderr) if not _TASK_EXIT.search(m.group(1))]
    if not lines:
        return None
    missing = _EXEC_MISSING.search(result.stderr)
    return " / ".join(dict.fromkeys(lines)), missing.group(1) if missing else None


# --- Slurm's commands (side effects) --------------------------------------------------------------


def query(job: SlurmJob, argv: Sequence[str]) -> str:
    """stdout of a short Slurm command; empty when Slurm does not answer (the watcher tries again)."""
    try:
        result = run_tool(job.argv(argv), timeout=30)
    except (OSError, ToolTimeout):
        return ""
    return result.stdout if result.returncode == 0 else ""


def cancel(job: SlurmJob) -> None:
    """scancel every job and step of this name, and wait for them to be gone (so no task is left)."""
    try:
        run_tool(job.argv(["scancel", f"--name={job.name}"]), timeout=30)
    except (OSError, ToolTimeout):
        return
    for _ in range(30):
        if not query(job, ["squeue", "-h", f"--name={job.name}", "-o", "%i"]).strip():
            return
        time.sleep(POLL_S)


class Watch:
    """Follows the job while srun or sbatch waits for it: reports its state, and cancels it when it can never start."""

    def __init__(self, job: SlurmJob, on_progress: Callable[[str], None] | None = None):
        self.job = job
        self.on_progress = on_progress
        self.refused: str | None = None  # why Slurm could never run the job, once the watcher cancelled it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch {job.name}", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=35)

    def _run(self) -> None:
        last = ""
        polls = 0
        while not self._stop.wait(POLL_S if polls < QUICK_POLLS else POLL_LATER_S):
            polls += 1
            state = parse_queue(query(self.job, ["squeue", "-h", f"--name={self.job.name}", "-o", QUEUE_FORMAT]))
            if state is None:
                continue
            if self.on_progress is not None and (text := progress_text(state)) != last:
                self.on_progress(text)
                last = text
            if state.state != "PENDING":
                continue
            nodes = parse_nodes(query(self.job, ["sinfo", "-h", "-N", "-p", state.partition, "-o", NODES_FORMAT]))
            if (why := unschedulable(state, nodes)) is not None and not self._stop.is_set():
                self.refused = why
                cancel(self.job)  # srun/sbatch then end by themselves ("Job allocation ... has been revoked")
                return


__all__ = ["JobState", "NodeState", "SlurmJob", "Watch", "cancel", "job_for", "named", "parse_nodes", "parse_queue",
           "progress_text", "slurm_failure", "srun_index", "take_batch_output", "unschedulable"]
