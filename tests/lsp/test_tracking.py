"""Results follow edits: unit tests of the line map and of client-unit conversion."""

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from kernelscope.analysis.results import AnalysisResult
from kernelscope.server.tracking import LineMap, TrackedDocument, split_lines

TEXT = "a\nb\nc\nd\n"
RESULT = AnalysisResult(source="/x.cu", source_sha256="0", arch="sm_90", device="H100", toolchain=None, compiled=True)


def _doc(text: str = TEXT, encoding=types.PositionEncodingKind.Utf16) -> TrackedDocument:
    doc = TrackedDocument.open("file:///x.cu", text, 1, PositionCodec(encoding))
    doc.attach(RESULT, text, "miss")
    return doc


def _edit(doc, l1, c1, l2, c2, text):
    doc.change(types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=l1, character=c1), end=types.Position(line=l2, character=c2)),
        text=text))


def test_insert_lines_above_shifts_everything_below():
    doc = _doc()
    _edit(doc, 1, 0, 1, 0, "new1\nnew2\n")
    v = doc.view
    assert [v.line_now(n) for n in (1, 2, 3, 4)] == [0, 3, 4, 5]
    assert v.line_then(3) == 2 and v.line_then(1) is None


def test_editing_a_line_makes_it_stale_only():
    doc = _doc()
    _edit(doc, 2, 0, 2, 1, "C")
    v = doc.view
    assert [v.line_now(n) for n in (1, 2, 3, 4)] == [0, 1, None, 3]


def test_deleting_lines_and_newline_at_end_of_line():
    doc = _doc()
    _edit(doc, 0, 1, 0, 1, "\nx")  # Enter at the end of line 0, then type
    assert [doc.view.line_now(n) for n in (1, 2, 3, 4)] == [0, 2, 3, 4]
    _edit(doc, 1, 0, 3, 0, "")  # delete "x" and "b"
    assert [doc.view.line_now(n) for n in (1, 2, 3, 4)] == [0, None, 1, 2]
    assert split_lines(doc.text)[1:3] == ["c", "d"]


def test_full_text_change_is_diffed():
    doc = _doc()
    doc.change(types.TextDocumentContentChangeWholeDocument(text="z\na\nb\nX\nd\n"))
    assert [doc.view.line_now(n) for n in (1, 2, 3, 4)] == [1, 2, None, 4]


def test_result_of_older_text_maps_onto_current_buffer():
    doc = TrackedDocument.open("file:///x.cu", "zero\n" + TEXT, 1, PositionCodec())
    view = doc.attach(RESULT, TEXT, "miss")  # the analysis saw the file before "zero" was typed
    assert view.line_now(1) == 1 and view.line_now(4) == 4


def test_columns_in_client_units():
    line = "  y = /* é😀 */ 2.5;"
    col = line.index("2.5")
    for enc, expected in ((types.PositionEncodingKind.Utf8, col + 1 + 3), (types.PositionEncodingKind.Utf16, col + 1),
                          (types.PositionEncodingKind.Utf32, col)):
        doc = _doc(line + "\n", enc)
        r = doc.view.range(1, col, col + 3)
        assert r is not None and r.start.character == expected and r.end.character == expected + 3, enc
