"""Coalescing advice only where the modeled traffic says so (issue 33): a scattered access whose
sectors L1 serves on the next trips is not worth coalescing; one that sends every lane's sector
to DRAM is. Real nvcc output, the real pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

KERNELS = Path(__file__).parents[1] / "emulator" / "kernels" / "cache_reuse.cu"


@pytest.fixture(scope="module")
def result():
    run = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", str(KERNELS), "--quick", "--json"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _coalescing(result, kernel: str) -> list[dict]:
    """The kernel's coalescing items: their own, and one merged into another optimizer's (one fix, one item)."""
    return [a for a in result["advice"] if "coalesced_access" in (a["optimizer"], *a.get("also", ()))
            and a["kernel_name"].startswith(kernel)]


def test_a_strided_gather_is_advised_to_coalesce(result):
    (item,) = _coalescing(result, "stride32")
    assert item["estimate"]["speedup"] > 1.2  # capped at 1.5 until re-modeled (advisor.md)


def test_runs_that_l1_serves_are_not_counted_as_traffic(result):
    # each lane reads 12 consecutive ints: 48 B apart across the warp (scattered), but the next
    # trips read the rest of each sector from L1, so what reaches L2 is what a coalesced read needs:
    # no coalescing item counts sectors past L1 here. What the scattered requests still cost is the
    # L1 data path, 12 wavefronts per request where one does (a global access's LSU cost, issue 33,
    # 1875342), and the LSU is this kernel's busier unit: an item may name that, as such. (Before
    # the LSU cost, no item; after it, the item was merged under vectorize_loads' name, which this
    # test's filter did not look at.)
    k = next(k for k in result["kernels"] if k["name"].startswith("sum_runs"))
    assert k["memory"]["levels"]["l1"]["hit_rate"] > 0.6
    for item in _coalescing(result, "sum_runs"):
        assert "sectors past L1" not in item["message"], item["message"]


def _memory_items(result, kernel: str) -> list[dict]:
    return [a for a in result["advice"] if a["kernel_name"].startswith(kernel) and
            {"coalesced_access", "memory_transaction_reduction"} & {a["optimizer"], *a.get("also", ())}]


def test_fewer_requests_that_move_no_fewer_bytes_are_bounded_by_the_dram_time(result):
    # sum_runs' 12 loads per thread together send past L1 the sectors a coalesced read would: coalescing
    # them or issuing fewer saves L1 wavefronts, not one DRAM byte, so no item may claim more than the
    # modeled DRAM time leaves (1/u_dram), before or after the cap for an estimate not re-modeled.
    u = next(k for k in result["profile"]["kernels"] if "sum_runs" in k["kernel"])["utilization"]["dram"]
    items = _memory_items(result, "sum_runs")
    assert items
    for item in items:
        inputs = item["estimate"]["inputs"]
        assert inputs.get("u_dram") == pytest.approx(u), item["estimate"]
        assert inputs.get("uncapped", item["estimate"]["speedup"]) <= 1 / u + 1e-6
    # stride32 sends each lane's sector to DRAM: coalescing it removes DRAM traffic, and is not so bounded
    for item in _memory_items(result, "stride32"):
        assert "u_dram" not in item["estimate"]["inputs"], item["estimate"]
