"""SARIF validates against the vendored 2.1.0 schema; the HTML report is self-contained and holds the roofline."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kernelscope.analysis.advisor.advice import Advice, Estimate, Fix, Hotspot, SourceEdit
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.profile import LineSample, Profile, StallReason
from kernelscope.analysis.reports.html import render_html
from kernelscope.analysis.reports.sarif import to_sarif
from kernelscope.analysis.results import AnalysisResult, KernelReport, LineReport, Resources
from kernelscope.analysis.machine.roofline import TrajectoryPoint, kernel_roofline, roofline_model

from .sassfrag import FN, profile, provenance, samples

SCHEMA = Path(__file__).resolve().parent.parent / "data" / "sarif" / "sarif-2.1.0-rtm.5.json"


def result(tmp_path: Path) -> AnalysisResult:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void frag(float* a)\n{\n    a[0] = a[0] * 2.0;\n}\n")
    adv = Advice(id="abc123", optimizer="double_precision_constant", title="Make the constant a float", kernel=FN,
                 kernel_name="frag(float*)", lines=(3,), columns=(18, 21), importance=0.4,
                 estimate=Estimate(speedup=1.6, formula="GPA Eq. 2: T/(T−M)", inputs={"T": 10, "M": 4}),
                 provenance="modeled", message="Line 3: `2.0` is a double …",
                 hotspots=(Hotspot(def_line=3, use_line=3, def_pc=16, use_pc=32, def_opcode="F2F.F64.F32",
                                   use_opcode="DMUL", distance=1, samples=4, category="arithmetic"),),
                 fix=Fix(kind="float_literal", description="write `2.0f`",
                         edits=(SourceEdit(line=3, col=21, end_line=3, end_col=21, new_text="f"),)))
    kp = profile(samples(i1={StallReason.selected: 5}), flops={"fp32": 1e9}, bytes_={"dram": 8e9}, duration_s=5e-3)
    kp = kp.model_copy(update={"lines": (LineSample(file=str(src), line=3, samples={StallReason.wait: 3.0}),)})
    k = KernelReport(name="frag(float*)", mangled=FN, line=1, end_line=4, resources=Resources(registers=12),
                     launch=kp.launch, occupancy=None, lines=(LineReport(line=3, share=1.0, samples={"wait": 3.0}),))
    cat = load_arch_specs()
    trajectory = tuple(TrajectoryPoint(label=f"{n} SMs", concurrency=n, intensity=0.125, performance=p)
                       for n, p in ((33, 6e10), (66, 1.1e11), (132, 2e11)))
    rl = kernel_roofline(kp, roofline_model(cat, cat.device("H100 SXM")), trajectory)
    return AnalysisResult(source=str(src), source_sha256="0" * 64, arch="sm_90", device="H100 SXM", toolchain=None,
                          compiled=True, kernels=(k,), advice=(adv,), rooflines=(rl,),
                          profile=Profile(kernels=(kp,), provenance=provenance()))


def test_sarif_validates_against_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    doc = to_sarif(result(tmp_path))
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    (r,) = doc["runs"][0]["results"]
    assert r["ruleId"] == "double_precision_constant" and r["level"] == "warning"
    assert r["locations"][0]["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 19, "endColumn": 22}
    rep = r["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert rep["deletedRegion"]["startColumn"] == 22 and rep["insertedContent"]["text"] == "f"
    assert r["properties"]["estimatedSpeedup"] == 1.6


def test_html_is_self_contained_with_roofline(tmp_path):
    html = render_html(result(tmp_path))
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    svg = html[html.index("<svg"): html.index("</svg>") + 6]
    root = ET.fromstring(svg)
    assert any(el.get("class") == "ceiling memory" for el in root.iter("{http://www.w3.org/2000/svg}line"))
    # the same chart as the editor's: the kernel's point and its scaling trajectory
    assert [el.get("data-kernel") for el in root.iter("{http://www.w3.org/2000/svg}g")
            if el.get("class") == "kernel-point"][0] == "frag"
    assert any(el.get("class") == "trajectory" for el in root.iter("{http://www.w3.org/2000/svg}polyline"))
    assert "a[0] = a[0] * 2.0;" in html and "est. 1.60×" in html and "GPA Eq. 2" in html
