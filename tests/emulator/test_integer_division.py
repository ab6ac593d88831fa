"""Executed integer division (lanes.py): a loop's trips from `n / chunk` of the launch's values,
for quotients the float reciprocal alone would get wrong by one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate_detailed
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNEL = Path(__file__).parent / "kernels" / "integer_division.cu"


@pytest.mark.parametrize("n, chunk", [(65536, 256), (1000, 7), (4099, 3), (1 << 30, 3)])
def test_the_loop_runs_the_quotient_of_its_arguments(toolchain, n, chunk):
    prog = build_example(KERNEL, toolchain)
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    opts = AnalysisOptions(launch_hints={"per_chunk": {"grid": 1, "block": 32, "values": {"n": n, "chunk": chunk}}})
    e = emulate_detailed(AnalysisContext.of(arch, cat.default_device(arch), opts, program=prog), prog.kernels[0])
    steps = n // chunk
    # ptxas unrolls the loop (by 16, then 4, then a remainder loop); the main loop's trips are the
    # quotient's (folded from the source, and the walk's executed condition, which replaces a
    # folded count it disagrees with, must agree: a wrong IMAD.HI made it 2 for 65536 / 256)
    trips = [a for a in e.profile.provenance.assumptions if a.name.startswith("trip_count@")]
    unroll = {a: int(m.group(1)) if (m := re.search(r"(\d+) per SASS iteration", a.detail)) else 1 for a in trips}
    main = max(trips, key=lambda a: unroll[a])
    assert int(main.value) == steps // unroll[main], (main.value, main.detail[:120])
