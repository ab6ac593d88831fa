"""The ncu runner without a GPU: the argv it builds, how it reads ncu's messages, the remote
templating (run for real through `sh -c`, the same parser a remote ssh shell is), and the
process handling (hang, crash, flood) through the real `run_tool`. No fake ncu anywhere.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from kernelscope.analysis.measure.errors import (CounterPermissionError, KernelNotFoundError, MeasurementError,
                                                 NoGpuError, ProfileTimeoutError, ProgramCrashError, RemoteError,
                                                 ToolNotFoundError)
from kernelscope.analysis.measure.ncu import (SECTIONS, build_ncu_command, classify_ncu_output, ncu_version,
                                              report_stem, sampling_interval_option, signal_name)
from kernelscope.analysis.measure.target import (PathMapping, ProfileTarget, RemoteWrapper, execute, fetch_argv, fill,
                                                 map_path, remote_report_path, wrap)

PY = sys.executable

# --- the command line --------------------------------------------------------------------------------

# Lines of `ncu --help`: current ncu (2023+) names the option --warp-sampling-interval
# ("--warp-sampling-interval arg (=auto) ... [0..31] ... 2^(5+value) cycles"); older ones --sampling-interval.
HELP_NEW = """  --import-source arg (=no)
  --clock-control arg (=base)
  --target-processes arg (=all)
  --warp-sampling-interval arg (=auto)  Set the sampling period in the range of [0..31]."""
HELP_OLD = """  --clock-control arg (=base)
  --sampling-interval arg (=auto)       Set the sampling period in the range of [0..31]."""


def test_command_has_sections_source_and_filters():
    t = ProfileTarget(command="./app --n 1024", kernel_regex="gemm.*", launch_skip=2, launch_count=1)
    argv = build_ncu_command(t, "/opt/ncu/ncu", Path("/tmp/r x/out.ncu-rep"), HELP_NEW)
    assert argv[0] == "/opt/ncu/ncu"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--section"] == list(SECTIONS)
    joined = " ".join(argv)
    for piece in ("--import-source yes", "--clock-control none", "--warp-sampling-interval auto",
                  "-k regex:gemm.*", "-s 2", "-c 1", "--target-processes all"):
        assert piece in joined
    i = argv.index("-o")
    assert argv[i + 1] == "/tmp/r x/out"  # one argument, spaces and all; ncu adds .ncu-rep itself
    assert argv[-3:] == ["./app", "--n", "1024"]


def test_first_launch_of_each_kernel_by_kernel_id():
    """`-c 1` counts launches over all kernels (a program's first kernel alone was profiled); the
    invocation number of --kernel-id counts per kernel, as ncu 2025.3.1 did on an H100."""
    first = build_ncu_command(ProfileTarget(command=["./a"], first_of_each=True), "ncu", "r", HELP_NEW)
    assert first[first.index("--kernel-id") + 1] == "::regex:.:1" and "-c" not in first and "-k" not in first
    named = build_ncu_command(ProfileTarget(command=["./a"], kernel_regex="gemm", first_of_each=True), "ncu", "r", HELP_NEW)
    assert named[named.index("--kernel-id") + 1] == "::regex:gemm:1" and named[-1] == "./a"
    counted = build_ncu_command(ProfileTarget(command=["./a"], launch_count=3, first_of_each=True), "ncu", "r", HELP_NEW)
    assert "--kernel-id" not in counted and "-c" in counted  # an explicit count is a count over all kernels


def test_sampling_option_follows_the_help_text():
    assert sampling_interval_option(HELP_NEW) == "--warp-sampling-interval"
    assert sampling_interval_option(HELP_OLD) == "--sampling-interval"
    assert sampling_interval_option("  --section arg") is None
    old = build_ncu_command(ProfileTarget(command=["./a"]), "ncu", "r", HELP_OLD)
    assert "--sampling-interval" in old and "--warp-sampling-interval" not in old
    assert "--import-source" not in old  # an old ncu without it would refuse the whole command


def test_no_filters_when_none_are_asked():
    argv = build_ncu_command(ProfileTarget(command=["./a"]), "ncu", "r.ncu-rep", HELP_NEW)
    assert "-k" not in argv and "-c" not in argv and "-s" not in argv
    assert report_stem("r.ncu-rep") == "r" and report_stem("r") == "r"


def test_command_string_is_split_like_a_posix_shell():
    t = ProfileTarget(command="./app 'two words' --x=\"q\"")
    assert t.command == ("./app", "two words", "--x=q")


# --- reading ncu's messages ----------------------------------------------------------------------------

# Each text below is quoted from real ncu output in a public issue; the source is next to it.
PERM = ("==PROF== Connected to process 9012 (/usr/local/bin/my-benchmark)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
        "on the target device 0. For instructions on enabling permissions and to get more information see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM\n==PROF== Disconnected from process 9012\n")  # huggingface/hub-docs#2714
NO_DRIVER = ("==ERROR== Nsight Compute failed to connect to the CUDA driver (stub libcuda.so[.1] on path?).\n"
             "==ERROR== The application returned an error code (1).\n==WARNING== No kernels were profiled.\n"
             "==WARNING== Profiling kernels launched by child processes requires the --target-processes all option.\n")
# ^ a public agent transcript profiling `swe2d_flux_kernel` (find_string hit, 2025)
NO_DEVICE = ("CUDA error: no CUDA-capable device is detected\n"  # cudaErrorNoDevice text (microsoft/nni#2916)
             "==ERROR== The application returned an error code (1).\n==WARNING== No kernels were profiled.\n")
NO_MATCH = ("==PROF== Connected to process 10096 (/home/ygkim/anaconda3/bin/python3.8)\n"
            "==PROF== Disconnected from process 10096\n==WARNING== No kernels were profiled.\n")  # NVIDIA/PyProf#142 (tail)
APP_FAIL = ("==ERROR== Failed to profile \"volta_h884gemm_128x256_ldg8_nn\" in process 24701\n"
            "==PROF== Trying to shutdown target application\n"
            "==ERROR== The application returned an error code (15).\n"
            "==ERROR== An error occurred while trying to profile.\n")  # a DeepBench gemm profiling log (find_string hit)
UNKNOWN = ("==PROF== Connected to process 9137 (/home/mason/miniconda3/envs/torch/bin/python3.11)\n"
           "==ERROR== Unknown Error on device 0.\n==PROF== Disconnected from process 9137\n")  # SzymonOzog/FastSoftmax#1
LIBRARY = ("==ERROR== An error was reported by the counter measurement library:\n"
           "==ERROR== Failed to initialize the profiler: LibraryNotLoaded. Check that a compatible driver library is loaded.\n"
           "==ERROR== The application returned an error code (9).\n")  # a WSL2 note (find_string hit)


@pytest.mark.parametrize("rc, out, cls", [
    (1, PERM, CounterPermissionError), (1, NO_DRIVER, NoGpuError), (1, NO_DEVICE, NoGpuError),
    (0, NO_MATCH, KernelNotFoundError), (1, APP_FAIL, MeasurementError), (1, LIBRARY, NoGpuError),
    (1, "==ERROR== The application returned an error code (3).\n", ProgramCrashError),
])
def test_realistic_ncu_failures(rc, out, cls):
    err = classify_ncu_output(rc, out, kernel_regex="gemm")
    assert type(err) is cls
    assert err.hint and "Traceback" not in str(err)


def test_permission_message_explains_the_fix():
    text = str(classify_ncu_output(1, PERM))
    assert "NVreg_RestrictProfilingToAdminUsers=0" in text and "https://developer.nvidia.com/ERR_NVGPUCTRPERM" in text


def test_failed_to_profile_is_ncus_failure_not_the_programs():
    text = str(classify_ncu_output(1, APP_FAIL))
    assert 'failed to profile "volta_h884gemm_128x256_ldg8_nn"' in text and "--replay-mode application" in text


def test_unknown_error_is_reported_with_ncus_words():
    err = classify_ncu_output(1, UNKNOWN)
    assert type(err) is MeasurementError and "Unknown Error on device 0" in str(err)


def test_kernel_not_found_names_the_regex():
    assert "regex:gemm" in str(classify_ncu_output(0, NO_MATCH, kernel_regex="gemm"))


def test_clean_run_is_not_an_error():
    ok = "==PROF== Connected to process 1\n==PROF== Profiling \"k\" - 0: 0%....50%....100% - 9 passes\n==PROF== Report: r.ncu-rep\n"
    assert classify_ncu_output(0, ok) is None


def test_signal_names():
    assert signal_name(-11) == "SIGSEGV" and signal_name(139) == "SIGSEGV" and signal_name(1) is None
    assert signal_name(0) is None


def test_version_text():
    out = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\nVersion 2025.3.0.0 (build 36273991) (public-release)\n"
    assert ncu_version(out) == "2025.3.0.0"


# --- remote templating --------------------------------------------------------------------------------

NASTY = "dir with 'quotes' and \"double\" $HOME `x` ; rm -rf"


def test_ssh_template_quotes_for_the_remote_shell():
    t = ProfileTarget(command=[f"/data/{NASTY}/app", "--arg", "a b"], cwd=Path(f"/data/{NASTY}"),
                      remote=RemoteWrapper(run=("ssh", "gpu01", "cd {cwd} && {command}")))
    argv, env, cwd = wrap(t, list(t.command))
    assert argv[:2] == ["ssh", "gpu01"] and len(argv) == 3 and env is None and cwd is None
    assert shlex.split(argv[2]) == ["cd", f"/data/{NASTY}", "&&", f"/data/{NASTY}/app", "--arg", "a b"]


def test_whole_argument_command_is_spliced_without_a_shell():
    t = ProfileTarget(command=["./app", "a b", "$X"], cwd=Path("/w"),
                      remote=RemoteWrapper(run=("srun", "-p", "gpu", "--chdir={cwd}", "{command}")))
    argv, _, _ = wrap(t, list(t.command))
    assert argv == ["srun", "-p", "gpu", "--chdir=/w", "./app", "a b", "$X"]


def test_env_and_path_mapping_reach_the_remote_command():
    wrapper = RemoteWrapper(run=("srun", "{command}"), paths=(PathMapping(local="/home/me/proj", remote="/scratch/me/proj"),))
    t = ProfileTarget(command=["/home/me/proj/build/app", "/home/me/projX", "rel"], cwd=Path("/home/me/proj"),
                      env={"CUDA_VISIBLE_DEVICES": "1"}, remote=wrapper)
    argv, _, _ = wrap(t, list(t.command))
    assert argv == ["srun", "env", "CUDA_VISIBLE_DEVICES=1", "/scratch/me/proj/build/app", "/home/me/projX", "rel"]
    assert map_path("/home/me/proj", wrapper.paths) == "/scratch/me/proj"


def test_fill_substitutes_in_one_pass():
    # a value containing another placeholder's text must not be substituted again
    assert fill(["x {cwd} {remote}"], {"{cwd}": "{remote}", "{remote}": "R"}, quote=False) == ["x {remote} R"]


def test_report_location_on_the_remote_side():
    shared = RemoteWrapper(run=("ssh", "h", "{command}"), fetch=("scp", "h:{remote}", "{local}"),
                           paths=(PathMapping(local="/home/me", remote="/nfs/me"),))
    assert remote_report_path(Path("/home/me/r.ncu-rep"), shared, "t") == ("/nfs/me/r.ncu-rep", False)
    assert remote_report_path(Path("/tmp/my dir/r.ncu-rep"), shared, "abc") == ("/tmp/kernelscope-abc.ncu-rep", True)
    assert fetch_argv(shared, "/tmp/kernelscope-abc.ncu-rep", Path("/tmp/my dir/r.ncu-rep")) == [
        "scp", "h:/tmp/kernelscope-abc.ncu-rep", "/tmp/my dir/r.ncu-rep"]


def test_remote_shell_round_trip_through_a_real_shell(tmp_path):
    """`sh -c` parses the command line exactly as the remote login shell behind ssh would."""
    work = tmp_path / NASTY
    work.mkdir()
    printer = "import os, sys, json; print(json.dumps([os.getcwd(), sys.argv[1:], os.environ.get('KS_X')]))"
    t = ProfileTarget(command=[PY, "-c", printer, "a b", "'q'", '"d"', "$HOME", "*"], cwd=work, env={"KS_X": "v w"},
                      remote=RemoteWrapper(run=("sh", "-c", "cd {cwd} && {command}"), remote_shell=True))
    argv, env, cwd = wrap(t, list(t.command))
    result = execute(argv, env=env, cwd=cwd, timeout=30, cancel=None, what="the wrapped command", remote=t.remote)
    import json

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [str(work), ["a b", "'q'", '"d"', "$HOME", "*"], "v w"]


def test_fetch_with_a_real_copy_command(tmp_path):
    src = tmp_path / "remote side" / "kernelscope-1.ncu-rep"
    src.parent.mkdir()
    src.write_bytes(b"NVR\x00data")
    dst = tmp_path / "local 'dir'" / "r.ncu-rep"
    dst.parent.mkdir()
    wrapper = RemoteWrapper(run=("sh", "-c", "{command}"), fetch=("cp", "{remote}", "{local}"))
    result = execute(fetch_argv(wrapper, str(src), dst), timeout=30, cancel=None, what="copy")
    assert result.returncode == 0 and dst.read_bytes() == b"NVR\x00data"


def test_ssh_exit_255_is_a_remote_error():
    # ssh(1): "exits with the exit status of the remote command or with 255 if an error occurred";
    # `ssh` to an unresolvable host fails locally, before any network traffic.
    wrapper = RemoteWrapper(run=("ssh", "-o", "BatchMode=yes", "kernelscope-no-such-host.invalid", "{command}"))
    t = ProfileTarget(command=["true"], remote=wrapper)
    argv, env, cwd = wrap(t, ["true"])
    try:
        with pytest.raises(RemoteError, match="exit 255"):
            execute(argv, env=env, cwd=cwd, timeout=30, cancel=None, what="true", remote=wrapper)
    except ToolNotFoundError:
        pytest.skip("no ssh client on this machine")


# --- process handling through the real run_tool -----------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "zombie" not in f.read()
    except FileNotFoundError:
        return False


def test_hanging_program_is_stopped_with_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = (f"import subprocess, time; p = subprocess.Popen(['sleep', '300']); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(300)")
    # a program left to run would sleep 300 s and return normally, without ProfileTimeoutError
    with pytest.raises(ProfileTimeoutError, match="process group was killed"):
        execute([PY, "-c", script], timeout=2, cancel=None, what="the program")
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), "the grandchild outlived the timeout"


def test_crashing_program_is_classified_with_its_signal():
    result = execute([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout=30, cancel=None,
                     what="the program")
    assert result.returncode == -11
    err = classify_ncu_output(result.returncode, result.stdout + result.stderr)
    assert type(err) is ProgramCrashError and "SIGSEGV" in str(err)


def test_flooding_program_is_capped_not_fatal():
    n = 80 * 2**20  # beyond run_tool's 64 MiB per-stream cap
    result = execute([PY, "-c", f"import sys; sys.stdout.write('x' * {n})"], timeout=60, cancel=None, what="flood")
    assert result.returncode == 0 and len(result.stdout) == 64 * 2**20


def test_missing_tool_is_a_clear_error(tmp_path):
    with pytest.raises(ToolNotFoundError, match="not found"):
        execute([str(tmp_path / "no-ncu-here")], timeout=5, cancel=None, what="ncu --help")


def test_local_env_adds_to_the_inherited_environment():
    t = ProfileTarget(command=["x"], env={"KS_ONLY": "1"})
    _, env, _ = wrap(t, ["x"])
    assert env is not None and env["KS_ONLY"] == "1" and env.get("PATH") == os.environ.get("PATH")
