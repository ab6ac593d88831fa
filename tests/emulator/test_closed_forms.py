"""SAAKE §3 on synthetic streams: the closed forms, monotonicity, determinism, loop sampling.

P = phases (dependent steps per chain), C = concurrency = warps × independent chains (WLP × ILP),
L = latency, G = gap of the one resource used (fp32 here). One scheduler issues ≤ 1 per cycle,
so G ≥ 1 keeps the issue slot from being the bottleneck.
"""

from __future__ import annotations

import pytest

from kernelscope.analysis.profile import StallReason
from kernelscope.analysis.emulator.decode import R

from synthetic import loop_kernel, machine, phases, run


def closed_form(L: float, G: float, P: int, C: int) -> float:
    if L > C * G:  # latency-limited
        return L * P + (C - 1) * G
    return L + (C * P - 1) * G  # throughput-limited


LATENCY_LIMITED = [(20, 1, 10, 4, 2), (100, 20, 5, 3, 1), (30, 4, 12, 2, 3), (64, 2, 8, 4, 4)]
THROUGHPUT_LIMITED = [(20, 2, 10, 8, 2), (24, 3, 7, 8, 1), (24, 3, 7, 2, 4), (8, 4, 20, 4, 1)]


@pytest.mark.parametrize("policy", ["gto", "lrr"])
@pytest.mark.parametrize("L,G,P,W,ilp", LATENCY_LIMITED)
def test_latency_limited_closed_form(policy, L, G, P, W, ilp):
    C = W * ilp
    assert L > C * G
    r, _, _ = run(phases(P, ilp), machine(L, G), W, policy=policy)
    # +1: the last EXIT issues one cycle after the last result is ready
    assert abs(r.emulated_cycles - closed_form(L, G, P, C)) <= 2


@pytest.mark.parametrize("L,G,P,W,ilp", THROUGHPUT_LIMITED)
def test_throughput_limited_closed_form(L, G, P, W, ilp):
    C = W * ilp
    assert L <= C * G
    r, _, _ = run(phases(P, ilp), machine(L, G), W, policy="lrr")
    assert abs(r.emulated_cycles - closed_form(L, G, P, C)) <= 2


@pytest.mark.parametrize("L,G,P,W,ilp", THROUGHPUT_LIMITED)
def test_gto_is_never_faster_than_the_closed_form(L, G, P, W, ilp):
    # GTO runs the oldest warps ahead; the last ones then run with less concurrency (a real effect).
    r, _, _ = run(phases(P, ilp), machine(L, G), W, policy="gto")
    assert r.emulated_cycles >= closed_form(L, G, P, W * ilp) - 1


@pytest.mark.parametrize("policy", ["lrr", "gto"])
def test_more_latency_is_never_faster(policy):
    stream = phases(12, 3)
    # GTO is monotone where every warp is latency-limited; in the throughput regime it can run
    # the oldest warps ahead and leave a latency-bound tail (a scheduling anomaly, not a bug)
    lats = (4, 8, 16, 24, 32, 48, 64, 96) if policy == "lrr" else (32, 48, 64, 96, 128)
    times = [run(stream, machine(L, 2), 4, policy=policy)[0].emulated_cycles for L in lats]
    assert times == sorted(times)


def test_more_gap_is_never_faster():
    stream = phases(12, 3)
    times = [run(stream, machine(16, G), 4, policy="lrr")[0].emulated_cycles for G in (1, 2, 3, 4, 6, 8)]
    assert times == sorted(times)


def test_more_warps_help_until_the_throughput_bound():
    L, G, P = 64, 2, 10
    stream = phases(P, 1)
    per_warp = []
    for W in (1, 2, 4, 8, 16, 32, 48):
        T = run(stream, machine(L, G), W, policy="lrr")[0].emulated_cycles
        per_warp.append(T / W)
        if W * G < L:  # latency-limited: more warps hide latency for free
            assert T <= L * P + W * G + 2
    assert all(a >= b - 1e-9 for a, b in zip(per_warp, per_warp[1:]))
    # beyond C·G ≥ L the time grows with the work: T/W approaches P·G
    assert per_warp[-1] == pytest.approx(P * G, rel=0.1)


def test_determinism():
    stream = loop_kernel(ilp=2, body_extra=3)
    a = run(stream, machine(12, 2), 8, trips=(50,))
    b = run(stream, machine(12, 2), 8, trips=(50,))
    assert a[0] == b[0]
    assert a[1].samples == b[1].samples


def test_back_edge_follows_the_trip_count():
    stream = loop_kernel(ilp=1)
    times = [run(stream, machine(20, 1), 2, trips=(P,))[0].emulated_cycles for P in (10, 20, 30)]
    assert times[2] - times[1] == pytest.approx(times[1] - times[0], abs=2)
    _, sampler, k = run(stream, machine(20, 1), 2, trips=(30,))
    fadd = next(s for s in range(len(k)) if k.instr[s].opcode == "FADD")
    assert sampler.executed[fadd] == 2 * 30


@pytest.mark.parametrize("policy,tol", [("lrr", 0.005), ("gto", 0.03)])
def test_loop_sampling_extrapolates(policy, tol):
    # GTO lets old warps run ahead, and their lead grows with every iteration: a few sampled
    # iterations see less of that skew, so its error is larger (docs/emulator.md)
    stream = loop_kernel(ilp=2, body_extra=4)
    full = run(stream, machine(24, 2), 16, trips=(1000,), policy=policy)
    sampled = run(stream, machine(24, 2), 16, trips=(1000,), sample=(8,), policy=policy)
    assert sampled[0].issues < full[0].issues / 50
    assert sampled[0].cycles == pytest.approx(full[0].cycles, rel=tol)
    assert sampled[1].total == pytest.approx(full[1].total, rel=tol)
    for s in range(len(sampled[2])):
        assert sampled[1].executed[s] == pytest.approx(full[1].executed[s], rel=0.01, abs=1)


def test_stall_reasons_integrate_to_warp_cycles():
    stream = phases(10, 1)
    r, sampler, k = run(stream, machine(40, 1), 4)
    # every resident warp-cycle is one sample: selected + stalls = Σ warp lifetimes
    assert sampler.total <= 4 * r.emulated_cycles
    wait = sum(row[R[StallReason.wait]] for row in sampler.samples)
    selected = sum(row[R[StallReason.selected]] for row in sampler.samples)
    assert selected == 4 * 11
    assert wait > selected  # a dependent FADD chain with L = 40 mostly waits on fixed latency
