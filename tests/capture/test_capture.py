"""The capture runtime on real programs built by real nvcc: every launch API, templates, streams,
a program that exits early, the per-kernel cap and the time limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.capture import CaptureError, capture_program, kparam_sizes
from kernelscope.analysis.capture.capture import Containment
from kernelscope.analysis.capture.capture import Unit, build_program, build_runtime
from kernelscope.analysis.process import run_tool
from kernelscope.analysis.frontend.toolchain import ToolchainError, locate_toolchain

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="module")
def toolchain():
    try:
        return locate_toolchain()
    except ToolchainError as e:
        pytest.skip(f"no nvcc: {e}")


def capture(toolchain, tmp_path, name, **kw):
    return capture_program(toolchain, PROGRAMS / name, cache_dir=tmp_path, **kw)


def test_every_launch_api_is_recorded_with_its_arguments(toolchain, tmp_path):
    c = capture(toolchain, tmp_path, "launches.cu")
    assert c.finished and c.exit_code == 0
    got = [(x.kernel, x.grid, x.block, x.shared_bytes, x.api) for x in c.launches]
    assert got == [
        ("_Z5saxpyifPKfPf", (4096, 1, 1), (256, 1, 1), 0, "<<<>>>"),
        ("_Z5scaleILi128EEvPfl", (4, 2, 1), (128, 1, 1), 64, "<<<>>>"),
        ("_Z5saxpyifPKfPf", (10, 1, 1), (32, 1, 1), 0, "cudaLaunchKernel"),
        ("_Z5saxpyifPKfPf", (7, 3, 1), (64, 1, 1), 256, "cudaLaunchKernelEx"),
        ("_Z5saxpyifPKfPf", (2, 1, 1), (96, 1, 1), 0, "cudaLaunchCooperativeKernel"),
    ]
    first, tmpl, direct, ex, coop = c.launches
    assert (first.scalar(0), first.real(1)) == (1 << 20, 2.0)
    assert (direct.scalar(0), direct.real(1)) == (1 << 20, 3.0)
    assert (ex.scalar(0), ex.real(1)) == (500, 4.0)
    assert tmpl.scalar(1, size=8) == 77  # a `long`: 8 bytes, from the cubin's parameter layout
    # pointers are matched to the cudaMalloc they came from (n floats each)
    assert first.allocation_bytes == (None, None, 4 << 20, 4 << 20)
    assert tmpl.allocation_bytes[0] == 4 << 20
    # the default stream is 0; the created one is shared by the template and the Ex launch
    assert first.stream == 0 and tmpl.stream != 0 and tmpl.stream == ex.stream == coop.stream
    assert c.counts == {"_Z5saxpyifPKfPf": 4, "_Z5scaleILi128EEvPfl": 1}
    assert len(c.of("saxpy")) == 4


def test_a_program_that_exits_early_keeps_what_it_launched(toolchain, tmp_path):
    c = capture(toolchain, tmp_path, "early_exit.cu")
    assert c.exit_code == 1 and not c.finished
    assert "wrong result" in c.output
    assert [(x.grid, x.block, x.scalar(1), x.scalar(2)) for x in c.launches] == [((32, 1, 1), (128, 1, 1), 7, 4096)]


def test_launches_beyond_the_cap_are_counted_not_recorded(toolchain, tmp_path):
    c = capture(toolchain, tmp_path, "many.cu", containment=Containment(launches_per_kernel=5))
    assert [x.scalar(1) for x in c.launches] == [0, 1, 2, 3, 4]
    assert c.counts == {"_Z4stepPfi": 1000}
    assert c.configurations("step")[((1, 1, 1), (256, 1, 1), 0, c.launches[0].args)] == 1


def test_the_time_limit_stops_the_program_and_keeps_its_launches(toolchain, tmp_path):
    c = capture(toolchain, tmp_path, "many.cu", argv=["forever"],
                containment=Containment(time_limit=1, launches_per_kernel=3))
    assert not c.finished and c.exit_code != 0
    assert len(c.launches) == 3 and c.counts["_Z4stepPfi"] == 1000  # SIGALRM wrote the counts


def test_captures_are_cached_by_the_binary(toolchain, tmp_path):
    a = capture(toolchain, tmp_path, "early_exit.cu")
    runs = list((tmp_path / "runs").glob("*.jsonl"))
    assert len(runs) == 1
    b = capture(toolchain, tmp_path, "early_exit.cu")
    assert a == b and list((tmp_path / "runs").glob("*.jsonl")) == runs


def test_a_file_without_main_is_a_clear_error(toolchain, tmp_path):
    src = tmp_path / "lib.cu"
    src.write_text("__global__ void k(int* p) { p[0] = 1; }\n")
    with pytest.raises(CaptureError, match="needs a main"):
        capture_program(toolchain, src, cache_dir=tmp_path)


def test_the_runtime_exports_what_nvcc_built_programs_import(toolchain, tmp_path):
    """Every cuda* symbol the test programs import is defined by the stand-in runtime, under the
    version node the program asks for, so no call falls through to a missing symbol."""
    runtime = build_runtime(toolchain.nvcc, out_dir=tmp_path)
    defined = {ln.split()[-1] for ln in run_tool(["nm", "-D", "--defined-only", str(runtime)]).stdout.splitlines()}
    assert all(d.endswith("@@libcudart.so.13") and "cuda" in d and not d.startswith("_Z") for d in defined
               if not d.startswith("libcudart")), defined
    defined = {d.replace("@@", "@") for d in defined}
    for name in ("launches.cu", "early_exit.cu", "many.cu"):
        exe = tmp_path / name.replace(".cu", "")
        build_program(toolchain.nvcc, [Unit(PROGRAMS / name)], exe, "sm_90", runtime)
        imported = {ln.split()[-1] for ln in run_tool(["nm", "-D", "--undefined-only", str(exe)]).stdout.splitlines()
                    if "cuda" in ln}
        assert imported and imported <= defined, imported - defined


def test_parameter_layout_from_the_cubin():
    dump = """
.nv.info._Z2tkILi128EEvPfl
\tAttribute:\tEIATTR_KPARAM_INFO
\tValue:\tIndex : 0x0\tOrdinal : 0x1\tOffset  : 0x8\tSize    : 0x8
\tAttribute:\tEIATTR_KPARAM_INFO
\tValue:\tIndex : 0x0\tOrdinal : 0x0\tOffset  : 0x0\tSize    : 0x8
.nv.info._Z1kv
\tAttribute:\tEIATTR_CUDA_API_VERSION
"""
    assert kparam_sizes(dump) == {"_Z2tkILi128EEvPfl": (8, 8)}


KERNEL = """
__global__ void scale(float *x, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = {body};
}}

__device__ float twice(float v) {{ return {twice}; }}

__host__ __device__ int blocks(int n) {{ return {blocks}; }}

int main() {{
    int n = {n};
    scale<<<blocks(n), 256>>>(nullptr, n);
    return 0;
}}
"""


def test_an_edit_inside_a_kernel_reuses_the_capture_and_one_of_host_code_does_not(toolchain, tmp_path):
    # the stand-in runtime never runs device code: launches depend on host code and signatures only
    src = tmp_path / "prog.cu"
    cache = tmp_path / "cache"

    def run(**kw):
        src.write_text(KERNEL.format(**{"body": "x[i] * 2.0f", "twice": "2.0f * v", "n": 4096,
                                        "blocks": "(n + 255) / 256", **kw}))
        cap = capture_program(toolchain, src, cache_dir=cache)
        return cap, sorted((cache / "runs").glob("*.jsonl"))

    first, runs = run()
    assert len(runs) == 1 and first.launches[0].grid == (16, 1, 1)
    again, same = run(body="x[i] * 3.0f + 1.0f", twice="v + v")
    assert same == runs and again == first  # no build, the same launches
    commented, same = run(n="4096 /* elements */")  # nor for a comment in host code
    assert same == runs and commented == first
    host, more = run(n=8192)
    assert len(more) == 2 and host.launches[0].grid == (32, 1, 1)
    # a __host__ __device__ function is host code too
    both, most = run(n=8192, blocks="(n + 127) / 128")
    assert len(most) == 3 and both.launches[0].grid == (64, 1, 1)
