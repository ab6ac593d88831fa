"""Launches read as the program runs without command-line arguments, and kernels launched through
an array of pointers (issue 31: sizes from argv, flag-dependent dims, arrays of kernel pointers).

tests/inputs/command_line/program.cu takes each size from its command line in one of the shapes
seen on public programs (`argc > 1 ? atoi(argv[1]) : N`, a value changed under a flag check, a
`&x` handed to a getter, a get_argval-style helper returning its default) and launches four
kernels through `kernels[k]<<<shapes[axis][k], ...>>>` after a switch on the axis, and sweeps one
kernel over block sizes (its first configuration is the one read, and the one capture keeps of
equally frequent configurations). It is compiled
by nvcc and analysed without capture; the launches must be the program's own, each labeled as
read without arguments where it is one, and equal to what launch capture records of the real run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.frontend.source import parse_source
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

PROGRAM = Path(__file__).resolve().parent / "command_line" / "program.cu"
SITE = "launch_site"
WITHOUT = "as the program runs without command-line arguments"

# kernel -> (grid, block, read without arguments), each read off program.cu by hand
EXPECTED = {
    "ternary_kernel": ("(4096, 1, 1)", "(256, 1, 1)", True),  # n = 1 << 20 when argc is 1
    "flag_kernel": ("(512, 1, 1)", "(128, 1, 1)", True),  # rows = 512 unless hasFlag(..., argv)
    "getter_kernel": ("(96, 1, 1)", "(64, 1, 1)", True),  # getInt(&blocks, ...) finds no flag
    "raw_kernel": ("(128, 1, 1)", "(32, 1, 1)", True),  # valueOr<int>(..., 4096) / 32
    # kernels[k] after `case 0:`; grid shapes[0][k], block shapes[1][k], set in setShapes()
    "row_kernel": ("(64, 1, 1)", "(32, 2, 1)", False),
    "column_kernel": ("(128, 1, 1)", "(16, 8, 1)", False),
    # `case 1:`, which main() never takes: the launch the program would make on that axis
    "plane_kernel": ("(32, 2, 1)", "(64, 1, 1)", False),
    "helper_kernel": ("(16, 8, 1)", "(128, 1, 1)", False),
    # sweep(x, 64, 256): threads 64, 128, 256, one launch each; the first is 16 blocks of 64
    "sweep_kernel": ("(16, 1, 1)", "(64, 1, 1)", True),
}
FIRST = "with each loop around it at its first value"


@pytest.fixture(scope="module")
def kernels(toolchain):
    result = analyze(PROGRAM, AnalysisOptions(), toolchain=toolchain, depth="quick")
    assert result.compiled
    return {k.name.split("(")[0].removeprefix("void "): k for k in result.kernels}


def _launch(k) -> dict[str, tuple[str, str]]:
    return {a.name: (a.value, a.source) for a in k.assumptions if a.name in ("grid", "block")}


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_the_launch_is_the_programs_own(kernels, kernel):
    grid, block, without = EXPECTED[kernel]
    k = kernels[kernel]
    assert _launch(k) == {"grid": (grid, SITE), "block": (block, SITE)}
    detail = next(a.detail for a in k.assumptions if a.name == "grid")
    assert (WITHOUT in detail) == without, detail
    assert (FIRST in detail) == (kernel == "sweep_kernel"), detail


def test_capture_of_the_real_run_agrees(toolchain, kernels):
    """What launch capture records when the program runs is what the static reading gave, for
    every kernel the run launched (plane_kernel and helper_kernel are never launched); the sweep's
    three configurations were each captured once."""
    outcome = with_capture(PROGRAM, AnalysisOptions())
    assert outcome.capture is not None, outcome.message
    captured = {name: c for name, c in outcome.options.captured.items() if "(" not in name}
    assert set(captured) == set(EXPECTED) - {"plane_kernel", "helper_kernel"}
    for name, c in captured.items():
        grid, block, _ = EXPECTED[name]
        assert (str(c.grid), str(c.block)) == (grid, block), name
    assert (captured["sweep_kernel"].configurations, captured["sweep_kernel"].launches) == (3, 3)


def test_what_the_command_line_alone_decides_is_not_read():
    """A size that is argc itself, or argv read with no default beside it, is no default the
    source gives: it stays unfolded (and the model's default then says so)."""
    src = (
        "#include <cstdlib>\n"
        "__global__ void k(float *x) {}\n"
        "int main(int argc, char **argv) {\n"
        "  int q = argc;\n"
        "  int m = atoi(argv[1]);\n"
        "  k<<<q, 32>>>(0);\n"
        "  k<<<m, 32>>>(0);\n"
        "  void (*p)(float *) = k;\n"
        "  p = k;\n"
        "  return 0;\n"
        "}\n"
    )
    first, second = parse_source(src).launch_sites
    assert first.grid.dims is None and second.grid.dims is None
    assert not first.without_arguments and not second.without_arguments


def test_file_scope_values_assigned_once_and_those_that_are_not():
    """A file-scope dim3 (or an element of an array of them) that host code assigns exactly once
    holds that value; one assigned twice, handed to a call (which may write it) or declared
    `extern` (another file may write it) does not fold."""
    src = (
        "__global__ void k(float *x) {}\n"
        "dim3 once, twice, handed, cells[2];\n"
        "extern dim3 elsewhere;\n"
        "void fill(dim3 *d);\n"
        "void setup() { once = dim3(8, 2); twice = dim3(4); twice = dim3(16); cells[1] = dim3(32); }\n"
        "void run() {\n"
        "  fill(&handed);\n"
        "  handed = dim3(64);\n"
        "  k<<<once, 32>>>(0);\n"
        "  k<<<twice, 32>>>(0);\n"
        "  k<<<handed, 32>>>(0);\n"
        "  k<<<cells[1], 32>>>(0);\n"
        "  k<<<cells[0], 32>>>(0);\n"
        "  k<<<elsewhere, 32>>>(0);\n"
        "}\n"
    )
    grids = [s.grid.dims for s in parse_source(src).launch_sites]
    assert grids == [(8, 2, 1), None, None, (32, 1, 1), None, None]


def test_a_kernel_pointer_the_source_does_not_pin_names_no_kernel():
    """A pointer stored under a condition that binds no name, or stored twice under the same
    names (which one a launch sees is the order of the run), launches no known kernel."""
    src = (
        "__global__ void a(float *x) {}\n"
        "__global__ void b(float *x) {}\n"
        "void run(int flag) {\n"
        "  void (*p[1])(float *);\n"
        "  if (flag > 2) p[0] = a;\n"
        "  p[0]<<<1, 32>>>(0);\n"
        "  void (*q)(float *);\n"
        "  q = a;\n"
        "  q = b;\n"
        "  q<<<2, 32>>>(0);\n"
        "}\n"
    )
    assert [s.kernel for s in parse_source(src).launch_sites] == ["p[0]", "q"]
