"""Results follow edits: where each analysed line is in the buffer now, in the client's units.

An analysis describes the file as it was saved. Until the next analysis, the user keeps
typing: lines inserted or removed above a finding move it; a finding whose own line was
edited is stale and is withdrawn, because the numbers no longer describe that text.

`LineMap` maps analysed lines to current lines and is updated by each content change;
only the changed region is compared (with difflib), so a keystroke costs O(lines) integer
updates, not a diff of the file. `ResultView` is what the features read: the result plus
line mapping plus conversion of 0-based Python character columns to the negotiated
position encoding (UTF-8/16/32) through pygls's `PositionCodec`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition, ServerTextRange
from pygls.workspace.text_document import TextDocument

from kernelscope.analysis.application import AnalysisResult


def split_lines(text: str) -> list[str]:
    """Lines without their terminators; n newlines give n+1 lines, so line counts subtract exactly."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def _match(old: Sequence[str], new: Sequence[str]) -> list[int | None]:
    """For each old line, its index in `new` when its text survived unchanged, else None."""
    out: list[int | None] = [None] * len(old)
    if list(old) == list(new):
        return list(range(len(old)))
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, _ in sm.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                out[i1 + k] = j1 + k
    return out


class LineMap:
    """analysed line (0-based) -> current line (0-based) or None when that line was edited."""

    def __init__(self, to_now: list[int | None]):
        self._to_now = to_now
        self._from_now: dict[int, int] | None = None

    @classmethod
    def between(cls, analysed: Sequence[str], current: Sequence[str]) -> LineMap:
        return cls(_match(analysed, current))

    def now(self, line: int) -> int | None:
        return self._to_now[line] if 0 <= line < len(self._to_now) else None

    def then(self, line: int) -> int | None:
        if self._from_now is None:
            self._from_now = {now: i for i, now in enumerate(self._to_now) if now is not None}
        return self._from_now.get(line)

    def edit(self, start: int, end: int, old: Sequence[str], new: Sequence[str]) -> None:
        """Old lines start..end (inclusive) became new lines start..end+delta."""
        delta = len(new) - len(old)
        region = _match(old[start:end + 1], new[start:end + 1 + delta])
        for i, now in enumerate(self._to_now):
            if now is None or now < start:
                continue
            if now > end:
                self._to_now[i] = now + delta
            else:
                moved = region[now - start]
                self._to_now[i] = None if moved is None else start + moved
        self._from_now = None


@dataclass
class ResultView:
    """One result as it applies to the buffer now. Lines in the analysis are 1-based."""

    result: AnalysisResult
    lines: LineMap
    current: list[str]  # the buffer's lines now (shared with the owning TrackedDocument)
    codec: PositionCodec
    cache: str = "miss"  # how the result was obtained, for logs and kernelscope/analysisFinished
    analysed: list[str] = field(default_factory=list)  # the lines the result was computed from

    def text_then(self, line1: int) -> str:
        """Analysed 1-based line's text, as it was analysed."""
        return self.analysed[line1 - 1] if 0 < line1 <= len(self.analysed) else ""

    def line_now(self, line1: int | None) -> int | None:
        """Current 0-based line of analysed line `line1`, or None when it was edited (stale)."""
        return None if line1 is None else self.lines.now(line1 - 1)

    def line_then(self, line0: int) -> int | None:
        """Analysed 1-based line shown at current line `line0`, or None."""
        then = self.lines.then(line0)
        return None if then is None else then + 1

    def text_now(self, line0: int) -> str:
        return self.current[line0] if 0 <= line0 < len(self.current) else ""

    def range(self, line1: int | None, start: int | None = None, end: int | None = None) -> types.Range | None:
        """Client-unit range of columns start..end (0-based characters) on analysed line `line1`.

        Without columns: the line's text without its indentation. None when the line is stale.
        """
        now = self.line_now(line1)
        if now is None:
            return None
        text = self.text_now(now)
        if start is None:
            start = len(text) - len(text.lstrip())
            end = len(text.rstrip())
        start = max(0, min(start, len(text)))
        end = max(start, min(len(text) if end is None else end, len(text)))
        return self.codec.range_to_client_units(
            self.current, ServerTextRange(ServerTextPosition(now, start), ServerTextPosition(now, end)))

    def position(self, line1: int, col: int) -> types.Position | None:
        now = self.line_now(line1)
        if now is None:
            return None
        col = max(0, min(col, len(self.text_now(now))))
        return self.codec.position_to_client_units(self.current, ServerTextPosition(now, col))


@dataclass
class TrackedDocument:
    """Our own copy of an open buffer, so each change can be compared with the text it replaced."""

    doc: TextDocument
    current: list[str] = field(default_factory=list)
    view: ResultView | None = None

    @classmethod
    def open(cls, uri: str, text: str, version: int | None, codec: PositionCodec) -> TrackedDocument:
        doc = TextDocument(uri, text, version, sync_kind=types.TextDocumentSyncKind.Incremental,
                           position_codec=codec)
        return cls(doc=doc, current=split_lines(text))

    @property
    def text(self) -> str:
        return self.doc.source

    def change(self, change: types.TextDocumentContentChangeEvent) -> None:
        old = self.current
        if isinstance(change, types.TextDocumentContentChangePartial):
            r = self.doc.range_from_client_units(change.range)
            self.doc.apply_change(change)
            new = split_lines(self.doc.source)
            if self.view is not None:
                start = min(r.start.line, len(old) - 1)
                end = max(start, min(r.end.line, len(old) - 1))
                self.view.lines.edit(start, end, old, new)
        else:
            self.doc.apply_change(change)
            new = split_lines(self.doc.source)
            if self.view is not None:
                # A whole-text change carries no range: compare everything once.
                prev = self.view.lines
                full = _match(old, new)
                prev._to_now = [None if n is None else full[n] for n in prev._to_now]
                prev._from_now = None
        self.current = new
        if self.view is not None:
            self.view.current = new

    def attach(self, result: AnalysisResult, analysed_text: str, cache: str) -> ResultView:
        """Show `result`, computed from `analysed_text`, against the buffer as it is now."""
        analysed = split_lines(analysed_text)
        self.view = ResultView(result, LineMap.between(analysed, self.current), self.current,
                               self.doc.position_codec, cache, analysed)
        return self.view
