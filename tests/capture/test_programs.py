"""Capture on programs shaped as real ones are (issue #31): main() in a .cpp beside the kernel
file (cuda-samples), the units and flags of compile_commands.json, a program linking cuBLAS,
cuRAND, cuFFT and cuSPARSE (llm.c's dev/cuda), kernels in an anonymous namespace, launches
through function pointers and the runtime's launch calls, and what a failed link says. Each
program is built by real nvcc and run against the stand-in runtime."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelscope.analysis.capture import capture_program
from kernelscope.analysis.capture.run import runnable_program, with_capture
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

PROGRAMS = Path(__file__).parent / "programs"
SPLIT = PROGRAMS / "split"
LIBRARIES = ("-lcublas", "-lcurand", "-lcufft", "-lcusparse")


def _kernel(result, name: str):
    (k,) = [k for k in result.kernels if f"{name}(" in k.name]
    return k


def _assumed(kernel) -> dict[str, tuple[str, str]]:
    return {a.name: (a.value, a.source) for a in kernel.assumptions}


def test_a_kernel_file_is_captured_through_the_main_cpp_beside_it(toolchain):
    # scale_kernels.cu has no main(); main.cpp calls its run_scale and gold.cpp's reference
    src = SPLIT / "scale_kernels.cu"
    program = runnable_program(src, AnalysisOptions())
    assert program.main.path.name == "main.cpp"
    assert {u.path.name for u in program.units} == {"scale_kernels.cu", "gold.cpp"}  # not driver.cu: it has a main()
    out = with_capture(src, AnalysisOptions())
    assert out.message is None
    # ELEMENTS = 5000, 128 threads: 40 blocks; the kernel is in an anonymous namespace
    scale = _kernel(analyze(src.resolve(), out.options, depth="quick"), "scale")
    assert (scale.launch.grid, scale.launch.block) == ((40, 1, 1), (128, 1, 1))
    assert _assumed(scale)["n"] == ("5000", "captured")


def test_the_compile_database_gives_the_units_and_their_flags(toolchain, tmp_path, monkeypatch):
    for f in SPLIT.iterdir():
        shutil.copy(f, tmp_path / f.name)
    # as CMake writes it: nvcc for the .cu, the host compiler for the .cpp files, ELEMENTS set by the build
    entries = [{"directory": str(tmp_path), "file": "scale_kernels.cu",
                "arguments": ["nvcc", "-O2", "-c", "scale_kernels.cu", "-o", "scale_kernels.o"]},
               {"directory": str(tmp_path), "file": "main.cpp",
                "command": "c++ -DELEMENTS=8192 -O2 -Wall -c main.cpp -o main.o"},
               {"directory": str(tmp_path), "file": "gold.cpp", "command": "c++ -O2 -c gold.cpp -o gold.o"}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries))
    options = AnalysisOptions(compile_commands=tmp_path)
    program = runnable_program(tmp_path / "scale_kernels.cu", options)
    assert "-DELEMENTS=8192" in program.main.flags and "-Xcompiler=-Wall" in program.main.flags
    monkeypatch.chdir(tmp_path.parent)  # `--compile-commands` as a user types it: relative
    assert runnable_program(tmp_path / "scale_kernels.cu",
                            AnalysisOptions(compile_commands=Path(tmp_path.name))) == program
    out = with_capture(tmp_path / "scale_kernels.cu", options)
    assert out.message is None
    (launch,) = out.capture.launches
    # 8192 elements from the database's flags, not main.cpp's default of 5000
    assert launch.grid == (64, 1, 1) and launch.scalar(2) == 8192


def test_a_main_that_calls_a_file_beside_it_is_linked_with_it(toolchain):
    # driver.cu's main() calls gold.cpp's compute_gold: it does not link alone
    out = with_capture(SPLIT / "driver.cu", AnalysisOptions())
    assert out.message is None
    assert out.options.captured["offset"].grid == (12, 1, 1)


def test_a_program_linking_the_math_libraries_is_captured(toolchain, tmp_path):
    c = capture_program(toolchain, PROGRAMS / "libraries.cu", flags=LIBRARIES,
                        cache_dir=tmp_path)
    # every library call returned success, so the program reached its own kernel and its end
    assert c.finished and c.exit_code == 0 and "done" in c.output and "failed" not in c.output
    assert [(x.kernel, x.grid, x.block, x.scalar(1)) for x in c.launches] == [
        ("_Z4reluPfi", (512, 1, 1), (256, 1, 1), 512 * 256)]


def test_launches_through_pointers_and_every_runtime_launch_call_are_recorded(toolchain, tmp_path):
    c = capture_program(toolchain, PROGRAMS / "indirect.cu", cache_dir=tmp_path)
    assert c.finished
    got = [(x.kernel.split("_cu_")[-1][8:] if "_GLOBAL__N_" in x.kernel else x.kernel, x.grid, x.block, x.api,
            x.scalar(1)) for x in c.launches]
    assert got == [
        ("6hiddenEPfi", (3, 1, 1), (64, 1, 1), "<<<>>>", 17),
        ("5tiledILi32EEEvPfl", (5, 1, 1), (32, 1, 1), "<<<>>>", 19),
        ("_Z5firstPfi", (8, 2, 1), (128, 1, 1), "<<<>>>", 100),  # a table, dimensions from a struct
        ("_Z6secondPfi", (8, 2, 1), (128, 1, 1), "<<<>>>", 101),
        ("6hiddenEPfi", (7, 1, 1), (96, 1, 1), "<<<>>>", 23),  # a function pointer
        ("6hiddenEPfi", (9, 1, 1), (32, 1, 1), "cudaLaunchKernel", 29),
        ("_Z5firstPfi", (11, 1, 1), (64, 1, 1), "cudaLaunchKernelEx", 29),
        ("_Z6secondPfi", (2, 1, 1), (32, 1, 1), "cudaLaunchCooperativeKernel", 29),
    ]


def test_kernels_in_an_anonymous_namespace_keep_their_captured_arguments(toolchain):
    src = PROGRAMS / "indirect.cu"
    out = with_capture(src, AnalysisOptions())
    result = analyze(src.resolve(), out.options, depth="quick")
    hidden, tiled = _kernel(result, "hidden"), _kernel(result, "tiled<32>")
    # hidden's most frequent configuration is its first of three; each argument as captured
    assert (hidden.launch.grid, _assumed(hidden)["n"]) == ((3, 1, 1), ("17", "captured"))
    assert _assumed(hidden)["launches"] == ("3", "captured")
    assert (tiled.launch.grid, _assumed(tiled)["n"]) == ((5, 1, 1), ("19", "captured"))


def test_a_failed_link_says_what_the_linker_said(toolchain):
    out = with_capture(PROGRAMS / "broken_link.cu", AnalysisOptions())
    assert out.capture is None
    assert "Linking broken_link.cu" in out.message and "undefined reference to `missing_helper" in out.message
    assert "main()" not in out.message  # it has one


def test_a_failed_compile_says_what_the_compiler_said(toolchain, tmp_path):
    src = tmp_path / "bad.cu"
    src.write_text("__global__ void k(int* p) { p[0] = undeclared_name; }\nint main() { return 0; }\n")
    out = with_capture(src, AnalysisOptions())
    assert "Compiling bad.cu" in out.message and "undeclared_name" in out.message and "main()" not in out.message
