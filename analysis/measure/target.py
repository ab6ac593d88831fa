"""What to profile and where: the user's program, and how to reach a remote GPU machine.

A remote wrapper is an argument template, e.g. `["ssh", "gpu01", "cd {cwd} && {command}"]` or
`["srun", "-p", "gpu", "--chdir={cwd}", "{command}"]`. Nothing is ever interpreted by a local shell.
Quoting follows who parses the text on the far side:
- `remote_shell` (default for ssh): ssh joins its arguments and a *remote shell* parses them, so
  every placeholder is substituted shell-quoted (`shlex.quote`) and `{command}` becomes one
  quoted command line;
- otherwise (srun, docker exec, ...): the far side execs an argv; an argument that is exactly
  `{command}` is spliced in as separate arguments, other placeholders are substituted verbatim.

A template with `srun` in it is a Slurm submission (slurm.py): the job gets a name of ours, and a
cancel or a timeout also cancels the job with `scancel`.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
from pathlib import Path, PurePosixPath
from typing import Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..process import CancelToken, Cancelled, ToolResult, ToolTimeout, run_tool
from . import slurm
from .errors import ProfileTimeoutError, RemoteError, ToolNotFoundError

class PathMapping(BaseModel):
    """A local directory and the same directory as the remote machine sees it (e.g. over NFS, or a copy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    local: str
    remote: str


class RemoteWrapper(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")  # settings: a misspelt key is an error

    # Descriptions double as the settings documentation (kernelscope.profile.remote).
    run: tuple[str, ...] = Field(..., description="Template running an argv remotely; placeholders {command} and {cwd}.")
    fetch: tuple[str, ...] = Field((), description="Template copying the report back, e.g. [\"scp\", \"gpu01:{remote}\", \"{local}\"]; empty: a shared filesystem.")
    remote_shell: bool | None = Field(None, description="Whether a shell parses the command on the far side (quote it); default: true for ssh.")
    paths: tuple[PathMapping, ...] = Field((), description="Local directories and their remote spelling, [{\"local\": ..., \"remote\": ...}].")
    remote_tmp: str = Field("/tmp", description="Where the report is written remotely when no path mapping covers it.")

    @property
    def quotes(self) -> bool:
        if self.remote_shell is not None:
            return self.remote_shell
        return bool(self.run) and Path(self.run[0]).name == "ssh"


class ProfileTarget(BaseModel):
    model_config = ConfigDict(frozen=True)

    command: tuple[str, ...]  # argv of the user's program; a string is split with shlex (POSIX rules)
    cwd: Path | None = None
    env: dict[str, str] = Field(default_factory=dict)  # added to the environment
    timeout_s: float = 600.0
    kernel_regex: str | None = None
    launch_skip: int = 0
    launch_count: int | None = None  # launches profiled in all, over every kernel (ncu -c)
    #: profile the first launch of each kernel (ncu --kernel-id ...:1), when neither launch_skip nor
    #: launch_count is set: `-c 1` alone profiles only the program's first kernel
    first_of_each: bool = False
    remote: RemoteWrapper | None = None
    build: tuple[str, ...] = ()  # optional build argv, run (remotely, if remote) in cwd before profiling

    @field_validator("command", "build", mode="before")
    @classmethod
    def _split(cls, v: object) -> object:
        return tuple(shlex.split(v)) if isinstance(v, str) else v


#: Programs that run a command in a container: the counters' fix is then the container's capability.
_CONTAINER_RUNTIMES = {"docker", "podman", "nerdctl", "kubectl", "oc", "enroot", "apptainer", "singularity",
                       "shifter", "podman-hpc"}


def container_runtime(run: Sequence[str]) -> str | None:
    """The container runtime a run template goes through (`docker exec`, `kubectl exec`, `apptainer exec`,
    srun's pyxis `--container-image=`), or None."""
    for arg in run:
        if Path(arg).name in _CONTAINER_RUNTIMES:
            return Path(arg).name
        if arg.startswith("--container-image"):
            return "srun --container-image (pyxis)"
    return None


def map_path(path: str, mappings: Sequence[PathMapping]) -> str:
    """The remote spelling of a local path: the longest mapped prefix, on path-component boundaries."""
    best: PathMapping | None = None
    for m in mappings:
        root = m.local.rstrip("/")
        if (path == root or path.startswith(root + "/")) and (best is None or len(root) > len(best.local.rstrip("/"))):
            best = m
    if best is None:
        return path
    root = best.local.rstrip("/")
    return best.remote.rstrip("/") + path[len(root):]


def remote_argv(argv: Sequence[str], mappings: Sequence[PathMapping]) -> list[str]:
    """Arguments that are mapped local paths are rewritten; others are left alone."""
    return [map_path(a, mappings) if a.startswith("/") else a for a in argv]


def with_env(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Remote environment through `env K=V ...`: works the same behind ssh, srun or docker exec."""
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv] if env else list(argv)


def fill(template: Sequence[str], values: Mapping[str, str | Sequence[str]], *, quote: bool) -> list[str]:
    """Substitute placeholders into an argument template, in one pass (a value is never re-scanned).

    `values` maps "{name}" to a string or, for `{command}`, to an argv. Quoting rules: see the
    module docstring; an argv embedded in a longer argument always becomes one shell-quoted line,
    since only a shell on the far side can take it apart again.
    """
    pattern = re.compile("|".join(re.escape(k) for k in values))
    out: list[str] = []
    for arg in template:
        whole = values.get(arg)
        if whole is not None and not isinstance(whole, str):
            if quote:
                out.append(shlex.join(whole))
            else:
                out.extend(whole)  # spliced: each element stays one argument, nothing re-parses it
            continue

        def sub(m: re.Match[str]) -> str:
            v = values[m.group(0)]
            if not isinstance(v, str):
                return shlex.join(v)
            return shlex.quote(v) if quote else v

        out.append(pattern.sub(sub, arg))
    return out


def wrap(target: ProfileTarget, argv: Sequence[str], job: slurm.SlurmJob | None = None
         ) -> tuple[list[str], dict[str, str] | None, Path | None]:
    """(argv to run locally, its environment, its local cwd) for running `argv` on the target's machine."""
    if target.remote is None:
        env = {**os.environ, **target.env} if target.env else None
        return list(argv), env, target.cwd
    r = target.remote
    cwd = map_path(str(target.cwd), r.paths) if target.cwd is not None else "."
    command = with_env(remote_argv(argv, r.paths), target.env)
    template = slurm.named(r.run, job) if job is not None else r.run
    return fill(template, {"{command}": command, "{cwd}": cwd}, quote=r.quotes), None, None


def run_on_target(target: ProfileTarget, argv: Sequence[str], *, what: str, timeout: float,
                  cancel: CancelToken | None = None, on_progress: Callable[[str], None] | None = None) -> ToolResult:
    """Run `argv` where the target says (here, ssh, srun), with its errors as MeasurementErrors.

    Through Slurm the job is watched while it runs (progress, a job no node can ever start) and
    cancelled with scancel when the run is cancelled or times out."""
    r = target.remote
    job = slurm.job_for(r.run, secrets.token_hex(6), quote=r.quotes) if r is not None else None
    full, env, cwd = wrap(target, argv, job)
    if job is None:
        return execute(full, env=env, cwd=cwd, timeout=timeout, cancel=cancel, what=what, remote=r)
    if job.batch and job.quote:
        # sbatch --wrap takes the command as one word, which a remote shell in front would split again
        raise RemoteError("sbatch behind ssh is not supported", hint="Use srun behind ssh (\"ssh\", \"login01\", "
                          "\"srun\", ...), or run kernelscope on the login node with sbatch")
    with slurm.Watch(job, on_progress) as watch:
        try:
            result = execute(full, timeout=timeout, cancel=cancel, what=what, remote=r)
        except (Cancelled, ProfileTimeoutError, KeyboardInterrupt):  # Ctrl-C never reaches srun: own session
            slurm.cancel(job)
            if job.batch:
                slurm.take_batch_output(job, target.cwd or Path.cwd())  # no output files left behind
            raise
    if job.batch:  # sbatch --wait printed only "Submitted batch job N": the job's output is in its files
        out, err = slurm.take_batch_output(job, target.cwd or Path.cwd())
        result = ToolResult(result.argv, result.returncode, out, result.stderr + err)
    if watch.refused is not None:
        raise RemoteError(f"{watch.refused}; {what} never started and its job was cancelled",
                          hint="Choose a partition with nodes that are up (`sinfo -p PARTITION`), or ask the "
                               "cluster's admins about the nodes' reasons", output=tail(result))
    if (failure := slurm.slurm_failure(result)) is not None:
        text, missing = failure
        if missing is not None:
            raise ToolNotFoundError(f"Cannot run {what} on the Slurm node: {missing} was not found ({text})",
                                    hint=slurm.NODE_TOOL_HINT,
                                    output=tail(result))
        raise RemoteError(f"Slurm could not run {what}: {text}",
                          hint="Check the partition, account, --gres and time limit with `sinfo` and "
                               "`sacctmgr show assoc user=$USER`", output=tail(result))
    return result


def remote_report_path(local: Path, wrapper: RemoteWrapper, token: str, suffix: str = ".ncu-rep") -> tuple[str, bool]:
    """Where an output file is written on the far side, and whether it must be fetched back.

    A mapped directory (shared filesystem) is written in place; without a fetch template the
    same path is assumed to be shared; otherwise a name of ours in `remote_tmp` (no spaces) is used.
    """
    mapped = map_path(str(local), wrapper.paths)
    if mapped != str(local) or not wrapper.fetch:
        return mapped, False
    return str(PurePosixPath(wrapper.remote_tmp) / f"kernelscope-{token}{suffix}"), True


def fetch_argv(wrapper: RemoteWrapper, remote: str, local: Path) -> list[str]:
    # The copy tool gets both paths as plain arguments: scp/rsync parse `host:path` themselves, and
    # the remote name is ours (no spaces), so no quoting layer is needed.
    return fill(wrapper.fetch, {"{remote}": remote, "{local}": str(local)}, quote=False)


def execute(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float | None,
            cancel: CancelToken | None, what: str, remote: RemoteWrapper | None = None) -> ToolResult:
    """run_tool with the measurement errors: a missing tool, a timeout (process group killed), ssh failure."""
    try:
        result = run_tool(argv, cwd=cwd, env=env, timeout=timeout, cancel=cancel)
    except FileNotFoundError as e:
        raise ToolNotFoundError(f"Cannot run {what}: {argv[0]} was not found") from e
    except ToolTimeout as e:
        raise ProfileTimeoutError(f"{what} did not finish within {e.seconds:g} s; its process group was killed") from e
    if remote is not None and Path(remote.run[0]).name == "ssh" and result.returncode == 255:
        # ssh reserves 255 for its own failures (ssh(1), EXIT STATUS): the remote command never ran or was cut off.
        raise RemoteError(f"ssh failed while running {what} (exit 255): {last_lines(result.stderr, 3)}",
                          output=tail(result))
    return result


def tail(result: ToolResult, limit: int = 4000) -> str:
    return (result.stdout + result.stderr)[-limit:]


def last_lines(text: str, n: int) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " / ".join(lines[-n:]) if lines else "(no output)"
