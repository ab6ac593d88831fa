"""Counter permissions: real profiler output from ERR_NVGPUCTRPERM failures (fixtures/ncu-output, each
file's source in its README) is recognised, and the one message names every fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.measure.errors import CounterPermissionError
from kernelscope.analysis.measure.ncu import classify_ncu_output
from kernelscope.analysis.measure.target import container_runtime

FIXTURES = Path(__file__).parent / "fixtures" / "ncu-output"
FAILURES = sorted(FIXTURES.glob("*.txt"))


def test_every_fixture_has_its_source_in_the_readme():
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert FAILURES and all(f"`{f.name}`" in readme for f in FAILURES)


@pytest.mark.parametrize("path", FAILURES, ids=lambda p: p.stem)
def test_real_permission_failures_name_every_fix(path):
    error = classify_ncu_output(1, path.read_text(encoding="utf-8"))
    assert type(error) is CounterPermissionError
    text = str(error)
    assert "ERR_NVGPUCTRPERM" in text
    assert "NVreg_RestrictProfilingToAdminUsers=0" in text  # the driver option
    assert "--cap-add=SYS_ADMIN" in text and "CAP_PERFMON" in text  # the container's capability
    assert "ask the admins" in text and "root" in text  # the admin's side
    assert "kernelscope shows the modeled profile" in text  # which profile the user is looking at
    assert "\n" not in text  # one message


def test_the_device_is_named_when_ncu_names_it():
    hf = classify_ncu_output(1, (FIXTURES / "errnvgpuctrperm-hf-jobs-container.txt").read_text())
    nvprof = classify_ncu_output(1, (FIXTURES / "errnvgpuctrperm-nvprof.txt").read_text())
    assert "counters of device 0 (ERR_NVGPUCTRPERM)" in str(hf)
    assert "counters (ERR_NVGPUCTRPERM)" in str(nvprof)  # nvprof's text names no device


def test_a_permission_failure_also_reports_no_kernels_but_the_cause_wins():
    # ncu prints "No kernels were profiled" after ERR_NVGPUCTRPERM (the kernels ran unprofiled)
    out = (FIXTURES / "errnvgpuctrperm-runpod-container.txt").read_text() + "==WARNING== No kernels were profiled.\n"
    assert type(classify_ncu_output(0, out, kernel_regex="attn")) is CounterPermissionError


@pytest.mark.parametrize("run, runtime", [
    (("docker", "exec", "-w", "{cwd}", "trainer", "{command}"), "docker"),
    (("kubectl", "exec", "pod/gpu-0", "--", "{command}"), "kubectl"),
    (("srun", "-p", "gpu", "--container-image=nvcr.io#nvidia/pytorch:24.05-py3", "{command}"),
     "srun --container-image (pyxis)"),
    (("srun", "-p", "gpu", "apptainer", "exec", "--nv", "img.sif", "{command}"), "apptainer"),
    (("ssh", "gpu01", "cd {cwd} && {command}"), None),
    (("srun", "-p", "gpu", "--chdir={cwd}", "{command}"), None),
])
def test_container_runtimes_in_a_run_template(run, runtime):
    assert container_runtime(run) == runtime


def test_in_a_container_the_containers_fix_comes_first():
    out = (FIXTURES / "errnvgpuctrperm-runpod-container.txt").read_text()
    text = str(classify_ncu_output(1, out, container="docker"))
    assert text.index("--cap-add=SYS_ADMIN") < text.index("NVreg_RestrictProfilingToAdminUsers=0")
    assert "The profiler ran in a container (docker)" in text and "nothing inside the container" in text
