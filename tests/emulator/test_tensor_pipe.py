"""The tensor pipe's rate (issue 33) on real nvcc output: an MMA costs its FLOP at the arch's rate,
an FP32 accumulator halves it on GeForce boards only, and sm_120's rate is the full 1024 FLOP/clk/SM
(emulator/units.py `pipe_units`; docs/arch-specs.md, "Tensor rate of GeForce vs professional boards")."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate_detailed
from kernelscope.analysis.emulator.limits import limit_violations
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.machine.roofline import roofline_model
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNELS = Path(__file__).parent / "kernels" / "mma_rate.cu"
ITERS = 2048


def _rates(toolchain, device: str) -> dict[str, float]:
    """Modeled tensor FLOP per clock per SM of each probe, on `device`, in two full waves; each
    profile within the device's physical limits (its tensor roof included)."""
    cat = load_arch_specs()
    ceilings = roofline_model(cat, cat.device(device))
    dev = cat.device(device)
    arch = cat.arch(dev.arch)
    prog = build_example(KERNELS, toolchain, arch=arch.name)
    out = {}
    for fn in prog.kernels:
        name = fn.name.split("(")[0]
        opts = AnalysisOptions(launch_hints={name: {"grid": 8 * dev.sm_count, "block": 256,
                                                    "values": {"iters": ITERS}}})
        p = emulate_detailed(AnalysisContext.of(arch, dev, opts, program=prog), fn).profile
        assert limit_violations(p, ceilings) == ()
        out[name] = p.flops["tensor"] / p.duration_s / dev.sm_count / dev.clock_hz
    return out


@pytest.mark.parametrize("device, full, fp32_acc", [
    ("A100 SXM4 40GB", 2048, 2048),           # data center: one rate (A100 whitepaper, 312 TFLOPS)
    ("RTX 3090", 1024, 512),                   # GeForce: 142 TFLOPS with FP16 accumulate, 71 with FP32 (GA102 wp)
    ("RTX PRO 6000 Blackwell Max-Q", 1024, 1024),  # workstation: FP32 accumulate at full rate (measured)
    ("RTX 5090", 1024, 512),                   # GeForce: 419 and 209.5 TFLOPS (RTX Blackwell wp)
])
def test_mma_runs_at_the_boards_rate_for_its_accumulator(toolchain, device, full, fp32_acc):
    r = _rates(toolchain, device)
    # the probes keep the pipe busy but pay their loop's overhead and the launch: within 20 % below
    assert 0.8 * full <= r["mma_rate_f16acc"] <= full, r
    assert 0.8 * fp32_acc <= r["mma_rate"] <= fp32_acc, r


def test_a_smaller_mma_costs_its_share_of_the_pipe(toolchain):
    """m16n8k8 (HMMA.1688, Turing's native shape) is half the FLOP of m16n8k16: it takes half the
    pipe time, so both reach the same FLOP rate (T4's 65 TFLOPS peak is HMMA.1688's)."""
    r = _rates(toolchain, "A100 SXM4 40GB")
    assert r["mma_rate_k8"] == pytest.approx(r["mma_rate"], rel=0.1), r


def test_sm120_uniform_constant_loads_are_constant_loads(toolchain):
    """sm_100/sm_120 load kernel arguments into uniform registers with LDCU where sm_90 writes ULDC:
    it was an unknown opcode (one integer-pipe cycle, one register, no scoreboard)."""
    from kernelscope.analysis.frontend import isa

    prog = build_example(KERNELS, toolchain, arch="sm_120")
    ldcu = [i for fn in prog.kernels for i in fn.sass.instructions if i.opcode == "LDCU"]
    assert ldcu
    for i in ldcu:
        info = isa.opcode_info(i.opcode)
        assert info.klass is isa.InstrClass.CONSTANT and isa.is_variable_latency(i)
        assert len(i.defs) == max(1, isa.access_bytes(i) // 4), (i.modifiers, i.defs)
