"""The source model sees what nvcc compiles (issue 20 item 3): conditional blocks resolved with the
compile's predefined macros, kernels as the device pass reads them and launches as the host pass
does. Real nvcc compiles for the end-to-end cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.frontend.conditional import compile_passes, resolved
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.frontend.source import parse_source

HERE = Path(__file__).parent
CONDITIONAL = HERE / "conditional.cu"
HAXPY = HERE.parent / "data" / "real" / "code-samples" / "haxpy.cu"  # #if __CUDA_ARCH__ >= 530 in the kernel

SNIPPET = b"""#define LOCAL 2
#if LOCAL > 1 && defined(__CUDACC__)
int local_two;
#elif FROM_A_HEADER
int never;
#else
int not_either;
#endif
#ifdef FROM_A_HEADER
int perhaps;
#else
int perhaps_not;
#endif
/* a directive in a comment is text
#if 0
*/
#ifndef __CUDA_ARCH__
int host_\xc3\xa9;
#elif __CUDA_ARCH__ >= 900 && !defined(OFF)
int hopper;
#else
int older;
#endif
#undef LOCAL
#if LOCAL
int after_undef;
#endif
"""


def _kept(text: bytes) -> list[str]:
    return [line.strip().decode() for line in text.splitlines() if line.strip()]


def test_resolution_keeps_every_position_and_decides_only_what_is_known():
    passes = compile_passes(["nvcc", "-c", "-UOFF", "-Xcompiler", "-DOFF"], "sm_90", "13.5.37")
    device, host = resolved(SNIPPET, passes)
    for out in (host, device):
        assert len(out) == len(SNIPPET) and out.count(b"\n") == SNIPPET.count(b"\n")
    # decided chains lose their directives; the one on a name only a header could define stays whole
    assert _kept(host) == ["#define LOCAL 2", "int local_two;", "#ifdef FROM_A_HEADER", "int perhaps;", "#else",
                           "int perhaps_not;", "#endif", "/* a directive in a comment is text", "#if 0", "*/",
                           "int host_\u00e9;", "#undef LOCAL"]
    assert "int hopper;" in _kept(device) and "int older;" not in _kept(device)
    # -D on the nvcc line reaches both passes; -U undefines; a host compiler's -D does not count
    on = compile_passes(["nvcc", "-DOFF", "--define-macro", "FROM_A_HEADER=1"], "sm_90", None)
    on_device = _kept(resolved(SNIPPET, on)[0])
    assert "int older;" in on_device and "int perhaps;" in on_device
    assert "int perhaps_not;" not in on_device
    assert "int hopper;" in _kept(resolved(SNIPPET, compile_passes(["nvcc", "-DOFF", "-UOFF"], "sm_90", None))[0])


def test_a_kernel_whose_loop_header_differs_by_arch_is_seen_with_its_launch():
    text = CONDITIONAL.read_text()
    # every branch read at once, the braces do not balance: the kernel and its launch vanish
    assert parse_source(text).kernels == ()
    hopper = parse_source(text, compile_passes(["nvcc"], "sm_90", "13.5.37"))
    assert [k.name for k in hopper.kernels] == ["repeat_axpy"]
    assert [loop.span.first_line for loop in hopper.loops_in("repeat_axpy")] == [25]
    assert hopper.constant("REPEAT") == 40
    (site,) = hopper.launch_sites
    assert (site.kernel, site.block.value) == ("repeat_axpy", 128)
    turing = parse_source(text, compile_passes(["nvcc", "-DWIDE_BLOCKS"], "sm_75", "13.5.37"))
    assert [loop.span.first_line for loop in turing.loops_in("repeat_axpy")] == [27]
    assert turing.constant("REPEAT") == 3  # the device pass's value; the host pass reads 40
    assert turing.launch_sites[0].block.value == 1024


def test_a_real_kernels_arch_specific_body_is_the_one_compiled():
    text = HAXPY.read_text()
    assert [loop.span.first_line for loop in parse_source(text).loops_in("haxpy")] == [59, 67]
    assert [loop.span.first_line for loop in parse_source(text, compile_passes([], "sm_90", None)).loops_in("haxpy")] \
        == [59]
    assert [loop.span.first_line for loop in parse_source(text, compile_passes([], "sm_52", None)).loops_in("haxpy")] \
        == [67]


@pytest.mark.parametrize("flags, block", [((), 128), (("-DWIDE_BLOCKS",), 1024)])
def test_the_analysis_models_the_launch_the_flags_select(toolchain, flags, block):
    result = analyze(CONDITIONAL, AnalysisOptions(flags=flags), toolchain=toolchain, depth="quick")
    (kernel,) = result.kernels
    assert kernel.launch.block == (block, 1, 1)
    assert kernel.launch.grid == ((1 << 22) // block, 1, 1)
    assert {a.name: a.source for a in kernel.assumptions}["block"] == "launch_site"
    hottest = max(kernel.lines, key=lambda line: line.share)
    assert hottest.line == 29  # v = a * x[i] + v, in the loop the device pass compiled
