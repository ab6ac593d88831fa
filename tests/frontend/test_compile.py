"""The compile step against real nvcc output: resources, diagnostics, fallback, bad input, cancellation."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest

from kernelscope.analysis.frontend.compile import CompileSetupError, compile_cuda, host_function_spans, blank_spans
from kernelscope.analysis.process import CancelToken, Cancelled, run_tool
from kernelscope.analysis.frontend.toolchain import parse_compile_command

KERNELS = """\
__device__ float twice(float x) { return x * 2.0f; }
__global__ void tile(float *a, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = a[i];
  __syncthreads();
  if (i < n) a[i] = twice(s[255 - threadIdx.x]);
}
__global__ void big(float *a) {
  float loc[64];
  for (int j = 0; j < 64; ++j) loc[j] = a[j * threadIdx.x];
  a[threadIdx.x] = loc[a[0] > 0 ? 3 : (int)a[1]];
}
__device__ __noinline__ int frame(int x) { int b[10]; for (int i = 0; i < 10; i++) b[i] = x * i; return b[x % 10]; }
__global__ void calls(int *a) { a[0] = frame(a[1]); }
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def res_usage(toolchain, cubin: Path) -> dict[str, dict[str, int]]:
    """cuobjdump's independent reading of the cubin's resource table."""
    r = run_tool([str(toolchain.cuobjdump), "-res-usage", str(cubin)], env=dict(toolchain.env))
    out: dict[str, dict[str, int]] = {}
    name = None
    for line in r.stdout.splitlines():
        if m := re.match(r"\s*Function (\S+):", line):
            name = m.group(1)
        elif name and "REG:" in line:
            out[name] = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", line)}
    return out


@pytest.mark.parametrize("flags", [(), ("-maxrregcount=32",)])
def test_resources_match_cuobjdump(tmp_path, toolchain, flags):
    if toolchain.cuobjdump is None:
        pytest.skip("no cuobjdump")
    r = compile_cuda(write(tmp_path, "k.cu", KERNELS), toolchain=toolchain, user_flags=flags, workdir=tmp_path / "w")
    assert r.success and r.cubin and r.cubin_path and r.cubin_path.read_bytes() == r.cubin
    assert r.messages == ()  # ptxas -v's report is information, not diagnostics
    assert r.frontend == "nvcc" and not r.device_only
    by_name = {k.name: k for k in r.resources}
    assert {n for n, k in by_name.items() if k.is_kernel} == {"_Z4tilePfi", "_Z3bigPf", "_Z5callsPi"}
    assert not by_name["_Z5framei"].is_kernel
    table = res_usage(toolchain, r.cubin_path)
    for name, usage in table.items():
        k = by_name[name]
        assert k.usage.registers == usage["REG"]
        assert k.usage.stack_frame == usage["STACK"]
        assert k.usage.local_bytes == usage["LOCAL"]
        # cuobjdump adds the 1 KB per block the driver reserves on sm_80+ when a kernel uses smem.
        assert 0 <= usage["SHARED"] - k.usage.static_smem <= 1024
        assert (k.usage.static_smem == 0) == (usage["SHARED"] == 0)
        assert k.arch == "sm_90"
    assert by_name["_Z4tilePfi"].usage.static_smem == 1024 and by_name["_Z4tilePfi"].usage.barriers == 1
    assert by_name["_Z5callsPi"].cumulative_stack_bytes >= 40
    if flags:
        assert by_name["_Z3bigPf"].usage.registers == 32
        assert by_name["_Z3bigPf"].usage.spill_stores > 0 and by_name["_Z3bigPf"].usage.spill_loads > 0


def test_command_keeps_user_flags_and_sets_ours(tmp_path, toolchain):
    src = write(tmp_path, "k.cu", "#ifndef FOO\n#error FOO\n#endif\n__global__ void k(float *a) { a[0] = __sinf(a[1]); }\n")
    r = compile_cuda(src, toolchain=toolchain, arch="sm_80",
                     user_flags=["-O3", "-std=c++17", "-DFOO=1", "--use_fast_math", "-arch=sm_75", "-o", "x.o", "-c"],
                     workdir=tmp_path / "w")
    assert r.success, r.messages
    cmd = list(r.command)
    assert cmd[0] == str(toolchain.nvcc)
    for f in ("-O3", "-std=c++17", "-DFOO=1", "--use_fast_math", "-lineinfo", "-cubin", "-arch=sm_80"):
        assert f in cmd
    assert "-arch=sm_75" not in cmd and "x.o" not in cmd and "-c" not in cmd
    assert cmd[cmd.index("-Xptxas") + 1] == "-v"
    assert [k.arch for k in r.resources] == ["sm_80"]


def test_compile_command_flags_are_used(tmp_path, toolchain):
    write(tmp_path, "include/sizes.h", "#define N 128\n")
    src = write(tmp_path, "src/k.cu", '#include "sizes.h"\n__global__ void k(float *a) { __shared__ float s[N]; '
                                      's[threadIdx.x] = 1; __syncthreads(); a[0] = s[SHIFT]; }\n')
    cc = parse_compile_command({"directory": str(tmp_path / "build"), "file": "../src/k.cu",
                                "command": "nvcc -I../include -DSHIFT=3 -c ../src/k.cu -o k.o"}, tmp_path)
    (tmp_path / "build").mkdir()
    r = compile_cuda(src, toolchain=toolchain, compile_command=cc, workdir=tmp_path / "w")
    assert r.success, r.messages
    assert r.resources[0].usage.static_smem == 512


def test_syntax_error_line_and_column(tmp_path, toolchain):
    src = write(tmp_path, "e.cu", "__global__ void k(int *a) {\n  int x = 1\n  a[0] = x;\n}\n")
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    assert not r.success and r.cubin is None
    [err] = r.errors
    assert (err.file, err.line, err.column) == (str(src), 3, 3)
    assert err.message == 'expected a ";"' and err.origin_file is None


def test_column_maps_through_preprocessed_echo(tmp_path, toolchain):
    # EDG echoes `__global__` as `__attribute__((global))`; the column must be the original one.
    src = write(tmp_path, "e.cu", "__global__ void k(int *a) { a[0] = undefined_name; }\n")
    [err] = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w").errors
    assert (err.line, err.column) == (1, src.read_text().index("undefined_name") + 1)


def test_warning_with_code(tmp_path, toolchain):
    src = write(tmp_path, "w.cu", "__global__ void k(float *a) {\n  int unused;\n  a[0] = 1.0f;\n}\n")
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    assert r.success
    [w] = r.messages
    assert (w.severity, w.line, w.column, w.code) == ("warning", 2, 7, "177-D")
    assert "unused" in w.message


def test_instantiation_context_is_folded(tmp_path, toolchain):
    src = write(tmp_path, "t.cu", "template <int N> __device__ int f() { return N / 0; }\n"
                                  "__global__ void k(int *a) { a[0] = f<3>(); }\n")
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    [w] = [m for m in r.messages if m.code == "39-D"]
    assert w.line == 1 and "detected during instantiation" in w.message and "at line 2" in w.message
    assert len(r.messages) == 1


def test_header_error_attributed_to_include_line(tmp_path, toolchain):
    write(tmp_path, "inc/inner.cuh", "\n__device__ int bad() { return undefined_thing; }\n")
    write(tmp_path, "inc/outer.cuh", "#pragma once\n#include \"inner.cuh\"\n")
    src = write(tmp_path, "main.cu", "// analysed\n#include <cstdio>\n#include \"outer.cuh\"\n__global__ void k() {}\n")
    r = compile_cuda(src, toolchain=toolchain, user_flags=["-I", str(tmp_path / "inc")], workdir=tmp_path / "w")
    [err] = r.errors
    assert (err.file, err.line) == (str(src), 3)
    assert err.origin_file == str(tmp_path / "inc" / "inner.cuh") and err.origin_line == 2
    assert err.origin_column == 31


def test_host_compiler_header_error_uses_include_chain(tmp_path, toolchain):
    write(tmp_path, "host.h", "int ok();\n#error boom\n")
    src = write(tmp_path, "main.cu", "\n\n#include \"host.h\"\n__global__ void k() {}\n")
    [err] = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w").errors
    assert (err.line, err.origin_file, err.origin_line, err.tool) == (3, str(tmp_path / "host.h"), 2, "host compiler")
    assert "boom" in err.message


def test_ptxas_error_is_reported_without_line(tmp_path, toolchain):
    src = write(tmp_path, "p.cu", '__global__ void k(int *a) { asm("bogus.instr %0;" : "=r"(a[0])); }\n')
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    assert not r.success and r.errors
    assert all(m.tool == "ptxas" and m.line is None and m.file == str(src) for m in r.errors)


HOST_FAILS = """\
#include <cstdio>
__global__ void scale(float *a, float s) {
  a[threadIdx.x] *= s;
}

int main() {
  float *d;
  cudaMalloc(&d, 256 * sizeof(float));
  scale<<<1, 256>>>(d, 2.0f);
  cudaThreadSynchronize();
  printf("done\\n");
  return 0;
}
"""


def test_host_failure_falls_back_to_device_only(tmp_path, toolchain):
    src = write(tmp_path, "legacy.cu", HOST_FAILS)
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    [err] = r.errors  # cudaThreadSynchronize was removed in CUDA 13
    assert (err.line, err.column) == (10, 3) and "cudaThreadSynchronize" in err.message
    assert r.success and r.device_only and r.cubin
    assert "device code alone" in r.note
    assert [k.name for k in r.resources] == ["_Z5scalePff"]
    # Line info names the user's file, not the blanked copy.
    listing = json.loads(run_tool([str(toolchain.nvdisasm), "-json", "-gi", str(r.cubin_path)],
                                  env=dict(toolchain.env)).stdout)
    table = listing[2]
    files = {str(Path(table["directories"][f["dir-idx"]]) / f["file"]) for f in table["files"]}
    assert files == {str(src)}
    lines = {i["source-line"] for fn in listing[1] for i in fn["sass-instructions"] if "source-line" in i}
    assert lines and lines <= {2, 3, 4}


def test_an_extern_c_host_function_is_blanked_whole(tmp_path, toolchain):
    # Rodinia's backprop: `extern "C"` on its own line before the host function that fails; blanking
    # the definition alone left `extern "C"` before nothing, and the device-only copy did not compile
    src = write(tmp_path, "c.cu", '__global__ void k(float* a) { a[threadIdx.x] = 1.f; }\n'
                                  'extern "C" { void other() { cudaThreadSynchronize(); } }\n'
                                  'extern "C"\nvoid run(float* a)\n{\n  k<<<1, 32>>>(a);\n  cudaThreadSynchronize();\n}\n')
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    assert {(m.line, "cudaThreadSynchronize" in m.message) for m in r.errors} == {(2, True), (7, True)}
    assert r.success and r.device_only and [k.name for k in r.resources] == ["_Z1kPf"]


def test_missing_host_header_falls_back(tmp_path, toolchain):
    src = write(tmp_path, "m.cu", "#include <not_installed_host_lib.h>\n__global__ void k(int *a) { a[0] = 1; }\n"
                                  "int main() { return host_lib_init(); }\n")
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    assert r.errors[0].line == 1 and "No such file" in r.errors[0].message
    assert r.success and r.device_only


def test_kernel_error_gets_no_fallback(tmp_path, toolchain):
    src = write(tmp_path, "k.cu", HOST_FAILS.replace("a[threadIdx.x] *= s;", "a[threadIdx.x] *= t;"))
    r = compile_cuda(src, toolchain=toolchain, workdir=tmp_path / "w")
    assert not r.success and not r.device_only and r.cubin is None
    assert {m.line for m in r.errors} == {3, 10}


def test_blanking_keeps_lines_and_device_functions():
    src = HOST_FAILS.encode() + b"namespace n { __host__ __device__ int hd() { return 1; } int h() { return 2; } }\n"
    out = blank_spans(src, host_function_spans(src))
    assert out.count(b"\n") == src.count(b"\n") and len(out) == len(src)
    assert b"__global__ void scale" in out and b"hd()" in out
    assert b"main" not in out and b"int h()" not in out


@pytest.mark.parametrize("content", [b"", b"\x00\x01\xff\xfe garbage \x80\x81\n\x0c\x1c\x85" * 20,
                                     "// caf\u00e9 \u00e9\n__global__ void k() {}\n".encode("latin-1")])
def test_bad_input_never_raises(tmp_path, toolchain, content):
    r = compile_cuda(write(tmp_path, "x.cu", content), toolchain=toolchain, workdir=tmp_path / "w")
    if content == b"":
        assert r.success and r.resources == () and r.messages == ()
    if content.startswith(b"\x00"):
        assert not r.success and r.errors and all(m.line is None or m.line >= 1 for m in r.messages)


def test_no_kernels_is_success_without_resources(tmp_path, toolchain):
    r = compile_cuda(write(tmp_path, "h.cu", "int twice(int x) { return 2 * x; }\n"), toolchain=toolchain,
                     workdir=tmp_path / "w")
    assert r.success and r.resources == () and r.messages == ()


@pytest.mark.parametrize("arch,why", [("sm_13", "cannot compile for sm_13"), ("sm90", "not a GPU architecture"),
                                      ("compute_90", "not a GPU architecture")])
def test_unknown_arch_is_refused_before_nvcc(tmp_path, toolchain, arch, why):
    with pytest.raises(CompileSetupError, match=why):
        compile_cuda(write(tmp_path, "k.cu", KERNELS), arch=arch, toolchain=toolchain, workdir=tmp_path / "w")


def test_missing_source_is_a_setup_error(tmp_path, toolchain):
    with pytest.raises(CompileSetupError, match="Cannot read"):
        compile_cuda(tmp_path / "absent.cu", toolchain=toolchain)


# Four kernels of 1200 dependent statements: about 5 s in cicc/ptxas with CUDA 13.0 and 13.5.
SLOW = "\n".join("__global__ void k%d(float *a) { float x = a[threadIdx.x];" % k
                 + "".join(f" x = __sinf(x * a[{i}]) + x;" for i in range(1200)) + " a[threadIdx.x] = x; }"
                 for k in range(4)) + "\n"


def processes_mentioning(text: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text.encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def test_cancel_kills_the_whole_nvcc_tree(tmp_path, toolchain):
    src = write(tmp_path, "slow.cu", SLOW)
    token = CancelToken()
    outcome: list[BaseException | object] = []

    def work() -> None:
        try:
            outcome.append(compile_cuda(src, toolchain=toolchain, cancel=token, workdir=tmp_path / "w"))
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            outcome.append(e)

    t = threading.Thread(target=work)
    t.start()
    deadline = time.monotonic() + 5
    while not processes_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # let nvcc fork cicc/ptxas
    token.cancel()
    t.join(timeout=10)
    assert not t.is_alive()
    assert isinstance(outcome[0], Cancelled)
    # stopped, not waited for: nvcc never got to write the cubin (an uncancelled run does, in ~5 s)
    assert not list((tmp_path / "w").rglob("*.cubin"))
    time.sleep(0.1)
    assert processes_mentioning(str(tmp_path)) == []


def test_a_timeout_is_an_error_of_the_setup_not_a_result(tmp_path, toolchain):
    # a compile that did not finish says nothing about the file: no result a cache could keep (issue #30)
    with pytest.raises(CompileSetupError, match="did not finish within 0.5 s"):
        compile_cuda(write(tmp_path, "slow.cu", SLOW), toolchain=toolchain, timeout=0.5, workdir=tmp_path / "w")
    assert processes_mentioning(str(tmp_path)) == []
