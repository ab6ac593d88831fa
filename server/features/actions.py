"""Code actions: a quick fix per advice with a mechanical fix, a guidance action for the rest.

Edits are only offered while every line they touch is unchanged since the analysis;
otherwise their columns could land in the wrong place.
"""

from __future__ import annotations

import re

from lsprotocol import types

from kernelscope.analysis.advice import Advice, SourceEdit

from ..tracking import ResultView
from . import diagnostics

EXPLAIN = "kernelscope.explain"

_PLACEHOLDER = re.compile(r"\$\{\d+(?::([^${}]*))?\}|\$\{\d+\|([^|]*)\|\}|\$\d+")


def plain_text(snippet: str) -> str:
    """The snippet as plain text: placeholders become their defaults (first choice), tab stops vanish."""
    # Escaped characters (\$, \}, \\) are literal: hide them from the placeholder pattern first.
    escapes = {"\\\\": "\ue002", "\\$": "\ue000", "\\}": "\ue001"}
    text = snippet
    for esc, mark in escapes.items():
        text = text.replace(esc, mark)
    while True:  # innermost placeholders first, so nested ones resolve
        new = _PLACEHOLDER.sub(lambda m: m.group(1) if m.group(1) is not None
                               else (m.group(2).split(",")[0] if m.group(2) is not None else ""), text)
        if new == text:
            break
        text = new
    for esc, mark in escapes.items():
        text = text.replace(mark, esc[1])
    return text


def supports_snippets(caps: types.ClientCapabilities) -> bool:
    ws = caps.workspace
    return bool(ws and ws.workspace_edit and ws.workspace_edit.snippet_edit_support)


def _edit_range(view: ResultView, e: SourceEdit) -> types.Range | None:
    start = view.position(e.line, e.col)
    end = view.position(e.end_line, e.end_col)
    if start is None or end is None:
        return None
    # Every line in between must be unchanged too (a multi-line replacement).
    if any(view.line_now(ln) is None for ln in range(e.line, e.end_line + 1)):
        return None
    return types.Range(start=start, end=end)


def _fix_edit(view: ResultView, uri: str, version: int | None, a: Advice, snippets: bool) -> types.WorkspaceEdit | None:
    assert a.fix is not None
    edits: list[types.TextEdit | types.SnippetTextEdit] = []
    for e in a.fix.edits:
        rng = _edit_range(view, e)
        if rng is None:
            return None
        if a.fix.is_snippet and snippets:
            edits.append(types.SnippetTextEdit(range=rng, snippet=types.StringValue(value=e.new_text)))
        else:
            text = plain_text(e.new_text) if a.fix.is_snippet else e.new_text
            edits.append(types.TextEdit(range=rng, new_text=text))
    if any(isinstance(e, types.SnippetTextEdit) for e in edits):
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})  # type: ignore[dict-item]


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def build(view: ResultView, uri: str, version: int | None, requested: types.Range,
          snippets: bool) -> list[types.CodeAction]:
    out: list[types.CodeAction] = []
    for a in sorted(view.result.advice, key=lambda a: -a.speedup):
        diag = diagnostics.advice_diagnostic(view, uri, a)
        if diag is None:
            continue
        # The whole primary line counts, so a cursor anywhere on it finds the action.
        line_range = view.range(a.lines[0], 0, len(view.text_now(diag.range.start.line)))
        if line_range is None or not _overlaps(line_range, requested):
            continue
        title = f"{a.title} (est. {a.speedup:.2f}×)"
        if a.fix is not None:
            edit = _fix_edit(view, uri, version, a, snippets)
            if edit is not None:
                out.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                                            edit=edit, is_preferred=not out))
                continue
        out.append(types.CodeAction(
            title=f"Explain: {title}", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
            command=types.Command(title=f"Explain: {a.title}", command=EXPLAIN, arguments=[uri, a.id])))
    return out
