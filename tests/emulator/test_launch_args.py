"""Kernel arguments folded at the launch site reach the emulator's address analysis.

examples/strided_access.cu launches `strided_copy(dIn, dOut, n, stride)` with `stride` a
local of main (32). Folding it lets the analysis see that each lane reads its own 128-byte
line; compared with the same file at stride 1, the read moves ~4x the bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.profile import KernelProfile, StallReason

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "strided_access.cu"
READ = "out[i] = in[(size_t)i * stride];"
STRIDE = "const int stride = 32;"


def _profile(path: Path) -> KernelProfile:
    result = analyze(path, AnalysisOptions(), depth="quick")
    assert result.profile is not None, result.messages
    (kernel,) = result.profile.kernels
    return kernel


def _variant(directory: Path, name: str, stride_decl: str) -> Path:
    text = EXAMPLE.read_text()
    assert STRIDE in text
    path = directory / name
    path.write_text(text.replace(STRIDE, stride_decl))
    return path


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> dict[str, KernelProfile]:
    d = tmp_path_factory.mktemp("launch_args")
    return {
        "strided": _profile(EXAMPLE),
        "unit": _profile(_variant(d, "unit_stride.cu", "const int stride = 1;")),
        # read at run time: no fold, so the analysis must fall back to its documented default
        "runtime": _profile(_variant(d, "runtime_stride.cu", "const int stride = atoi(getenv(\"STRIDE\"));")),
    }


def _read_line() -> int:
    return next(i for i, line in enumerate(EXAMPLE.read_text().splitlines(), 1) if READ in line)


def test_strided_read_is_modeled_uncoalesced(profiles):
    strided, unit = profiles["strided"], profiles["unit"]
    assert strided.launch == unit.launch  # same grid, block and n: only the stride differs
    # 32 lanes x one 32-byte sector each, against 4 sectors per warp at stride 1 (SAAKE §4.4).
    for level in ("l2", "dram"):
        assert strided.bytes[level] > 3 * unit.bytes[level], level
    threads = strided.launch.blocks * strided.launch.threads_per_block
    assert strided.bytes["dram"] >= 32 * threads
    assert strided.duration_s > 2 * unit.duration_s

    line = next(s for s in strided.lines if s.line == _read_line())
    memory = line.samples.get(StallReason.long_scoreboard, 0.0) + line.samples.get(StallReason.lg_throttle, 0.0)
    assert memory > 0.5 * sum(line.samples.values())
    assert line.samples.get(StallReason.lg_throttle, 0.0) > 0  # the LSU queue backs up only when uncoalesced
    assert not any(a.name == "coalescing" for a in strided.provenance.assumptions)


def test_unknown_stride_falls_back_to_the_coalesced_default(profiles):
    runtime, unit = profiles["runtime"], profiles["unit"]
    assert any(a.name == "coalescing" and a.source == "default" for a in runtime.provenance.assumptions)
    assert runtime.bytes["dram"] == pytest.approx(unit.bytes["dram"], rel=0.05)


def test_folded_argument_is_a_launch_site_assumption(profiles):
    found = [a for a in profiles["strided"].provenance.assumptions if a.name == "stride"]
    assert [(a.value, a.source) for a in found] == [("32", "launch_site")]


TEMPLATE = Path(__file__).resolve().parents[1] / "inputs" / "template_launch.cu"


def test_template_kernel_is_matched_to_its_launch_site():
    # the demangled name is `void scale<128>(float*, int)`: the leading return type must not hide
    # the launch `scale<128><<<n / 128, 128>>>` (n = 1 << 20) from the kernel
    (kernel,) = _profile_of(TEMPLATE).kernels
    assert kernel.name.startswith("void scale<128>")
    assert (kernel.launch.grid, kernel.launch.block) == ((8192, 1, 1), (128, 1, 1))
    sources = {a.name: a.source for a in kernel.provenance.assumptions}
    assert sources.get("grid") == sources.get("block") == "launch_site"


def _profile_of(path: Path):
    result = analyze(path, AnalysisOptions(), depth="quick")
    assert result.profile is not None, result.messages
    return result.profile
