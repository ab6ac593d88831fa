"""Toolchain search order and compile_commands.json parsing, against the real wheel binaries."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kernelscope.analysis.frontend.toolchain import (CompileCommand, ToolchainError, find_compile_command, locate_toolchain,
                                            parse_compile_command, wheel_bin_dirs)


@pytest.fixture(scope="module")
def wheel_bin() -> Path:
    for d in wheel_bin_dirs():
        if (d / "nvcc").is_file():
            return d
    pytest.skip("the nvidia-cuda-nvcc wheel is not installed")


def fake_cuda(root: Path, wheel_bin: Path, *, wrapper: bool = False) -> Path:
    """A CUDA-like folder root/bin/nvcc: a symlink to the wheel's nvcc, or (like /usr/local/bin/nvcc) a
    wrapper script whose folder holds no nvdisasm."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    if wrapper:
        nvcc.write_text(f'#!/bin/sh\nexec "{wheel_bin / "nvcc"}" "$@"\n')
        nvcc.chmod(0o755)
    else:
        nvcc.symlink_to(wheel_bin / "nvcc")
    return nvcc


def test_setting_beats_path(tmp_path, wheel_bin):
    on_path = fake_cuda(tmp_path / "a", wheel_bin)
    setting = fake_cuda(tmp_path / "b", wheel_bin)
    tc = locate_toolchain(str(setting), environ={"PATH": str(on_path.parent)})
    assert (tc.nvcc, tc.origin) == (setting, "setting")
    assert re.fullmatch(r"\d+\.\d+\.\d+", tc.version)
    assert tc.env["PATH"].split(os.pathsep)[0] == str(setting.parent)


def test_setting_may_name_a_cuda_folder(tmp_path, wheel_bin):
    setting = fake_cuda(tmp_path / "cuda", wheel_bin)
    tc = locate_toolchain(str(tmp_path / "cuda"), environ={"PATH": ""})
    assert (tc.nvcc, tc.origin) == (setting, "setting")


def test_bad_setting_is_an_actionable_error(tmp_path):
    with pytest.raises(ToolchainError, match="kernelscope.nvccPath"):
        locate_toolchain(str(tmp_path / "nope" / "nvcc"), environ={"PATH": ""})


def test_compile_commands_compiler_beats_path(tmp_path, wheel_bin):
    on_path = fake_cuda(tmp_path / "a", wheel_bin)
    cc_nvcc = fake_cuda(tmp_path / "cc", wheel_bin)
    cc = parse_compile_command({"directory": str(tmp_path), "file": "k.cu",
                                "arguments": [str(cc_nvcc), "-c", "k.cu"]}, tmp_path)
    tc = locate_toolchain(None, cc, environ={"PATH": str(on_path.parent)})
    assert (tc.nvcc, tc.origin) == (cc_nvcc, "compile_commands")


def test_compile_commands_with_a_host_compiler_is_skipped(tmp_path, wheel_bin):
    on_path = fake_cuda(tmp_path / "a", wheel_bin)
    cc = parse_compile_command({"directory": str(tmp_path), "file": "k.cpp", "command": "/usr/bin/g++ -c k.cpp"},
                               tmp_path)
    tc = locate_toolchain(None, cc, environ={"PATH": str(on_path.parent)})
    assert tc.origin == "PATH"


def test_path_beats_cuda_home(tmp_path, wheel_bin):
    on_path = fake_cuda(tmp_path / "a", wheel_bin)
    fake_cuda(tmp_path / "home", wheel_bin)
    tc = locate_toolchain(environ={"PATH": str(on_path.parent), "CUDA_HOME": str(tmp_path / "home")})
    assert (tc.nvcc, tc.origin) == (on_path, "PATH")


def test_cuda_home_beats_wheel(tmp_path, wheel_bin):
    home_nvcc = fake_cuda(tmp_path / "home", wheel_bin)
    tc = locate_toolchain(environ={"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(tmp_path / "home")})
    assert (tc.nvcc, tc.origin) == (home_nvcc, "CUDA_HOME")


def test_wheel_found_when_path_has_no_nvcc(tmp_path, wheel_bin):
    tc = locate_toolchain(environ={"PATH": str(tmp_path)})
    assert tc.origin == "pip wheel" and tc.nvcc == wheel_bin / "nvcc"
    assert tc.nvdisasm == wheel_bin / "nvdisasm" and tc.nvdisasm_origin == "nvcc dir"
    assert tc.env["PATH"].startswith(str(wheel_bin))


def test_nvdisasm_from_wheel_when_nvcc_folder_lacks_it(tmp_path, wheel_bin):
    # Like /usr/local/cuda-13.0: nvcc but no nvdisasm/cuobjdump beside it.
    wrapper = fake_cuda(tmp_path / "sys", wheel_bin, wrapper=True)
    tc = locate_toolchain(environ={"PATH": str(wrapper.parent)})
    assert (tc.nvcc, tc.origin) == (wrapper, "PATH")
    assert tc.nvdisasm == wheel_bin / "nvdisasm" and tc.nvdisasm_origin == "pip wheel"


def test_missing_toolchain_says_how_to_fix(tmp_path):
    with pytest.raises(ToolchainError) as e:
        locate_toolchain(environ={"PATH": str(tmp_path)}, search_wheels=False)
    text = str(e.value)
    assert "PATH" in text and "CUDA_HOME" in text
    assert "pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm" in text and "kernelscope.nvccPath" in text


def test_missing_nvdisasm_is_named(tmp_path, wheel_bin):
    wrapper = fake_cuda(tmp_path / "sys", wheel_bin, wrapper=True)
    with pytest.raises(ToolchainError, match="nvdisasm"):
        locate_toolchain(environ={"PATH": str(wrapper.parent)}, search_wheels=False)


# --- compile_commands.json -----------------------------------------------------------------

def write_db(tmp_path: Path, entries: list[dict]) -> Path:
    db = tmp_path / "build" / "compile_commands.json"
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_text(json.dumps(entries))
    return db


def test_command_form(tmp_path):
    (tmp_path / "src").mkdir()
    src = tmp_path / "src" / "k.cu"
    src.write_text("")
    db = write_db(tmp_path, [
        {"directory": str(tmp_path / "other"), "file": "x.cu", "command": "nvcc -c x.cu"},
        {"directory": str(tmp_path / "build"), "file": "../src/k.cu",
         "command": "ccache /opt/cuda/bin/nvcc -DUSE_X -D 'NAME=\"a b\"' -I../include -isystem /sys/inc "
                    "-O3 -std=c++17 --use_fast_math -arch=sm_80 -gencode arch=compute_80,code=sm_80 "
                    "--generate-code=arch=compute_90,code=sm_90 -cubin -maxrregcount=64 -rdc=true "
                    "-Xcompiler -fPIC -o CMakeFiles/k.o -c ../src/k.cu"}])
    cc = find_compile_command(src, db)
    assert cc is not None and cc.is_nvcc
    assert cc.compiler == "/opt/cuda/bin/nvcc"
    assert cc.directory == tmp_path / "build" and cc.file.resolve() == src.resolve()
    assert cc.flags == ("-DUSE_X", "-D", 'NAME="a b"', f"-I{tmp_path / 'build' / '../include'}", "-isystem",
                        "/sys/inc", "-O3", "-std=c++17", "--use_fast_math", "-maxrregcount=64", "-rdc=true",
                        "-Xcompiler", "-fPIC")
    assert cc.include_paths == (tmp_path / "build" / "../include",)
    assert cc.system_include_paths == (Path("/sys/inc"),)
    assert cc.defines == ("USE_X", 'NAME="a b"')


def test_arguments_form_and_directory_lookup(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("")
    db = write_db(tmp_path, [{"directory": str(tmp_path), "file": str(src),
                              "arguments": ["nvcc", "-x", "cu", "-I", "inc", "-DN=4", "-dc", src.name,
                                            "-o", "k.o"]}])
    cc = find_compile_command(src, db.parent)  # the folder works as well as the file
    assert cc is not None
    assert cc.flags == ("-x", "cu", f"-I{tmp_path / 'inc'}", "-DN=4", "-rdc=true")
    assert cc.defines == ("N=4",)


def test_missing_entry_or_bad_db_is_none(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("")
    assert find_compile_command(src, write_db(tmp_path, [{"directory": "/", "file": "/x.cu", "command": "nvcc"}])) is None
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert find_compile_command(src, bad) is None
    assert find_compile_command(src, tmp_path / "absent.json") is None


def test_the_first_entry_of_a_file_that_parses_wins_and_a_changed_database_is_read_again(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("")
    (tmp_path / "link.cu").symlink_to(src)
    db = write_db(tmp_path, [
        {"directory": str(tmp_path), "file": "other.cu", "command": "nvcc -DOTHER -c other.cu"},
        {"directory": str(tmp_path), "file": "k.cu"},  # no command: skipped
        {"directory": str(tmp_path), "file": "link.cu", "command": "nvcc -DFIRST -c link.cu"},
        {"directory": str(tmp_path), "file": str(src), "command": "nvcc -DSECOND -c k.cu"}])
    assert find_compile_command(src, db).defines == ("FIRST",)  # through the link, in the database's order
    assert find_compile_command(tmp_path / "link.cu", db).defines == ("FIRST",)
    # what a build writes: the same file, new entries (and a size of its own)
    db.write_text(json.dumps([{"directory": str(tmp_path), "file": "k.cu", "command": "nvcc -DREBUILT=1 -c k.cu"}]))
    assert find_compile_command(src, db).defines == ("REBUILT=1",)
    db.write_text("[]")
    assert find_compile_command(src, db) is None


def test_compile_command_is_immutable(tmp_path):
    cc = CompileCommand(file=tmp_path / "k.cu", directory=tmp_path, compiler="nvcc", flags=(), include_paths=(),
                        system_include_paths=(), defines=())
    with pytest.raises(Exception):
        cc.compiler = "g++"  # type: ignore[misc]
