"""The roofline command on real kernels with integer work only, memory traffic only, and floating
point (#17 item 4): each is placed against the ceiling that counts its work, or says why it cannot be."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from lsprotocol import types

DATA = Path(__file__).resolve().parents[1] / "data"
SVG = "{http://www.w3.org/2000/svg}"


async def _roofline(s, name: str) -> dict:
    return await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="kernelscope.roofline", arguments=[s.uri(name)]))


def _by_class(svg: str, cls: str) -> list[ET.Element]:
    return [el for el in ET.fromstring(svg).iter() if el.get("class") == cls]


async def test_integer_memory_only_and_floating_point_kernels_each_get_their_place(lsp, workspace):
    for f in (DATA / "roofline" / "cuda-samples").glob("*"):
        shutil.copy(f, workspace / f.name)
    shutil.copy(DATA / "real" / "code-samples" / "transpose.cu", workspace / "transpose.cu")
    common = DATA / "real" / "cuda-samples" / "Common"
    async with lsp({"analysis": {"flags": [f"-I{common}"]}}) as s:
        await s.open("bitonicSort.cu")
        roof = await _roofline(s, "bitonicSort.cu")
        assert {k["precision"] for k in roof["kernels"]} == {"int32"} and len(roof["kernels"]) == 4
        assert all(k["bound"] in ("memory", "compute", "latency") and k["fraction"] > 0 for k in roof["kernels"])
        points = _by_class(roof["svg"], "kernel-point")
        assert {p.get("data-kernel").split("(")[0] for p in points} == {k["name"].split("(")[0] for k in roof["kernels"]}
        assert all("INT32 op/B" in "".join(p.itertext()) for p in points)  # the tooltip says what is counted

        await s.open("transpose.cu")
        roof = await _roofline(s, "transpose.cu")
        assert len(roof["kernels"]) == 5 and {k["precision"] for k in roof["kernels"]} == {"none"}
        assert not _by_class(roof["svg"], "kernel-point")
        bars = {b.get("data-kernel").split("(")[0]: b for b in _by_class(roof["svg"], "bandwidth-bar")}
        assert set(bars) == {"copy", "copySharedMem", "transposeNaive", "transposeCoalesced", "transposeNoBankConflicts"}
        for k in roof["kernels"]:  # each bar is the kernel's binding level at its utilisation
            bar = bars[k["name"].split("(")[0]]
            assert bar.get("data-level") == k["bindingLevel"]
            assert abs(float(bar.get("data-fraction")) - k["fraction"]) < 1e-3

        await s.open("saxpy.cu")
        roof = await _roofline(s, "saxpy.cu")
        # the fixture's double literals (`2.5 * a`, `* 0.5 + 1.0`) make both kernels' work FP64
        assert {k["name"].split("(")[0]: k["precision"] for k in roof["kernels"]} == {"saxpy": "fp64", "scale": "fp64"}
        assert not _by_class(roof["svg"], "bandwidth-bar")
        tips = ["".join(p.itertext()) for p in _by_class(roof["svg"], "kernel-point")]
        assert tips and all("FP64 op/B" in t for t in tips)
