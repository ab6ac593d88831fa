"""Roofline ceilings against hand computation from the specs; classification; the SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.machine.roofline import (LATENCY_FRACTION, MEMORY_ONLY, TrajectoryPoint, dominant_precision,
                                           kernel_roofline, load_empirical, roofline_model, trajectory_points)
from kernelscope.analysis.reports.chart import roofline_svg

from .sassfrag import profile

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def h100():
    cat = load_arch_specs()
    dev = cat.device("H100 SXM")
    return cat, dev, roofline_model(cat, dev)


def test_ceilings_by_hand(h100):
    cat, dev, model = h100
    arch = cat.arch(dev.arch)
    clock = dev.boost_clock_mhz * 1e6
    # FP32: FMA results per clock per SM × 2 FLOP × SMs × clock (Starlight §4.2's derivation)
    fp32 = arch.instructions["fp32"].rate_per_sm * 2 * dev.sm_count * clock
    assert model.peak("fp32") == pytest.approx(dev.fp32_tflops * 1e12 if dev.fp32_tflops else fp32)
    assert model.bandwidth("dram") == pytest.approx(dev.dram_bandwidth_gbs * 1e9)
    assert model.peak("tensor_fp16") == pytest.approx(dev.tensor_fp16_dense_tflops * 1e12)
    # shared/L1: 128 B per clock per SM unless measured
    assert model.bandwidth("shared") == pytest.approx(dev.shared_bandwidth_gbs * 1e9 if dev.shared_bandwidth_gbs
                                                      else 128 * dev.sm_count * clock)
    assert model.ridge("fp32", "dram") == pytest.approx(model.peak("fp32") / model.bandwidth("dram"))
    assert {c.name for c in model.compute} >= {"fp64", "fp32", "fp16", "int32", "tensor_fp16"}


def test_empirical_ceilings_replace_specs(h100, tmp_path):
    cat, dev, _ = h100
    f = tmp_path / "ceilings.json"
    f.write_text('{"compute": {"fp32": 51000}, "memory": {"dram": 2900, "l2": 7000}}')
    model = roofline_model(cat, dev, load_empirical(f))
    assert model.peak("fp32") == pytest.approx(51e12)
    assert model.bandwidth("dram") == pytest.approx(2.9e12) and model.bandwidth("l2") == pytest.approx(7e12)
    assert next(c for c in model.memory if c.name == "dram").empirical


def test_points_and_bound(h100):
    _, _, model = h100
    bw = model.bandwidth("dram")
    # A streaming kernel: 1 FLOP per 8 bytes, running at 80 % of DRAM bandwidth -> memory-bound.
    nbytes = 8e9
    dur = nbytes / (0.8 * bw)
    k = kernel_roofline(profile({}, flops={"fp32": 1e9}, bytes_={"dram": nbytes}, duration_s=dur), model)
    (p,) = k.points
    assert p.intensity == pytest.approx(1 / 8) and p.performance == pytest.approx(1e9 / dur)
    assert p.attainable == pytest.approx(bw / 8)
    assert k.bound == "memory" and k.fraction == pytest.approx(0.8)
    # Same traffic, 20× slower: far below both roofs.
    slow = kernel_roofline(profile({}, flops={"fp32": 1e9}, bytes_={"dram": nbytes}, duration_s=dur * 20), model)
    assert slow.bound == "latency" and slow.fraction < LATENCY_FRACTION
    # Compute-heavy: OI far right of the ridge, at 60 % of the FP32 peak.
    ops = 1e13
    hot = kernel_roofline(profile({}, flops={"fp32": ops}, bytes_={"dram": 1e8}, duration_s=ops / (0.6 * model.peak("fp32"))),
                          model)
    assert hot.bound == "compute" and hot.fraction == pytest.approx(0.6)


def test_svg_parses_and_has_ceilings_points_trajectory(h100):
    _, _, model = h100
    k = kernel_roofline(profile({}, flops={"fp32": 1e9}, bytes_={"dram": 8e9, "l2": 1.6e10}, duration_s=5e-3), model,
                        trajectory_points([("8 SMs", 8, {"fp32": 1e9}, {"dram": 8e9}, 4e-2),
                                           ("132 SMs", 132, {"fp32": 1e9}, {"dram": 8e9}, 5e-3)]))
    assert [t.label for t in k.trajectory] == ["8 SMs", "132 SMs"]
    svg = roofline_svg(model, [k], title="saxpy <float> on H100")
    root = ET.fromstring(svg)
    lines = root.iter(f"{SVG}line")
    classes = [(el.get("class"), el.get("data-level") or el.get("data-precision")) for el in lines]
    assert ("ceiling memory", "dram") in classes and ("ceiling compute", "fp32") in classes
    texts = " ".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))
    assert "DRAM" in texts and "FP32" in texts and "Operational intensity" in texts and "saxpy <float>" in texts
    points = [g for g in root.iter(f"{SVG}g") if g.get("class") == "kernel-point"]
    assert {g.get("data-level") for g in points} == {"dram", "l2"}
    assert any(el.get("class") == "trajectory" for el in root.iter(f"{SVG}polyline"))
    assert any(el.get("class") == "ridge" for el in root.iter(f"{SVG}circle"))


def test_floating_point_first_then_integer_then_bytes(h100):
    """The precision a point counts (#17 item 4): any floating-point work wins over integer ops, however
    many (every kernel computes indices); integer ops place a kernel without FP work on the INT32 roof;
    a kernel that counts no operation is memory-only."""
    assert dominant_precision({"int": 5e12, "fp32": 1e9}) == "fp32"
    assert dominant_precision({"int": 5e12, "fp64": 1e9, "fp32": 1e8}) == "fp64"
    assert dominant_precision({"int": 5e12}) == "int32"
    assert dominant_precision({"int": 0.0}) == dominant_precision({}) == MEMORY_ONLY
    _, _, model = h100
    k = kernel_roofline(profile({}, flops={"int": 4e9}, bytes_={"dram": 8e9}, duration_s=5e-3), model)
    (p,) = k.points
    assert k.precision == p.precision == "int32" and p.intensity == pytest.approx(0.5)
    assert p.attainable == pytest.approx(min(model.peak("int32"), model.bandwidth("dram") * 0.5))


def test_a_memory_only_kernel_is_placed_by_its_bytes(h100):
    """No operations: intensity 0 at every level it moves bytes at, its achieved bytes/s beside each
    level's bandwidth, and the bound from its best bandwidth utilisation."""
    _, _, model = h100
    bw = model.bandwidth("dram")
    k = kernel_roofline(profile({}, bytes_={"dram": 8e9, "l2": 8e9}, duration_s=8e9 / (0.7 * bw)), model)
    assert k.precision == MEMORY_ONLY and {p.level for p in k.points} == {"dram", "l2"}
    dram = next(p for p in k.points if p.level == "dram")
    assert (dram.intensity, dram.performance, dram.attainable) == (0.0, 0.0, 0.0)
    assert dram.bandwidth == pytest.approx(0.7 * bw) and dram.peak_bandwidth == bw
    assert k.bound == "memory" and k.fraction == pytest.approx(0.7) and k.binding_level == "dram"
    svg = ET.fromstring(roofline_svg(model, [k]))
    assert not [g for g in svg.iter(f"{SVG}g") if g.get("class") == "kernel-point"]
    (bar,) = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "bandwidth-bar"]
    assert bar.get("data-level") == "dram" and float(bar.get("data-fraction")) == pytest.approx(0.7, abs=1e-4)
    assert "70 % of 3.35 TB/s" in "".join(bar.itertext())
    assert float(svg.get("height")) > 440  # the panel is below the plot, which keeps its size
    assert trajectory_points([("8 SMs", 8, {}, {"dram": 8e9}, 1e-2)]) == ()


def test_equal_roofs_share_one_label(h100):
    """On the H100 the INT32 and FP64 peaks are both 33.5 TOP/s: one line, one label, not two on top of each other."""
    _, _, model = h100
    assert model.peak("int32") == pytest.approx(model.peak("fp64"))
    k = kernel_roofline(profile({}, flops={"int": 4e9}, bytes_={"dram": 8e9}, duration_s=5e-3), model)
    root = ET.fromstring(roofline_svg(model, [k]))
    labels = ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if t.get("class") == "ceiling-label"]
    assert sum("INT32" in t for t in labels) == 1 and any(t.startswith("FP64 / INT32") for t in labels)
    names = ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if t.get("class") == "kernel-label"]
    assert names == ["frag (INT32)"]


def test_trajectory_point_model():
    t = TrajectoryPoint(label="x", concurrency=1, intensity=0.1, performance=1e9)
    assert t.performance == 1e9
