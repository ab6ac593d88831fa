"""A real single-node Slurm cluster for the tests: Debian's slurm-wlm (`slurmctld` + `slurmd`),
started from a generated slurm.conf in a temporary directory and stopped afterwards.

No munge: `AuthType=auth/none` and `CredType=cred/none` exist in Slurm 22.05 (Debian 12's
slurm-wlm ships auth_none.so and cred_none.so), and every daemon listens on loopback only.
No cgroups: `ProctrackType=proctrack/linuxproc`, `TaskPlugin=task/none`. `ReturnToService=1`: a node an
admin set down stays down until resumed (with 2 it came back at slurmd's next registration). The node is this host
(`hostname -s`) with this host's CPU count. The daemons run as the user running the tests
(`SlurmUser`/`SlurmdUser`): root in CI, or an ordinary user (tried: jobs then run as that user). Clients find the cluster through `SLURM_CONF`,
which the tests pass as `env SLURM_CONF=... srun ...`: the same prefix then runs scancel,
squeue and sinfo, as `ssh login01` would on a real cluster.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

DAEMONS = ("slurmctld", "slurmd", "srun", "sbatch", "scancel", "squeue", "sinfo", "scontrol")


def missing() -> str | None:
    """Why the cluster cannot start here, or None."""
    absent = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if absent:
        return f"slurm-wlm is not installed ({', '.join(absent)} not found; .ci/run installs it)"
    return None


def _exe(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Cluster:
    conf: Path
    node: str
    partition: str
    cpus: int
    log_dir: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    @property
    def prefix(self) -> tuple[str, ...]:
        """What precedes srun in a wrapper template so that srun and kernelscope's scancel/squeue find this cluster."""
        return ("env", f"SLURM_CONF={self.conf}")

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([_exe(argv[0]), *argv[1:]], env=self.env, capture_output=True, text=True, timeout=60,
                              check=check)

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-o", "%T", check=False).stdout.strip()

    def wait_idle(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while self.node_state() != "idle":
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {self.node} is {self.node_state()!r}, not idle; logs in {self.log_dir}")
            time.sleep(0.5)

    def jobs(self) -> str:
        return self.run("squeue", "-h", "-o", "%i %j %T", check=False).stdout.strip()

    def left(self, timeout: float = 30) -> str:
        """The jobs still there once those that finished have left the queue: a job that ended stays
        COMPLETING for a moment after srun returns (slurmd reports its end to slurmctld)."""
        deadline = time.monotonic() + timeout
        while "COMPLETING" in (jobs := self.jobs()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return jobs

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.log_dir.glob("*.log")))


def _conf(d: Path, node: str, cpus: int, user: str) -> str:
    return f"""\
ClusterName=kernelscope
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/none
CredType=cred/none
SlurmUser={user}
SlurmdUser={user}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=1
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """Start slurmctld and slurmd in the foreground (children of this process), wait for the node to be
    idle, and at the end cancel every job, wait for them to go, and stop both daemons."""
    node = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="kernelscope-slurm-") as tmp:
        d = Path(tmp)
        (d / "state").mkdir()
        (d / "spool").mkdir()
        conf = d / "slurm.conf"
        conf.write_text(_conf(d, node, cpus, getpass.getuser()), encoding="utf-8")
        c = Cluster(conf=conf, node=node, partition="debug", cpus=cpus, log_dir=d)
        # -D: stay in the foreground, so the daemons are our children and nothing outlives the fixture
        ctld = subprocess.Popen([_exe("slurmctld"), "-D", "-i", "-f", str(conf)], env=c.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        slurmd = None
        try:
            deadline = time.monotonic() + 30
            while c.run("scontrol", "ping", check=False).returncode != 0 or "UP" not in c.run(
                    "scontrol", "ping", check=False).stdout:
                if ctld.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"slurmctld did not start:\n{c.logs()}")
                time.sleep(0.2)
            slurmd = subprocess.Popen([_exe("slurmd"), "-D", "-f", str(conf)], env=c.env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            c.wait_idle()
            yield c
        finally:
            c.run("scancel", f"--partition={c.partition}", check=False)
            deadline = time.monotonic() + 30
            while c.jobs() and time.monotonic() < deadline:
                time.sleep(0.5)
            if slurmd is not None:
                _stop(slurmd)
            _stop(ctld)
