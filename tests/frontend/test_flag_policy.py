"""The allow-list of flags that are not the user's own (analysis/frontend/flag_policy.py), and the
nvcc behaviour it exists for, shown with the real nvcc."""

from __future__ import annotations

import subprocess

import pytest

from kernelscope.analysis.frontend.flag_policy import refused_flag, shell_metacharacter
from kernelscope.analysis.frontend.toolchain import locate_toolchain


def test_nvcc_hands_macro_values_to_a_shell(tmp_path):
    """Why shell metacharacters are refused: nvcc runs its host preprocessor through /bin/sh with
    `-D "VALUE"`, inside double quotes, where `$(...)` and backticks still run."""
    tc = locate_toolchain()
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n")
    marker = tmp_path / "MARKER"
    flag = f"-DKS=$(touch {marker})"
    compile_ = [str(tc.nvcc), "-cubin", "-arch=sm_90", flag, str(src), "-o", str(tmp_path / "k.cubin")]
    dry = subprocess.run([compile_[0], "--dryrun", *compile_[1:]], capture_output=True, text=True, env=tc.env,
                         cwd=tmp_path, timeout=120)
    assert f'-D "KS=$(touch {marker})"' in dry.stderr, dry.stderr
    assert not marker.exists()  # --dryrun only prints
    subprocess.run(compile_, capture_output=True, text=True, env=tc.env, cwd=tmp_path, timeout=120)
    assert marker.exists(), "nvcc no longer passes -D values to a shell: revisit flag_policy's reasons"
    assert refused_flag([flag]) is not None


@pytest.mark.parametrize("flags", [
    ["-O3", "-std=c++17", "--expt-relaxed-constexpr", "--expt-extended-lambda", "-lineinfo", "-G"],
    ["-I", "include", "-Ithird_party/cutlass/include", "-isystem", "/opt/x/include", "--include-path=inc"],
    ["-DTILE=32", "-D", "NDEBUG", "-DNAME", "-UOLD", "-U", "OTHER", "--define-macro=A=1"],
    ["-arch=sm_90", "-gencode", "arch=compute_90,code=sm_90", "--gpu-architecture=sm_80", "-maxrregcount=64"],
    ["--use_fast_math", "-rdc=true", "--extended-lambda", "--ftz=true", "--default-stream", "per-thread", "-w"],
])
def test_allowed(flags):
    assert refused_flag(flags) is None


@pytest.mark.parametrize("flags,why", [
    (["-DKS=$(touch m)"], "'$'"),
    (["-UX`id`"], "'`'"),
    (["-D", "A=1;id"], "';'"),
    (["-DA=\"x\""], "'\"'"),
    (["-Iinc dir"], "' '"),
    (["-DA=1\nid"], "'\\n'"),
    (["--forward-unknown-to-host-compiler", "-B/repo/tools/"], "'--forward-unknown-to-host-compiler' is not on"),
    (["-B/repo/tools/"], "'-B/repo/tools/' is not on"),
    (["-ccbin", "/repo/gcc"], "'-ccbin' is not on"),
    (["-ccbin=/repo/gcc"], "'-ccbin=/repo/gcc' is not on"),
    (["-Xcompiler", "-fplugin=/repo/p.so"], "'-Xcompiler' is not on"),
    (["--options-file", "/repo/opts"], "'--options-file' is not on"),
    (["-include", "/etc/passwd"], "'-include' is not on"),
    (["-I"], "'-I' has a value outside"),
    (["-I", "-B/x/"], "'-I' has a value outside"),
    (["-D1BAD"], "'-D1BAD' has a value outside"),
    (["-std=c++17;id"], "';'"),
    (["-maxrregcount=lots"], "has a value outside"),
])
def test_refused(flags, why):
    reason = refused_flag(flags)
    assert reason is not None and why in reason, reason


def test_shell_metacharacter():
    assert shell_metacharacter("-I/usr/include") is None
    assert shell_metacharacter("-DX=a|b") == "|"
