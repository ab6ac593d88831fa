"""Hover: the line's share, stall breakdown, SASS and kernel resources; on a kernel's name, its summary."""

from __future__ import annotations

import re

from lsprotocol import types

from kernelscope.analysis.reports import markdown as render

from ..tracking import ResultView

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _word_at(text: str, col: int) -> str:
    for m in _IDENT.finditer(text):
        if m.start() <= col <= m.end():
            return m.group()
    return ""


def build(view: ResultView, line0: int, col: int) -> types.Hover | None:
    """`line0`/`col` are the buffer's current line and Python character column."""
    line1 = view.line_then(line0)
    if line1 is None:
        return None  # an edited line: the analysis does not describe it any more
    result = view.result
    word = _word_at(view.text_now(line0), col)
    for k in result.kernels:
        if word and word == render.short_name(k):
            return _markdown(render.kernel_summary(result, k))
    kernel = result.kernel_at(line1)
    if kernel is None:
        return None
    line = kernel.line_report(line1)
    advice = render.best_first(a for a in result.advice if line1 in a.lines and a.file is None)
    if line is None and not advice:
        return None
    return _markdown(render.line_hover(result, kernel, line, line1, advice))


def _markdown(text: str) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
