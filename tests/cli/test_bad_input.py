"""Bad input and a hostile machine are never "internal error" (exit 3): issue #30 point 6. The real
command line in a subprocess: each case ends with a clear message and exit 1 (the file does not
compile) or 2 (input, setup or the machine), and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BROKEN = "__global__ void k(float *x) { x[0] = undefined_thing; }\n"
SAXPY = Path(__file__).resolve().parents[1] / "data" / "lsp" / "saxpy.cu"


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600, env={**os.environ, **(env or {})})


def _clear(proc: subprocess.CompletedProcess) -> None:
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_a_relative_compile_commands_path_with_a_failing_compile_is_a_compile_error(tmp_path):
    (tmp_path / "bad.cu").write_text(BROKEN)
    (tmp_path / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(tmp_path), "file": "bad.cu", "command": "nvcc -c bad.cu"}]))
    proc = cli("analyze", "bad.cu", "--compile-commands", "compile_commands.json", "--quick", cwd=tmp_path)
    _clear(proc)
    assert proc.returncode == 1, proc.stderr  # the file's own error, found with the database's flags
    assert "undefined_thing" in proc.stderr


def test_capture_with_a_cache_folder_it_cannot_create_says_so(tmp_path):
    # a regular file where the cache folder should be: unwritable for root as well as for a user
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    program = tmp_path / "saxpy.cu"
    program.write_text(SAXPY.read_text())
    proc = cli("analyze", str(program), "--capture", "--quick", cwd=tmp_path,
               env={"XDG_CACHE_HOME": str(blocked), "HOME": str(blocked)})
    _clear(proc)
    # 2 with the path named, or 0 where capture goes on without its cache: never 3
    assert proc.returncode in (0, 2), proc.stderr
    if proc.returncode == 2:
        assert str(blocked) in proc.stderr, proc.stderr


def test_a_full_tmpdir_is_the_machines_failure_not_the_files(tmp_path):
    # nvcc writes its intermediate files to TMPDIR; one it cannot write to fails every compile
    proc = cli("analyze", str(SAXPY), "--quick", cwd=tmp_path, env={"TMPDIR": str(tmp_path / "missing")})
    _clear(proc)
    assert proc.returncode == 2, proc.stderr
    assert "not of the file" in proc.stderr and "TMPDIR" in proc.stderr, proc.stderr
    assert "error:" not in proc.stderr  # not reported as an error in saxpy.cu


@pytest.mark.skipif(os.name != "posix", reason="a shell-script stand-in for nvcc")
def test_a_compile_that_times_out_is_exit_2_with_the_timeout_named(tmp_path):
    real = subprocess.run([sys.executable, "-c", "from kernelscope.analysis.frontend.toolchain import "
                           "locate_toolchain; print(locate_toolchain().nvcc)"], capture_output=True, text=True,
                          check=True).stdout.strip()
    stalled = tmp_path / "bin" / "nvcc"
    stalled.parent.mkdir()
    # answers --version (the toolchain's probe) and hangs on a compile, as a stopped compiler does
    stalled.write_text(f'#!/bin/sh\ncase "$*" in *--version*) exec "{real}" "$@";; esac\nsleep 600\n')
    stalled.chmod(0o755)
    (tmp_path / ".kernelscope.toml").write_text("")
    proc = subprocess.run([sys.executable, "-c", f"""
import sys
from pathlib import Path
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.frontend.compile import CompileSetupError
try:
    analyze(Path({str(SAXPY)!r}), AnalysisOptions(nvcc_path={str(stalled)!r}, compile_timeout_s=2), depth="quick")
except CompileSetupError as e:
    print(e)
    sys.exit(2)
"""], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "did not finish within 2 s" in proc.stdout and "Nothing was cached" in proc.stdout, proc.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_directory_with_a_fifo_and_a_device_among_its_cu_files(tmp_path):
    (tmp_path / "saxpy.cu").write_text(SAXPY.read_text())
    os.mkfifo(tmp_path / "fifo.cu")  # read as a source, it blocked the run for ever
    (tmp_path / "zero.cu").symlink_to("/dev/zero")  # and this one never ended
    proc = cli("analyze", str(tmp_path), "--quick", cwd=tmp_path)
    _clear(proc)
    assert proc.returncode == 0, proc.stderr
    assert "summary: 1 file in" in proc.stdout and "saxpy.cu:" in proc.stdout, proc.stdout
    assert f"skipped {tmp_path / 'fifo.cu'}" in proc.stderr and f"skipped {tmp_path / 'zero.cu'}" in proc.stderr


@pytest.mark.skipif(os.name != "posix", reason="a shell-script host compiler")
def test_a_compiler_stage_killed_from_outside_is_the_machines_failure(tmp_path):
    # a host compiler that dies of SIGKILL, as the OOM killer ends one: nvcc says
    # "'.../g++' died due to signal 9 (Kill signal)"
    killed = tmp_path / "g++"
    killed.write_text("#!/bin/sh\nkill -9 $$\n")
    killed.chmod(0o755)
    proc = cli("analyze", str(SAXPY), "--quick", "--flags", f"-ccbin {killed}", cwd=tmp_path)
    _clear(proc)
    assert proc.returncode == 2, proc.stderr
    assert "not of the file" in proc.stderr and "died due to signal 9" in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_source_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    # a FIFO would block the read until a writer comes; /dev/zero would never end
    source = tmp_path / "kernel.cu"
    if kind == "fifo":
        os.mkfifo(source)
    else:
        source.symlink_to("/dev/zero")
    proc = cli("analyze", str(source), "--quick", cwd=tmp_path)
    _clear(proc)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
