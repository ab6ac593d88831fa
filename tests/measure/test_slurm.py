"""Profiling through Slurm, against a real single-node Slurm (tests/_slurm.py starts slurmctld and slurmd).

What runs in the jobs is a real CPU program submitted through the exact path a profile takes
(`run_on_target`, which run_ncu and run_cupti call), and run_ncu itself where the job's failure
is the point (no ncu on the node). Covered: submit and get the output and a file back, several
ranks, cancel, timeout, a failing program, a failing srun, and a node that is down. Skipped only
where slurm-wlm is not installed; .ci/run installs it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

import _slurm
from kernelscope.analysis.measure.errors import ProfileTimeoutError, RemoteError, ToolNotFoundError
from kernelscope.analysis.measure.ncu import gather_ranks, rank_report, run_ncu
from kernelscope.analysis.measure.slurm import (JobState, NodeState, parse_nodes, parse_queue, slurm_failure,
                                                unschedulable)
from kernelscope.analysis.measure.target import ProfileTarget, RemoteWrapper, run_on_target
from kernelscope.analysis.process import CancelToken, Cancelled, ToolResult

pytestmark = pytest.mark.skipif(_slurm.missing() is not None, reason=str(_slurm.missing()))


@pytest.fixture(scope="module")
def cluster():
    with _slurm.cluster() as c:
        yield c


def srun(cluster, *options: str) -> RemoteWrapper:
    """The wrapper `kernelscope profile --remote srun:OPTIONS` builds, behind the prefix that names this cluster."""
    return RemoteWrapper(run=(*cluster.prefix, "srun", f"--partition={cluster.partition}", *options,
                              "--chdir={cwd}", "{command}"))


def running(marker: str) -> list[str]:
    """Command lines of live processes (anyone's: srun here, the task under slurmstepd) that carry `marker`."""
    out = []
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmd and state != "Z":
            out.append(cmd)
    return out


def waits_for(flag: Path, marker: str) -> list[str]:
    """A program that runs until `flag` exists (at most 120 s): the test decides when it ends, not a clock."""
    return [sys.executable, "-c", "import os, sys, time\n"
            f"for _ in range(1200):\n    if os.path.exists({str(flag)!r}): break\n    time.sleep(0.1)\n"
            "os.write(1, f\"rank {os.environ.get('SLURM_PROCID')} job {os.environ.get('SLURM_JOB_ID')} in {os.getcwd()}\\n\".encode())\n"
            f"open('out.rank' + os.environ['SLURM_PROCID'], 'w').write('done')  # {marker}"]


def test_slurm_submit_streams_progress_and_brings_the_output_back(cluster, tmp_path):
    marker = f"ks-{uuid.uuid4().hex}"
    flag = tmp_path / "go"
    progress: list[str] = []

    def on_progress(text: str) -> None:
        progress.append(text)
        if " running on " in text:
            flag.touch()  # the job was seen running: let it finish

    target = ProfileTarget(command=waits_for(flag, marker), cwd=tmp_path, remote=srun(cluster))
    result = run_on_target(target, list(target.command), what="the program", timeout=120, on_progress=on_progress)
    assert result.returncode == 0, result.stderr
    assert f"rank 0 job " in result.stdout and f"in {tmp_path}" in result.stdout  # --chdir={cwd} reached the job
    assert (tmp_path / "out.rank0").read_text() == "done"  # written on the node, read here (shared filesystem)
    assert any(p.startswith("Slurm job ") and p.endswith(f"running on {cluster.node}") for p in progress), progress
    assert running(marker) == [] and cluster.left() == ""


def test_slurm_several_ranks_each_write_their_own_file(cluster, tmp_path):
    if cluster.cpus < 2:
        pytest.skip("one CPU: the node cannot run two tasks at once")
    flag = tmp_path / "go"
    flag.touch()
    target = ProfileTarget(command=waits_for(flag, "ranks"), cwd=tmp_path, remote=srun(cluster, "--ntasks=2"))
    result = run_on_target(target, list(target.command), what="the program", timeout=120)
    assert result.returncode == 0, result.stderr
    # --unbuffered passes each rank's bytes on as they come, so the two lines may interleave
    assert sorted(re.findall(r"rank (\d) job", result.stdout)) == ["0", "1"], result.stdout
    assert sorted(p.name for p in tmp_path.glob("out.rank*")) == ["out.rank0", "out.rank1"]


def test_slurm_ranks_reports_are_gathered(cluster, tmp_path):
    """Each task writes the file ncu's `-o NAME.rank%q{SLURM_PROCID}` names; rank 0's becomes the report."""
    if cluster.cpus < 2:
        pytest.skip("one CPU: the node cannot run two tasks at once")
    report = tmp_path / "gemm.ncu-rep"
    name = rank_report(report, "{}")
    program = [sys.executable, "-c", f"import os; open({name!r}.format(os.environ['SLURM_PROCID']), 'w')"
                                     ".write('rank ' + os.environ['SLURM_PROCID'])"]
    target = ProfileTarget(command=program, cwd=tmp_path, remote=srun(cluster, "--ntasks=2"))
    assert run_on_target(target, program, what="the program", timeout=120).returncode == 0
    assert gather_ranks(report) == [tmp_path / "gemm.rank1.ncu-rep"]
    assert report.read_text() == "rank 0" and not (tmp_path / "gemm.rank0.ncu-rep").exists()


def test_slurm_cancel_reaches_the_job_and_leaves_no_process(cluster, tmp_path):
    marker = f"ks-{uuid.uuid4().hex}"
    token = CancelToken()
    seen_running = threading.Event()
    outcome: list[BaseException] = []

    def on_progress(text: str) -> None:
        if " running on " in text:
            seen_running.set()

    target = ProfileTarget(command=waits_for(tmp_path / "never", marker), cwd=tmp_path, remote=srun(cluster))

    def submit() -> None:
        try:
            run_on_target(target, list(target.command), what="the program", timeout=120, cancel=token,
                          on_progress=on_progress)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            outcome.append(e)

    worker = threading.Thread(target=submit)
    worker.start()
    assert seen_running.wait(60), cluster.logs()
    assert running(marker)  # srun here and the task under slurmstepd
    token.cancel()  # what the editor's cancel button does
    worker.join(90)
    assert not worker.is_alive() and outcome and isinstance(outcome[0], Cancelled), outcome
    assert cluster.left() == ""  # scancel reached the job
    assert running(marker) == []
    assert not (tmp_path / "out.rank0").exists()


def _as_a_terminals_foreground_process() -> None:
    """SIGINT at its default, as in a shell's foreground job. A test run started in the background
    (`pytest ... &` in a script: bash then ignores SIGINT in it) passes SIG_IGN on to its children, and
    Python keeps an ignored SIGINT ignored: the CLI would not see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_slurm_ctrl_c_on_the_command_line_cancels_the_queued_job(cluster, tmp_path):
    """`kernelscope profile --remote srun:...` interrupted while its job waits behind another one."""
    blocker = cluster.run("sbatch", "--parsable", f"--ntasks={cluster.cpus}", "--output=/dev/null",
                          "--job-name=blocker", "--wrap=sleep 300").stdout.strip()
    try:
        (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
        cli = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "profile", "k.cu", "--remote",
                                f"srun:-p {cluster.partition}", "--", "./app"], cwd=tmp_path, env=cluster.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_as_a_terminals_foreground_process)
        try:
            for _ in range(600):
                if any(ln.startswith("kernelscope-") and ln.endswith("PENDING")
                       for ln in cluster.run("squeue", "-h", "-o", "%j %T", check=False).stdout.splitlines()):
                    break
                assert cli.poll() is None, cli.communicate()
                threading.Event().wait(0.2)
            cli.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal sends to the foreground process
            cli.communicate(timeout=90)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
        assert [ln for ln in cluster.left().splitlines() if "kernelscope-" in ln] == []
        assert blocker in cluster.jobs()
    finally:
        cluster.run("scancel", blocker, check=False)


def test_slurm_timeout_cancels_the_job(cluster, tmp_path):
    marker = f"ks-{uuid.uuid4().hex}"
    target = ProfileTarget(command=waits_for(tmp_path / "never", marker), cwd=tmp_path, remote=srun(cluster))
    with pytest.raises(ProfileTimeoutError, match="did not finish within 4 s"):
        run_on_target(target, list(target.command), what="the program", timeout=4)
    assert cluster.left() == "" and running(marker) == []


def test_slurm_failing_program_reaches_the_user(cluster, tmp_path):
    program = [sys.executable, "-c", "import sys; sys.exit('input.dat: no such file')"]
    target = ProfileTarget(command=program, cwd=tmp_path, remote=srun(cluster))
    result = run_on_target(target, program, what="the program", timeout=120)
    # the program's own failure is the profiler's to classify (classify_ncu_output), not Slurm's
    assert result.returncode == 1 and "input.dat: no such file" in result.stderr
    crash = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    result = run_on_target(target, crash, what="the program", timeout=120)  # srun: "task 0: Segmentation fault"
    assert result.returncode != 0 and "task 0: Segmentation fault" in result.stderr, result.stderr


def test_slurm_refusing_the_job_is_a_remote_error_with_slurms_words(cluster, tmp_path):
    wrapper = RemoteWrapper(run=(*cluster.prefix, "srun", "--partition=nosuchpartition", "--chdir={cwd}", "{command}"))
    target = ProfileTarget(command=["true"], cwd=tmp_path, remote=wrapper)
    with pytest.raises(RemoteError, match="Slurm could not run the program: .*Invalid partition name specified"):
        run_on_target(target, ["true"], what="the program", timeout=120)


def test_slurm_run_ncu_without_ncu_on_the_node_says_so(cluster, tmp_path):
    """The real run_ncu through the real srun: the node has no ncu, and the user reads the node's own words."""
    target = ProfileTarget(command=["./app"], cwd=tmp_path, remote=srun(cluster))
    with pytest.raises(ToolNotFoundError, match=r"Cannot run ncu on the Slurm node: ncu-not-installed was not found"
                                                r" \(.*ncu-not-installed: not found\)"):
        run_ncu(target, ncu_path="ncu-not-installed", report_path=tmp_path / "r.ncu-rep")
    assert cluster.left() == ""


def test_slurm_refused_counters_fall_back_through_the_same_srun(cluster, tmp_path, toolchain):
    """The fallback chain through the real srun: ncu's refusal on the node (a stand-in `ncu` prints one a
    user captured, tests/measure/fixtures/ncu-output), then CUPTI PC sampling as a second job, with the shim
    injected into the program; this node has no GPU, so nothing is sampled and the model is shown, labelled."""
    from kernelscope.analysis.measure.fallback import CUPTI, measure_with_fallback

    refusal = Path(__file__).parent / "fixtures" / "ncu-output" / "errnvgpuctrperm-hf-jobs-container.txt"
    ncu = tmp_path / "ncu"
    ncu.write_text(f'#!/bin/sh\ncase "$1" in --help|--version) exit 0;; esac\ncat "{refusal}"\nexit 1\n')
    ncu.chmod(0o755)
    # the program says which injection library it was started with; the stand-in ncu never starts it
    program = [sys.executable, "-c", "import os\n"
               "open('ran.' + os.environ['SLURM_JOB_ID'], 'w').write(os.environ.get('CUDA_INJECTION64_PATH', ''))"]
    target = ProfileTarget(command=program, cwd=tmp_path, remote=srun(cluster), timeout_s=120)
    m = measure_with_fallback(target, ncu_path=str(ncu), report_path=tmp_path / "r.ncu-rep",
                              nvcc_path=str(toolchain.nvcc), shim_dir=tmp_path / "shim")
    assert m.ran == "modeled", m.label
    assert "(ncu: The profiler may not read the GPU's performance counters of device 0 (ERR_NVGPUCTRPERM)" in m.label
    assert m.label.endswith(f"; {CUPTI}: The CUPTI shim wrote no output)")
    (ran,) = tmp_path.glob("ran.*")  # one job ran the program: CUPTI's, with the shim built here
    assert Path(ran.read_text()).parent == tmp_path / "shim" and Path(ran.read_text()).is_file()
    assert m.message is not None and m.message.count("NVreg_RestrictProfilingToAdminUsers=0") == 1
    assert cluster.left() == ""


def test_slurm_missing_program_on_the_node_is_named(cluster, tmp_path):
    """srun's own execve failure (slurmstepd's words), e.g. the build step's tool missing on the node."""
    target = ProfileTarget(command=["./app"], cwd=tmp_path, remote=srun(cluster))
    with pytest.raises(ToolNotFoundError, match=r"Cannot run the build step on the Slurm node: make-not-installed "
                                                r"was not found \(execve\(\): make-not-installed: No such file"):
        run_on_target(target, ["make-not-installed"], what="the build step", timeout=120)


def test_slurm_node_down_is_a_clear_message_not_a_hang(cluster, tmp_path):
    marker = f"ks-{uuid.uuid4().hex}"
    cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=down", "reason=kernelscope-test")
    try:
        program = [sys.executable, "-c", f"print('{marker}')"]  # were the node used after all, it ends at once
        target = ProfileTarget(command=program, cwd=tmp_path, remote=srun(cluster))
        with pytest.raises(RemoteError) as e:
            run_on_target(target, program, what="ncu", timeout=120)
        text = str(e.value)
        assert (f"No node of partition {cluster.partition} can run the job: {cluster.node} is down (kernelscope-test)"
                in text), text
        assert "ncu never started and its job was cancelled" in text and "sinfo -p" in text
        assert cluster.left() == "" and running(marker) == []
    finally:
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume")
        cluster.wait_idle()


# --- sbatch --wait: the same path, the output through files ------------------------------------------

def sbatch(cluster, *options: str) -> RemoteWrapper:
    return RemoteWrapper(run=(*cluster.prefix, "sbatch", f"--partition={cluster.partition}", *options,
                              "--chdir={cwd}", "{command}"))


def test_slurm_sbatch_wait_brings_the_output_back(cluster, tmp_path):
    program = [sys.executable, "-c", "import os, sys; print('out of', os.environ['SLURM_JOB_ID'], os.getcwd()); "
                                     "print('said on stderr', file=sys.stderr); open('written', 'w').write('yes')"]
    target = ProfileTarget(command=program, cwd=tmp_path, remote=sbatch(cluster))
    progress: list[str] = []
    result = run_on_target(target, program, what="the program", timeout=120, on_progress=progress.append)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("out of ") and result.stdout.rstrip().endswith(str(tmp_path))
    assert "said on stderr" in result.stderr and (tmp_path / "written").read_text() == "yes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["written"]  # the job's output files are gone
    assert cluster.left() == ""


def test_slurm_sbatch_failing_program_and_refused_partition(cluster, tmp_path):
    program = [sys.executable, "-c", "import sys; sys.exit('input.dat: no such file')"]
    target = ProfileTarget(command=program, cwd=tmp_path, remote=sbatch(cluster))
    result = run_on_target(target, program, what="the program", timeout=120)
    assert result.returncode == 1 and "input.dat: no such file" in result.stderr  # sbatch --wait: the job's status
    wrapper = RemoteWrapper(run=(*cluster.prefix, "sbatch", "--partition=nosuchpartition", "--chdir={cwd}", "{command}"))
    with pytest.raises(RemoteError, match="Slurm could not run the program: .*Invalid partition name specified"):
        run_on_target(target.model_copy(update={"remote": wrapper}), ["true"], what="the program", timeout=120)
    with pytest.raises(ToolNotFoundError, match=r"Cannot run ncu on the Slurm node: ncu-not-installed was not found"):
        run_ncu(target, ncu_path="ncu-not-installed", report_path=tmp_path / "r.ncu-rep")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_slurm_sbatch_timeout_cancels_the_job_and_its_files(cluster, tmp_path):
    marker = f"ks-{uuid.uuid4().hex}"
    target = ProfileTarget(command=waits_for(tmp_path / "never", marker), cwd=tmp_path, remote=sbatch(cluster))
    with pytest.raises(ProfileTimeoutError):
        run_on_target(target, list(target.command), what="the program", timeout=4)
    assert cluster.left() == "" and running(marker) == []
    assert list(tmp_path.iterdir()) == []


def test_slurm_sbatch_behind_ssh_is_refused_not_misquoted(tmp_path):
    wrapper = RemoteWrapper(run=("ssh", "login01", "sbatch", "-p", "gpu", "--chdir={cwd}", "{command}"))
    with pytest.raises(RemoteError, match="sbatch behind ssh is not supported"):
        run_on_target(ProfileTarget(command=["./app"], cwd=tmp_path, remote=wrapper), ["./app"], what="ncu", timeout=5)


@pytest.mark.parametrize("kind", ["srun", "sbatch"])
def test_slurm_command_line_profile_says_what_the_node_lacks(cluster, tmp_path, kind):
    """`kernelscope profile --remote srun:ARGS|sbatch:ARGS`, end to end: the job runs, the node has no ncu."""
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "profile", "k.cu", "--remote",
                           f"{kind}:-p {cluster.partition} -t 5", "--ncu", "ncu-not-installed", "--", "./app"],
                          cwd=tmp_path, env=cluster.env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "Cannot run ncu on the Slurm node: ncu-not-installed was not found" in proc.stderr
    assert cluster.left() == "" and sorted(p.name for p in tmp_path.iterdir()) == ["k.cu"]


# --- reading Slurm's answers, on the texts the cluster above printed ---------------------------------

def test_slurm_queue_and_node_lines_parse():
    job = parse_queue("17|PENDING|debug|Nodes required for job are DOWN, DRAINED or reserved for jobs in higher "
                      "priority partitions|\n")
    assert job == JobState("17", "PENDING", "debug", job.reason, "") and job.reason.startswith("Nodes required")
    assert parse_nodes("vm|down|test\nvm2|idle*|none\n") == (NodeState("vm", "down", "test"),
                                                              NodeState("vm2", "idle*", "none"))
    assert unschedulable(job, parse_nodes("vm|drained|disk\nvm2|down*|dead\n")) is not None
    assert unschedulable(job, parse_nodes("vm|down|x\nvm2|allocated|none\n")) is None  # busy is not never
    assert unschedulable(JobState("1", "PENDING", "gpu", "PartitionDown", ""), ()) is not None
    assert unschedulable(JobState("1", "RUNNING", "gpu", "None", "vm"), parse_nodes("vm|down|x\n")) is None


def test_slurm_task_exit_lines_are_the_programs_failure_not_slurms():
    task = ToolResult(("srun",), 1, "", "srun: error: vm: task 0: Exited with exit code 1\n")
    assert slurm_failure(task) is None
    own = ToolResult(("srun",), 1, "", "srun: error: invalid partition specified: nope\n"
                                      "srun: error: Unable to allocate resources: Invalid partition name specified\n")
    assert slurm_failure(own) == ("invalid partition specified: nope / Unable to allocate resources: Invalid "
                                  "partition name specified", None)


def test_slurm_cancelling_the_job_is_slurms_word_not_the_programs():
    # as slurmstepd prints them in public job logs: a time limit, and preemption followed by srun's own lines
    limit = ToolResult(("srun",), 1, "", "slurmstepd: error: *** JOB 42196 ON clr0710 CANCELLED AT 2022-04-14T16:17:16"
                                         " DUE TO TIME LIMIT ***\n")
    assert slurm_failure(limit) == ("*** JOB 42196 ON clr0710 CANCELLED AT 2022-04-14T16:17:16 DUE TO TIME LIMIT ***",
                                    None)
    preempted = ToolResult(("srun",), 1, "", "srun: Force Terminated job 557341\nslurmstepd: error: *** STEP 557341.0 "
                                             "ON c4-n12 CANCELLED AT 2025-03-11T13:26:25 DUE TO PREEMPTION ***\n"
                                             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")
    text, missing = slurm_failure(preempted)
    assert text.endswith("DUE TO PREEMPTION ***") and missing is None

