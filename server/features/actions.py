"""Code actions: the application layer ranks them (`application.action_plans`), this module
translates them to LSP, and `CodeActions` keeps the verifications they show.

A quick fix per advice whose edit is safe to offer (titled with its verified and estimated
speedup), a "Verify" action for fixes not yet verified, and an "Explain" guidance action for
advice without an edit or whose edit was withheld (does not compile, or re-modeled slower).
Edits are only offered while every line they touch is unchanged since the analysis;
otherwise their columns could land in the wrong place.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types

from kernelscope.analysis import application
from kernelscope.analysis.application import (ActionPlan, Advice, AnalysisResult, CancelToken, Cancelled, Fix,
                                              SourceEdit, Verification, VerificationCache, plain_text)

from ..feature import LanguageFeature
from ..tracking import ResultView
from . import diagnostics

log = logging.getLogger(__name__)

EXPLAIN = "kernelscope.explain"
VERIFY = "kernelscope.verifyAdvice"

__all__ = ["EXPLAIN", "VERIFY", "CodeActions", "build", "plain_text", "supports_snippets"]


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


def _fix_edit(view: ResultView, uri: str, version: int | None, fix: Fix, snippets: bool) -> types.WorkspaceEdit | None:
    edits: list[types.TextEdit | types.SnippetTextEdit] = []
    for e in fix.edits:
        rng = _edit_range(view, e)
        if rng is None:
            return None
        if fix.is_snippet and snippets:
            edits.append(types.SnippetTextEdit(range=rng, snippet=types.StringValue(value=e.new_text)))
        else:
            text = plain_text(e.new_text) if fix.is_snippet else e.new_text
            edits.append(types.TextEdit(range=rng, new_text=text))
    if any(isinstance(e, types.SnippetTextEdit) for e in edits):
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})  # type: ignore[dict-item]


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


class CodeActions(LanguageFeature):
    """The code actions and the verification of their fixes (issue 15: verified by default): a cache
    (memory, and disk under the server's cache folder), the latest outcome per (file digest, advice
    id), and the background batch running per file."""

    def __init__(self, server) -> None:
        super().__init__(server)
        self.cache = VerificationCache()
        self._latest: dict[tuple[str, str], Verification] = {}
        self._fixed: dict[tuple, tuple[Advice, ...]] = {}
        self._batches: dict[str, CancelToken] = {}  # uri -> the background verification running for it
        self._lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------------

    def analysis_requested(self, uri: str) -> None:
        self._cancel(uri)  # its fixes are verified again once the new result is in

    def document_close(self, uri: str) -> None:
        self._cancel(uri)

    def shutdown(self) -> None:
        """Every batch stops (its compiler's process group is killed)."""
        with self._lock:
            batches, self._batches = list(self._batches.values()), {}
        for token in batches:
            token.cancel()

    def result_shown(self, uri: str, result: AnalysisResult) -> None:
        if result.depth == "full":  # verified by default, in the background
            asyncio.get_running_loop().create_task(self.verify_in_background(uri))

    # -- what the editor shows ----------------------------------------------------------------

    def advice(self, result: AnalysisResult, fast_math: bool = False) -> tuple[Advice, ...]:
        """The result's advice with its completed fixes (application.fixed_advice), kept per result."""
        # one source can have several results (modeled, then measured): their advice differs
        key = (result.source_sha256, fast_math, tuple((a.id, a.provenance, a.estimate.speedup) for a in result.advice))
        with self._lock:
            if key in self._fixed:
                return self._fixed[key]
        fixed = application.fixed_advice(result, fast_math)
        with self._lock:
            if len(self._fixed) > 64:
                self._fixed.clear()
            self._fixed[key] = fixed
        return fixed

    def for_result(self, result: AnalysisResult) -> dict[str, Verification]:
        with self._lock:
            return {aid: v for (sha, aid), v in self._latest.items() if sha == result.source_sha256}

    def shown(self, result: AnalysisResult) -> tuple[Advice, ...]:
        """The result's advice as the editor shows it: with each fix's re-modeled figure, or marked as
        having no modeled gain."""
        return application.shown_advice(result, self.for_result(result), advice=self.advice(result))

    def plans(self, view: ResultView, fast_math: bool = False) -> list[ActionPlan]:
        return application.action_plans(self.advice(view.result, fast_math), self.for_result(view.result))

    def build(self, view: ResultView, uri: str, version: int | None, requested: types.Range,
              snippets: bool) -> list[types.CodeAction]:
        return build(view, uri, version, requested, snippets, self.plans(view))

    # -- verification -------------------------------------------------------------------------

    def _remember(self, result: AnalysisResult, v: Verification) -> None:
        with self._lock:
            self._latest[(result.source_sha256, v.advice_id)] = v

    def _configure(self) -> None:
        directory = self.server.cache_dir() / "verify"
        if directory != self.cache.directory:
            self.cache = VerificationCache(directory)

    def _start(self, uri: str) -> CancelToken:
        """A new background batch for `uri`; the previous one is cancelled."""
        token = CancelToken()
        with self._lock:
            old, self._batches[uri] = self._batches.get(uri), token
        if old is not None:
            old.cancel()
        return token

    def _cancel(self, uri: str) -> None:
        with self._lock:
            old = self._batches.pop(uri, None)
        if old is not None:
            old.cancel()

    async def verify_in_background(self, uri: str) -> None:
        """After a full result, the fixes of its most promising advice are re-modeled one after
        another; each outcome republishes the file's diagnostics and lenses. A newer analysis of the
        file (or closing it) cancels the batch between two compiles."""
        ls = self.server
        settings = ls.settings.verify
        view = ls.view(uri)
        if not settings.enabled or settings.max_fixes <= 0 or view is None or view.result.depth != "full" \
                or not view.result.compiled:
            return
        result = view.result
        self._configure()
        token = self._start(uri)
        loop = asyncio.get_running_loop()

        def each(v: Verification) -> None:  # on the worker thread
            self._remember(result, v)
            loop.call_soon_threadsafe(self._refresh, uri, result.source_sha256)

        try:
            await loop.run_in_executor(None, lambda: application.verify_fixes(
                Path(result.source), result, ls.settings.analysis, limit=settings.max_fixes, cancel=token,
                cache=self.cache, on_each=each))
        except Cancelled:
            return
        except Exception:  # a verification that fails must not take the server down; the estimate stays
            log.exception("background verification of %s failed", uri)

    def _refresh(self, uri: str, sha256: str) -> None:
        view = self.server.view(uri)
        if uri not in self.server.docs or view is None or view.result.source_sha256 != sha256:
            return  # a newer result is on its way
        self.server.publish(uri)
        self.server.refresh_lenses()

    async def verify_command(self, uri: str, advice_id: str) -> dict[str, Any] | None:
        """`kernelscope.verifyAdvice [uri, advice id]`: verify in the background, then refresh what shows it.

        Returns the Verification as JSON (the client may show `reason`), or None for an unknown id."""
        ls = self.server
        view = ls.view(uri)
        if view is None:
            return None
        found = next((a for a in self.advice(view.result) if a.id == advice_id), None)
        if found is None or found.fix is None:
            return None
        self._configure()
        result, options = view.result, ls.settings.analysis

        def run() -> Verification:  # blocking: it compiles
            v = application.verify_fix(Path(result.source), found, options, baseline=result, cache=self.cache)
            self._remember(result, v)
            return v

        v = await asyncio.get_running_loop().run_in_executor(None, run)
        if uri in ls.docs:
            ls.publish(uri)
            ls.refresh_lenses()
        return v.model_dump(mode="json")


def build(view: ResultView, uri: str, version: int | None, requested: types.Range, snippets: bool,
          plans: Sequence[ActionPlan] | None = None) -> list[types.CodeAction]:
    """The code actions on `requested`; `plans`: as ranked with what verification said (default: the
    advice's own estimates, nothing verified yet)."""
    out: list[types.CodeAction] = []
    if plans is None:
        plans = application.action_plans(application.fixed_advice(view.result), ())
    for plan in plans:
        a = plan.advice
        diag = diagnostics.advice_diagnostic(view, uri, a)
        if diag is None:
            continue
        # The whole primary line counts, so a cursor anywhere on it finds the action.
        line_range = view.range(a.lines[0], 0, len(view.text_now(diag.range.start.line)))
        if line_range is None or not _overlaps(line_range, requested):
            continue
        if plan.kind == "quickfix" and plan.fix is not None:
            edit = _fix_edit(view, uri, version, plan.fix, snippets)
            if edit is not None:
                out.append(types.CodeAction(title=plan.title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                                            edit=edit, is_preferred=not out))
                if plan.verification is None:
                    out.append(types.CodeAction(
                        title=f"Verify: {plan.title}", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                        command=types.Command(title=f"Verify: {a.title}", command=VERIFY, arguments=[uri, a.id])))
                continue
        withheld = ""
        if plan.verification is not None and plan.verification.status in ("does_not_compile", "slower"):
            withheld = " — edit withheld: " + ("it does not compile" if plan.verification.status == "does_not_compile"
                                               else "predicted slower")
        out.append(types.CodeAction(
            title=f"Explain: {plan.title}{withheld}", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
            command=types.Command(title=f"Explain: {a.title}", command=EXPLAIN, arguments=[uri, a.id])))
    return out
