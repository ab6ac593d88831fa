"""Estimators against hand-computed values."""

from __future__ import annotations

import pytest

from kernelscope.analysis.advisor import estimators as est


def test_gpa_eq2_stall_elimination():
    e = est.stall_elimination(total=1000, matched=150)
    assert e.speedup == pytest.approx(1000 / 850)
    assert "Eq. 2" in e.formula and e.inputs == {"T": 1000, "M": 150}
    assert est.stall_elimination(1000, 200, fraction=0.5).speedup == pytest.approx(1000 / 900)
    assert est.stall_elimination(100, 100).speedup == est.MAX_SPEEDUP  # finite even when M = T


def test_gpa_eq4_latency_hiding_is_bounded_by_active_samples():
    # T = A + L = 400 + 600; M_L = 500 > A -> T/(T−A) = 1000/600
    assert est.latency_hiding(1000, 500, 400).speedup == pytest.approx(1000 / 600)
    # M_L < A -> T/(T−M_L)
    assert est.latency_hiding(1000, 100, 400).speedup == pytest.approx(1000 / 900)


@pytest.mark.parametrize("a,l,m", [(100, 900, 900), (500, 500, 500), (900, 100, 100), (300, 700, 250)])
def test_theorem_v1_upper_bound_two(a, l, m):
    assert est.latency_hiding(a + l, m, a).speedup <= 2.0 + 1e-12


def test_gpa_eq5_scope():
    e = est.latency_hiding(1000, 300, 120, scope="loop at line 30")
    assert e.speedup == pytest.approx(1000 / 880) and "Eq. 5" in e.formula


def test_gpa_eq6_to_10_parallel():
    # W = 8 -> 4 warps per scheduler, R_I = 0.2
    i_old = 1 - 0.8 ** 8
    i_new = 1 - 0.8 ** 4
    e = est.parallel(8, 4, 0.2)
    assert e.inputs["C_W"] == pytest.approx(0.5)
    assert e.inputs["C_I"] == pytest.approx(i_new / i_old)
    assert e.speedup == pytest.approx(2 * i_new / i_old)  # (1/C_W)·C_I
    # thread increase: f = C_W leaves the issue-rate change: 1 warp -> 4 warps at R_I = 0.25
    t = est.parallel(1, 4, 0.25, factor=4)
    assert t.speedup == pytest.approx((1 - 0.75 ** 4) / 0.25)


def test_starlight_eq2_to_4():
    assert est.line_runtime_share(30, 70, 1000) == pytest.approx(0.1)
    assert est.line_speedup(1000, 70).speedup == pytest.approx(1000 / 930)
    assert est.new_performance(1.25, 8e12) == pytest.approx(1e13)


def test_block_balance_and_what_if():
    assert est.balanced_blocks(16, 132).speedup == pytest.approx(132 / 16)
    assert est.balanced_blocks(264, 132).speedup == pytest.approx(1.0)
    assert est.modeled_ratio(2e-3, 1e-3, "block 256").speedup == pytest.approx(2.0)
