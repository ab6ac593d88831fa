"""Diagnostics: compiler messages and performance advice, at the lines they are on now.

`build` translates a result; `Diagnostics` publishes it: after each result and verification, and,
moved with the user's edits (tracking.py), after a pause in typing.
"""

from __future__ import annotations

import asyncio
import os
import re

from lsprotocol import types

from kernelscope.analysis.application import Advice, AnalysisResult, Message
from kernelscope.analysis.reports import docs

from ..feature import LanguageFeature
from ..tracking import ResultView

SOURCE = "kernelscope"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
    "remark": types.DiagnosticSeverity.Information,
    "info": types.DiagnosticSeverity.Information,
}

#: share of the kernel's samples from which advice is a Warning / an Information; below: a Hint
WARNING_SHARE = 0.20
INFORMATION_SHARE = 0.05
#: re-publishing shifted diagnostics waits for a pause in typing
REPUBLISH_DELAY_S = 0.1

_WORD = re.compile(r"[A-Za-z0-9_.]+")


def advice_severity(a: Advice) -> types.DiagnosticSeverity:
    if a.assumed:  # its estimate rests on a default launch (issue 31): a guess is never a warning
        return types.DiagnosticSeverity.Information if a.importance >= INFORMATION_SHARE else \
            types.DiagnosticSeverity.Hint
    if a.importance >= WARNING_SHARE:
        return types.DiagnosticSeverity.Warning
    if a.importance >= INFORMATION_SHARE:
        return types.DiagnosticSeverity.Information
    return types.DiagnosticSeverity.Hint


def _same_file(message: Message, result: AnalysisResult) -> bool:
    if not message.file:
        return True
    a, b = os.path.normpath(message.file), os.path.normpath(result.source)
    return a == b or (not os.path.isabs(a) and os.path.basename(a) == os.path.basename(b))


def _message_range(view: ResultView, m: Message) -> types.Range | None:
    line1 = m.line or 1
    if m.column is None or m.line is None:
        return view.range(line1)
    now = view.line_now(line1)
    if now is None:
        return None
    start = m.column - 1  # compilers count from 1
    word = _WORD.match(view.text_now(now), start)
    return view.range(line1, start, word.end() if word else start + 1)


def compiler_diagnostics(view: ResultView) -> list[types.Diagnostic]:
    out: list[types.Diagnostic] = []
    for m in view.result.messages:
        if not _same_file(m, view.result):
            continue
        rng = _message_range(view, m)
        if rng is None:
            continue  # its line was edited: the message may no longer be true
        text = m.message if m.origin is None else f"{m.message} (in {m.origin})"
        out.append(types.Diagnostic(range=rng, message=text, severity=_SEVERITY[m.severity], source=m.source,
                                    data={"lineText": view.text_then(m.line or 1)}))
    return out


def advice_diagnostic(view: ResultView, uri: str, a: Advice) -> types.Diagnostic | None:
    primary = a.lines[0]
    rng = view.range(primary, *a.columns) if a.columns else view.range(primary)
    if rng is None:
        return None
    related: list[types.DiagnosticRelatedInformation] = []
    # GPA's def→use pairs: point at the instruction the stalled one waits on, when it is elsewhere.
    # An unrolled loop repeats one source pair many times; one entry per source pair, hottest first.
    pairs: dict[tuple, list[int]] = {}
    for h in a.hotspots:
        if h.def_line is not None and h.def_line != primary:
            pairs.setdefault((h.def_line, h.def_opcode, h.use_line, h.use_opcode, h.category), []).append(h.distance)
    for (def_line, def_opcode, use_line, use_opcode, category), distances in pairs.items():
        partner = view.range(def_line)
        if partner is None:
            continue
        lo, hi = min(distances), max(distances)
        apart = f"{lo} instructions apart" if lo == hi else f"{lo} to {hi} instructions apart"
        times = f"; {len(distances)} such pairs" if len(distances) > 1 else ""
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=partner),
            message=f"{def_opcode} here feeds {use_opcode} at line {use_line} ({category}, {apart}{times})"))
    for other in a.lines[1:]:
        r = view.range(other)
        if r is not None and other not in {h.def_line for h in a.hotspots}:
            related.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=r), message=f"also involved: line {other}"))
    verified = (f" Verified: the fix re-models at {a.verified_speedup:.2f}×."
                if a.verification == "verified" and a.verified_speedup else "")
    return types.Diagnostic(
        range=rng,
        message=f"[{a.provenance}] {a.message}{verified}",
        severity=advice_severity(a),
        source=SOURCE,
        code=a.optimizer,
        # VS Code shows the code as a link to what the optimizer matches and how it estimates
        code_description=types.CodeDescription(href=href) if (href := docs.link("advisor.md", docs.OPTIMIZERS)) else None,
        related_information=related or None,
        # The analysed text of the line: results follow edits, so it always equals the line's text now
        # (tests/stress/test_edit_storm.py checks every published diagnostic against it).
        data={"adviceId": a.id, "lineText": view.text_then(primary)},
    )


def build(view: ResultView, uri: str, advice: tuple[Advice, ...] | None = None) -> list[types.Diagnostic]:
    """Compiler messages and `advice` (default: the result's, unverified). Advice whose fix
    re-modeled to no gain is left out (it stays in reports, marked so)."""
    out = compiler_diagnostics(view)
    for a in view.result.advice if advice is None else advice:
        if a.no_modeled_gain or a.file is not None:
            continue  # re-modeled to no gain, or on another file's lines (`Advice.file`)
        d = advice_diagnostic(view, uri, a)
        if d is not None:
            out.append(d)
    return out


class Diagnostics(LanguageFeature):
    """Publishes each open file's diagnostics, with the advice as the editor shows it (the code
    actions feature's verified figures)."""

    def __init__(self, server) -> None:
        super().__init__(server)
        self._republish: dict[str, asyncio.TimerHandle] = {}

    def publish(self, uri: str) -> int:
        ls = self.server
        view = ls.view(uri)
        diags = build(view, uri, ls.actions.shown(view.result)) if view is not None else []
        doc = ls.docs.get(uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diags, version=doc.doc.version if doc else None))
        return len(diags)

    def document_change(self, uri: str) -> None:
        if self.server.view(uri) is None:
            return
        if (h := self._republish.pop(uri, None)) is not None:
            h.cancel()
        self._republish[uri] = asyncio.get_running_loop().call_later(REPUBLISH_DELAY_S, self._republish_now, uri)

    def _republish_now(self, uri: str) -> None:
        self._republish.pop(uri, None)
        if uri in self.server.docs:
            self.publish(uri)

    def document_close(self, uri: str) -> None:
        if (h := self._republish.pop(uri, None)) is not None:
            h.cancel()
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
