"""Feature builders on hand-made results: severities, related info, snippets, stale lines, hovers."""

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from kernelscope.analysis.advisor.advice import Advice, Estimate, Fix, Hotspot, SourceEdit
from kernelscope.analysis.profile import LaunchConfig
from kernelscope.analysis.results import AnalysisResult, KernelReport, LineReport, OccupancyReport, Resources
from kernelscope.server.features import actions, diagnostics, hover, lens
from kernelscope.server.tracking import TrackedDocument

URI = "file:///k.cu"
TEXT = """__global__ void k(float *y) {
  float s = 0;
  for (int i = 0; i < 64; ++i) {
    s += y[i] * /* é */ 0.5;
  }
  y[0] = s;
}
"""


def _advice(**kw) -> Advice:
    base = dict(id="a1", optimizer="double_precision_constant", title="Use a float literal", kernel="_Z1kPf",
                kernel_name="k(float*)", lines=(4,), columns=(22, 25), importance=0.3,
                estimate=Estimate(speedup=1.25, formula="GPA Eq. 2"), provenance="modeled",
                message="0.5 is a double: the multiply runs on the FP64 pipe. Write 0.5f. Est. 1.25×.",
                fix=Fix(kind="float_literal", description="append f",
                        edits=(SourceEdit(line=4, col=25, end_line=4, end_col=25, new_text="f"),)))
    base.update(kw)
    return Advice(**base)


def _result(*advice: Advice) -> AnalysisResult:
    kernel = KernelReport(
        name="k(float*)", mangled="_Z1kPf", line=1, end_line=7, resources=Resources(registers=24), launch=None,
        occupancy=OccupancyReport(block_size=256, active_blocks_per_sm=8, active_warps_per_sm=64,
                                  max_warps_per_sm=64, occupancy=1.0, limiter="warps"),
        lines=(LineReport(line=4, share=0.62, samples={"long_scoreboard": 60, "selected": 20, "math_pipe_throttle": 20},
                          sass=("/*0x0090*/ DMUL R4, R2, 0.5",)),),
        bound="latency", roofline_fraction=0.12)
    return AnalysisResult(source="/k.cu", source_sha256="0", arch="sm_90", device="H100 SXM", toolchain=None,
                          compiled=True, kernels=(kernel,), advice=advice)


def _view(result, text=TEXT, encoding=types.PositionEncodingKind.Utf16):
    doc = TrackedDocument.open(URI, text, 1, PositionCodec(encoding))
    return doc, doc.attach(result, text, "miss")


def _all():
    return types.Range(start=types.Position(line=0, character=0), end=types.Position(line=99, character=0))


def test_severity_follows_importance_and_message_says_modeled():
    _, view = _view(_result(_advice(), _advice(id="a2", importance=0.07), _advice(id="a3", importance=0.01)))
    d = diagnostics.build(view, URI)
    assert [x.severity for x in d] == [types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Information,
                                      types.DiagnosticSeverity.Hint]
    assert d[0].message.startswith("[modeled] 0.5 is a double") and d[0].source == "kernelscope"
    # columns 22..25 are Python characters; "é" is one UTF-16 unit, so they stay 22..25
    assert (d[0].range.start.line, d[0].range.start.character, d[0].range.end.character) == (3, 22, 25)


def test_related_information_points_at_the_def_line():
    hs = Hotspot(def_line=3, use_line=4, def_pc=0x80, use_pc=0x90, def_opcode="LDG.E", use_opcode="DMUL",
                 distance=3, samples=40, category="global memory")
    _, view = _view(_result(_advice(hotspots=(hs,))))
    (d,) = diagnostics.build(view, URI)
    assert d.related_information and d.related_information[0].location.range.start.line == 2
    assert "LDG.E" in d.related_information[0].message


def test_quick_fix_plain_and_snippet():
    snippet = _advice(fix=Fix(kind="pragma_unroll", description="unroll", is_snippet=True,
                              edits=(SourceEdit(line=3, col=0, end_line=3, end_col=0,
                                                new_text="  #pragma unroll ${1:4}\n"),)))
    _, view = _view(_result(snippet))
    (plain,) = [a for a in actions.build(view, URI, 1, _all(), snippets=False) if a.edit is not None]
    assert plain.title.endswith("(est. 1.25×)")  # titled by the fix, with the predicted speedup
    assert plain.kind == types.CodeActionKind.QuickFix
    assert plain.edit.changes[URI][0].new_text == "  #pragma unroll 4\n"
    (snip,) = [a for a in actions.build(view, URI, 1, _all(), snippets=True) if a.edit is not None]
    (edit,) = snip.edit.document_changes[0].edits
    assert isinstance(edit, types.SnippetTextEdit) and edit.snippet.value == "  #pragma unroll ${1:4}\n"


def test_advice_without_fix_is_a_guidance_action():
    _, view = _view(_result(_advice(fix=None)))
    (a,) = actions.build(view, URI, 1, _all(), snippets=False)
    assert a.edit is None and a.command.command == actions.EXPLAIN and a.command.arguments == [URI, "a1"]
    assert a.title.startswith("Explain: ")


def test_no_action_or_diagnostic_on_an_edited_line():
    doc, view = _view(_result(_advice()))
    doc.change(types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=3, character=4), end=types.Position(line=3, character=4)), text="x"))
    assert diagnostics.build(view, URI) == [] and actions.build(view, URI, 2, _all(), snippets=False) == []
    assert hover.build(view, 3, 5) is None


def test_hover_on_line_and_on_kernel_name_and_lens():
    _, view = _view(_result(_advice()))
    h = hover.build(view, 3, 6).contents.value
    for part in ("62.0 %", "| long scoreboard | 60.0 % |", "```sass", "DMUL", "24 registers", "occupancy 100.0 % theoretical",
                 "Provenance: static", "Use a float literal"):
        assert part in h, part
    k = hover.build(view, 0, 17).contents.value
    assert k.startswith("### `k(float*)`") and "**latency-bound**" in k
    (lz,) = lens.build(view, URI)
    assert lz.range.start.line == 0 and lz.command.command == lens.SHOW_REPORT
    assert "latency-bound" in lz.command.title and "12.0 % of roofline" in lz.command.title and "1.25×" in lz.command.title
    assert "grid fills" not in lz.command.title  # no launch known: nothing to say about the grid


def test_a_grid_smaller_than_one_wave_is_named_in_hover_and_lens():
    result = _result(_advice())
    k = result.kernels[0]
    small = k.model_copy(update={"launch": LaunchConfig(grid=(4, 1, 1), block=(256, 1, 1)),
                                 "occupancy": k.occupancy.model_copy(update={"waves": 4 / (8 * 132), "sm_count": 132})})
    _, view = _view(result.model_copy(update={"kernels": (small,)}))
    h = hover.build(view, 3, 6).contents.value
    assert "the grid's 4 blocks fill 4 of 132 SMs (0.4 % of one wave)" in h, h
    (lz,) = lens.build(view, URI)
    assert "occupancy 100.0 % (warps) · grid fills 4/132 SMs" in lz.command.title, lz.command.title


def test_plain_text_of_snippets():
    assert actions.plain_text("a ${1:b ${2:c}} $0 ${3|x,y|} \\$5") == "a b c  x $5"


def test_line_hover_lists_advice_best_first():
    weak = _advice(id="w", title="Weak idea", estimate=Estimate(speedup=1.02, formula="GPA Eq. 2"))
    strong = _advice(id="s", title="Strong idea", estimate=Estimate(speedup=1.9, formula="GPA Eq. 2"))
    _, view = _view(_result(weak, strong))
    h = hover.build(view, 3, 6).contents.value
    assert h.index("Strong idea") < h.index("Weak idea"), h


def test_advice_whose_fix_re_models_to_no_gain_leaves_the_diagnostics():
    """Issue 15: kept in the report (marked), not shown as a diagnostic; a verified one says its figure."""
    _, view = _view(_result(_advice()))
    assert len(diagnostics.build(view, URI, (_advice(),))) == 1
    quiet = _advice(verification="no_change", verified_speedup=1.0)
    assert diagnostics.build(view, URI, (quiet,)) == []
    (d,) = diagnostics.build(view, URI, (_advice(verification="verified", verified_speedup=1.4),))
    assert d.message.endswith("Verified: the fix re-models at 1.40×.")


def test_advice_on_another_files_lines_is_no_diagnostic_or_hover_here():
    """A kernel of an included `.cu` (Advice.file): its line 4 is that file's, not this one's."""
    elsewhere = _advice(id="e", file="/inc/kernels.cu", fix=None, columns=None)
    _, view = _view(_result(elsewhere))
    assert diagnostics.build(view, URI) == []
    assert hover.build(view, 3, 6).contents.value.count("Use a float literal") == 0
    assert elsewhere.where == "kernels.cu:4" and _advice().where == "line 4"
