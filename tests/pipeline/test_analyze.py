"""`kernelscope analyze` end to end on the real examples, checked against independent reads of
ptxas's and nvdisasm's own output, plus the bad-input cases and exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.results import AnalysisResult
from kernelscope.analysis.reports.text import grid_fill

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.cu"))


def _ptxas_report(toolchain, source: Path, tmp: Path) -> dict[str, dict[str, int]]:
    """Resource usage as ptxas prints it, read by this test's own parser."""
    out = subprocess.run([str(toolchain.nvcc), "-arch=sm_90", "-cubin", "-lineinfo", "-Xptxas", "-v",
                          "-o", str(tmp / "ref.cubin"), str(source)], env=toolchain.env,
                         capture_output=True, text=True, check=True)
    report: dict[str, dict[str, int]] = {}
    current = None
    for line in (out.stdout + out.stderr).splitlines():
        if m := re.search(r"Function properties for (\S+)", line):
            current = report.setdefault(m.group(1), {})
        elif m := re.search(r"Compiling entry function '(\S+)'", line):
            current = report.setdefault(m.group(1), {})
        elif current is not None and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current is not None and (m := re.search(r"Used (\d+) registers", line)):
            current["registers"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            current["barriers"] = int(b.group(1)) if b else 0
            s = re.search(r"(\d+) bytes smem", line)
            current["smem"] = int(s.group(1)) if s else 0
    return report


def _nvdisasm_lines(toolchain, cubin: Path, source: Path) -> dict[str, dict[int, set[int]]]:
    """function -> line -> PCs, from nvdisasm's text listing, charging inlined code to its call
    site in the analysed file as kernelscope does."""
    text = subprocess.run([str(toolchain.nvdisasm), "-gi", "-c", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    result: dict[str, dict[int, set[int]]] = {}
    fn = None
    line = None
    for raw in text.splitlines():
        if m := re.match(r"^\.text\.(\S+):", raw.strip()):
            fn = m.group(1)
            line = None
        elif re.match(r"^\$\S+:$", raw.strip()):
            line = None  # a subroutine appended to the section: no line until nvdisasm prints one
        elif raw.strip().startswith("//## File"):
            locs = re.findall(r'"([^"]+)", line (\d+)', raw)
            mine = [int(ln) for f, ln in locs if Path(f).resolve() == source.resolve()]
            line = mine[0] if mine else None
        elif fn and (m := re.match(r"^\s*/\*([0-9a-f]{4,})\*/", raw)) and line is not None:
            result.setdefault(fn, {}).setdefault(line, set()).add(int(m.group(1), 16))
    return result


@pytest.fixture(scope="module")
def analysed():
    return {p.name: analyze(p, AnalysisOptions(emulate=False)) for p in EXAMPLES}


def test_every_example_is_present():
    names = {p.name for p in EXAMPLES}
    assert {"sgemm_naive.cu", "sgemm_tiled.cu", "stencil_double_const.cu", "reduction_divergent.cu",
            "local_array.cu", "noinline_call.cu", "strided_access.cu", "small_grid.cu"} <= names


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_resources_match_ptxas_exactly(example, analysed, toolchain, tmp_path):
    result = analysed[example.name]
    assert result.compiled and result.kernels
    expected = _ptxas_report(toolchain, example, tmp_path)
    for k in result.kernels:
        ref = expected[k.mangled]
        r = k.resources
        assert (r.registers, r.barriers, r.static_smem, r.stack_frame, r.spill_stores, r.spill_loads) == (
            ref["registers"], ref["barriers"], ref["smem"], ref["stack"], ref["spill_stores"], ref["spill_loads"])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_instructions_are_attributed_to_nvdisasm_lines(example, analysed, toolchain, tmp_path):
    result = analysed[example.name]
    subprocess.run([str(toolchain.nvcc), "-arch=sm_90", "-cubin", "-lineinfo", "-o", str(tmp_path / "k.cubin"),
                    str(example)], env=toolchain.env, check=True, capture_output=True)
    reference = _nvdisasm_lines(toolchain, tmp_path / "k.cubin", example)
    for k in result.kernels:
        ours = {lr.line: {int(s[2:6], 16) for s in lr.sass} for lr in k.lines}
        assert ours == reference[k.mangled], k.name


def test_appended_subroutines_belong_to_no_caller_line(analysed):
    """libdevice's pow/sqrt slow paths follow the kernel's EXIT without line records; they must not be
    charged to the kernel's closing brace."""
    stencil = analysed["stencil_double_const.cu"].kernels[0]
    text = (REPO / "examples" / "stencil_double_const.cu").read_text().splitlines()
    closing = max(i for i, t in enumerate(text, 1) if t.strip() == "}" and i <= stencil.end_line)
    brace = stencil.line_report(closing)
    assert brace is None or sum(brace.instruction_mix.values()) <= 2, brace


def test_facts_land_on_the_right_lines(analysed):
    text = (REPO / "examples" / "stencil_double_const.cu").read_text().splitlines()
    stencil = analysed["stencil_double_const.cu"].kernels[0]
    conv = [f for f in stencil.facts if f.kind == "fp64_conversion"]
    assert conv, stencil.facts
    for f in conv:
        assert f.cause and text[f.line - 1][f.column:f.end_column] == f.cause
    local = analysed["local_array.cu"].kernels[0]
    assert any(f.kind == "local_memory" for f in local.facts)
    noinline = analysed["noinline_call.cu"].kernels[0]
    call = next(f for f in noinline.facts if f.kind == "noinline_call")
    assert "smooth_step" in call.cause and "smooth_step(" in (REPO / "examples" / "noinline_call.cu").read_text().splitlines()[call.line - 1]


def _cli(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_cli_report_and_json(tmp_path):
    proc = _cli("analyze", str(REPO / "examples" / "sgemm_tiled.cu"))
    assert proc.returncode == 0, proc.stderr
    assert "sgemm_tiled" in proc.stdout and "registers" in proc.stdout and "occupancy" in proc.stdout.lower()
    proc = _cli("analyze", "--json", str(REPO / "examples" / "sgemm_tiled.cu"))
    assert proc.returncode == 0, proc.stderr
    result = AnalysisResult.model_validate_json(proc.stdout)
    assert result.kernels[0].name.startswith("sgemm_tiled")


def _no_traceback(proc):
    assert "Traceback" not in proc.stderr + proc.stdout


def test_syntax_error_exit_1_with_location(tmp_path):
    f = tmp_path / "bad.cu"
    f.write_text("__global__ void k(float* a) {\n  a[0] = 1.0f\n}\n")
    proc = _cli("analyze", str(f))
    _no_traceback(proc)
    assert proc.returncode == 1
    assert re.search(rf"{re.escape(str(f))}:3:\d+: error: ", proc.stderr) or re.search(
        rf"{re.escape(str(f))}:2:\d+: error: ", proc.stderr), proc.stderr


def test_error_in_header_points_at_include_line(tmp_path):
    (tmp_path / "helper.cuh").write_text("__device__ float twice(float x) { return x * 2.0f }\n")
    f = tmp_path / "main.cu"
    f.write_text('// uses a helper\n#include "helper.cuh"\n__global__ void k(float* a) { a[0] = twice(a[0]); }\n')
    proc = _cli("analyze", str(f))
    _no_traceback(proc)
    assert proc.returncode == 1
    assert f"{f}:2:" in proc.stderr, proc.stderr


def test_unknown_arch_is_a_usage_error(tmp_path):
    proc = _cli("analyze", "--arch", "sm_13", str(REPO / "examples" / "sgemm_naive.cu"))
    _no_traceback(proc)
    assert proc.returncode == 2 and "sm_13" in proc.stderr


def test_missing_toolchain_is_actionable(tmp_path):
    proc = _cli("analyze", "--nvcc", str(tmp_path / "nowhere" / "nvcc"), str(REPO / "examples" / "sgemm_naive.cu"))
    _no_traceback(proc)
    assert proc.returncode == 2
    assert "nvcc" in proc.stderr and "pip install" in proc.stderr


def test_empty_file_and_no_kernels(tmp_path):
    empty = tmp_path / "empty.cu"
    empty.write_text("")
    proc = _cli("analyze", str(empty))
    _no_traceback(proc)
    assert proc.returncode == 0 and "no kernels" in proc.stdout + proc.stderr
    host = tmp_path / "host.cu"
    host.write_text("#include <cstdio>\nint main() { std::printf(\"hi\\n\"); return 0; }\n")
    proc = _cli("analyze", "--json", str(host))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["kernels"] == []


def test_binary_garbage(tmp_path):
    f = tmp_path / "garbage.cu"
    f.write_bytes(bytes(range(256)) * 8)
    proc = _cli("analyze", str(f))
    _no_traceback(proc)
    assert proc.returncode == 1 and "error" in proc.stderr


def test_missing_file_and_bad_flags(tmp_path):
    proc = _cli("analyze", str(tmp_path / "absent.cu"))
    assert proc.returncode == 2 and "no such file" in proc.stderr
    proc = _cli("analyze", "--flags", "-O3 'unterminated", str(REPO / "examples" / "sgemm_naive.cu"))
    _no_traceback(proc)
    assert proc.returncode == 2


def test_host_failure_still_analyses_kernels(tmp_path):
    f = tmp_path / "legacy.cu"
    f.write_text("__global__ void scale(float* a, float s) { a[threadIdx.x] *= s; }\n"
                 "int main() {\n  float* d = 0;\n  scale<<<1, 32>>>(d, 2.0f);\n  cudaThreadSynchronize();\n  return 0;\n}\n")
    proc = _cli("analyze", "--json", str(f))
    _no_traceback(proc)
    result = AnalysisResult.model_validate_json(proc.stdout)
    assert result.device_only and result.kernels and result.kernels[0].name.startswith("scale")
    assert any(m.severity == "error" and m.line == 5 for m in result.messages)
    assert proc.returncode == 0


def test_json_schema_doc_is_current():
    from kernelscope.analysis.reports.json_schema import render_schema_markdown

    assert (REPO / "docs" / "json-schema.md").read_text() == render_schema_markdown(), \
        "regenerate: python -m kernelscope.analysis.reports.json_schema > docs/json-schema.md"


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    assert len(blocks) == 2, "the README has exactly two set-up commands"
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == blocks[1].strip()
    assert "kernelscope analyze examples/" in blocks[0]


def test_no_advice_repeats_itself(analysed):
    # One advice per optimizer, kernel and line set: ptxas rebasing one array's loads on several
    # registers once gave sgemm_naive two identical "Use vector loads" items on line 28.
    for name, result in analysed.items():
        keys = [(a.optimizer, a.kernel, tuple(a.lines)) for a in result.advice]
        assert len(keys) == len(set(keys)), (name, sorted(k for k in keys if keys.count(k) > 1))


def test_a_grid_smaller_than_one_wave_is_reported(analysed):
    # small_grid.cu launches 4 blocks: 100 % theoretical occupancy, yet 128 of 132 SMs idle.
    (k,) = analysed["small_grid.cu"].kernels
    assert k.occupancy.occupancy == 1.0 and k.occupancy.sm_count == 132
    assert k.occupancy.waves == pytest.approx(k.launch.blocks / (k.occupancy.active_blocks_per_sm * 132))
    assert grid_fill(k) == f"the grid's 4 blocks fill 4 of 132 SMs ({100 * k.occupancy.waves:.1f} % of one wave)"
    (big,) = analysed["sgemm_naive.cu"].kernels
    assert big.occupancy.waves > 1 and grid_fill(big).endswith("on 132 SMs")


def _chart(result: AnalysisResult) -> ET.Element:
    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.reports.chart import roofline_chart

    return ET.fromstring(roofline_chart(result, load_arch_specs()))


_SVG = "{http://www.w3.org/2000/svg}"


def test_a_memory_only_kernel_gets_its_bandwidth_instead_of_a_point():
    """strided_copy computes only its index and bounds check: no operations, so intensity 0, which a
    log axis cannot place; the chart gives its achieved DRAM bandwidth against the DRAM ceiling in a
    panel below the plot, and the JSON its points at intensity 0 (issue #17, item 4)."""
    result = analyze((REPO / "examples" / "strided_access.cu").resolve(), AnalysisOptions(), depth="quick")
    (rl,) = result.rooflines
    assert rl.precision == "none" and rl.bound == "memory" and rl.binding_level == "dram"
    assert rl.points and all(p.intensity == 0 and p.performance == 0 for p in rl.points)
    dram = next(p for p in rl.points if p.level == "dram")
    assert rl.fraction == pytest.approx(dram.bandwidth / dram.peak_bandwidth)
    root = _chart(result)
    assert not [g for g in root.iter(f"{_SVG}g") if g.get("class") == "kernel-point"]
    (bar,) = [g for g in root.iter(f"{_SVG}g") if g.get("class") == "bandwidth-bar"]
    assert bar.get("data-kernel").startswith("strided_copy") and bar.get("data-level") == "dram"
    assert f"{100 * rl.fraction:.0f} % of 3.35 TB/s" in "".join(bar.itertext())
    dumped = json.loads(result.model_dump_json())["rooflines"][0]
    assert dumped["precision"] == "none" and {"bandwidth", "peak_bandwidth"} <= set(dumped["points"][0])


_COMMON = REPO / "tests" / "data" / "real" / "cuda-samples" / "Common"


def test_integer_kernels_sit_against_the_int32_roof_and_fp_kernels_keep_theirs():
    """bitonicSort (cuda-samples) compares and swaps uint keys: its points are INT32 operations per
    byte against the INT32 ceiling; sgemm_naive's point stays where its FP32 FLOPs put it (its integer
    instructions are index arithmetic and loop control: bookkeeping, analysis/machine/integer_work.py)."""
    result = analyze(REPO / "tests" / "data" / "roofline" / "cuda-samples" / "bitonicSort.cu",
                     AnalysisOptions(flags=(f"-I{_COMMON}",)), depth="quick")
    assert result.compiled and len(result.rooflines) == 4
    profiles = {k.kernel: k for k in result.profile.kernels}
    for rl in result.rooflines:
        prof = profiles[rl.kernel]
        assert set(prof.flops) == {"int"} and rl.precision == "int32", rl.name
        for p in rl.points:
            assert p.intensity == pytest.approx(prof.flops["int"] / prof.bytes[p.level])
            assert p.performance == pytest.approx(prof.flops["int"] / prof.duration_s)
    labels = ["".join(t.itertext()) for t in _chart(result).iter(f"{_SVG}text") if t.get("class") == "kernel-label"]
    assert sorted(labels) == sorted(f"{rl.name.split('(')[0]} (INT32)" for rl in result.rooflines)
    fp = analyze((REPO / "examples" / "sgemm_naive.cu").resolve(), AnalysisOptions(), depth="quick")
    (rl,) = fp.rooflines
    (prof,) = fp.profile.kernels
    assert rl.precision == "fp32" and prof.flops["fp32"] > 0 and not prof.flops.get("int")
    dram = next(p for p in rl.points if p.level == "dram")
    assert dram.intensity == pytest.approx(prof.flops["fp32"] / prof.bytes["dram"])


def test_roofline_text_is_readable_and_the_trajectory_is_in_the_legend():
    result = analyze((REPO / "examples" / "sgemm_naive.cu").resolve(), AnalysisOptions())  # full: what-if runs
    root = _chart(result)
    assert any(rl.trajectory for rl in result.rooflines)
    assert any(el.get("class") == "legend-trajectory" for el in root.iter(f"{_SVG}line"))
    legend = next(g for g in root.iter(f"{_SVG}g") if g.get("class") == "legend")
    assert "SM-scaling" in "".join(legend.itertext())
    # The editor scales the chart to its panel (~0.7 at 500 px): no text is set below 13 px.
    sizes = [float(el.get("font-size")) for el in root.iter() if el.get("font-size")]
    assert min(sizes) >= 13 and float(root.get("font-size")) >= 13
    labels = [t.text for t in root.iter(f"{_SVG}text") if t.get("class") == "kernel-label"]
    assert labels == ["sgemm_naive"]
