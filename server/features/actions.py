"""Code actions: `analysis.verify.rank_actions` decides, this module translates to LSP.

A quick fix per advice whose edit is safe to offer (titled with its verified and estimated
speedup), a "Verify" action for fixes not yet verified, and an "Explain" guidance action for
advice without an edit or whose edit was withheld (does not compile, or re-modeled slower).
Edits are only offered while every line they touch is unchanged since the analysis;
otherwise their columns could land in the wrong place.
"""

from __future__ import annotations

import asyncio
import logging
import hashlib
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types

from kernelscope.analysis.advisor.advice import Advice, Fix, SourceEdit
from kernelscope.analysis.advisor.fixes import attach_fixes, plain_text
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.results import AnalysisResult
from kernelscope.analysis.process import CancelToken, Cancelled
from kernelscope.analysis.advisor.verify import (ActionPlan, Verification, VerificationCache, rank_actions, verify, verify_all,
                                         with_verifications)

from ..tracking import ResultView
from . import diagnostics

log = logging.getLogger(__name__)

EXPLAIN = "kernelscope.explain"
VERIFY = "kernelscope.verifyAdvice"

__all__ = ["EXPLAIN", "VERIFY", "VERIFIER", "build", "plain_text", "plans", "supports_snippets", "verify_command",
           "verify_in_background"]

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


class Verifier:
    """The server's verifications: a cache (memory, and disk once `configure`d) and the latest
    outcome per (file digest, advice id), which code actions read."""

    def __init__(self) -> None:
        self.cache = VerificationCache()
        self._latest: dict[tuple[str, str], Verification] = {}
        self._fixed: dict[tuple, tuple[Advice, ...]] = {}
        self._batches: dict[str, CancelToken] = {}  # uri -> the background verification running for it
        self._lock = threading.Lock()

    def configure(self, directory: Path | None) -> None:
        if directory != self.cache.directory:
            self.cache = VerificationCache(directory)

    def for_result(self, result: AnalysisResult) -> dict[str, Verification]:
        with self._lock:
            return {aid: v for (sha, aid), v in self._latest.items() if sha == result.source_sha256}

    def advice(self, result: AnalysisResult, fast_math: bool = False) -> tuple[Advice, ...]:
        """The result's advice with the fixes `fixes.fix_for` completes (block size with grid, hoisted
        load, tiling template). Those need the analysed text: the file on disk while it still has
        the analysed digest; otherwise the optimizers' own fixes."""
        # one source can have several results (modeled, then measured): their advice differs
        key = (result.source_sha256, fast_math, tuple((a.id, a.provenance, a.estimate.speedup) for a in result.advice))
        with self._lock:
            if key in self._fixed:
                return self._fixed[key]
        try:
            data = Path(result.source).read_bytes()
        except OSError:
            data = b""
        if hashlib.sha256(data).hexdigest() != result.source_sha256:
            return result.advice
        fixed = attach_fixes(result.advice, data.decode("utf-8", errors="replace"), fast_math=fast_math)
        with self._lock:
            if len(self._fixed) > 64:
                self._fixed.clear()
            self._fixed[key] = fixed
        return fixed

    def run(self, result: AnalysisResult, advice: Advice, options: AnalysisOptions, fast_math: bool = False
            ) -> Verification:
        """Blocking (compiles): call it from an executor."""
        v = verify(Path(result.source), advice, options, baseline=result, cache=self.cache, fast_math=fast_math)
        self._remember(result, v)
        return v

    def _remember(self, result: AnalysisResult, v: Verification) -> None:
        with self._lock:
            self._latest[(result.source_sha256, v.advice_id)] = v

    def shown(self, result: AnalysisResult) -> tuple[Advice, ...]:
        """The result's advice as the editor shows it: with each fix's re-modeled figure, or marked as
        having no modeled gain (issue 15: verified by default)."""
        return with_verifications(self.advice(result), self.for_result(result))

    def start(self, uri: str) -> CancelToken:
        """A new background batch for `uri`; the previous one is cancelled."""
        token = CancelToken()
        with self._lock:
            old, self._batches[uri] = self._batches.get(uri), token
        if old is not None:
            old.cancel()
        return token

    def cancel(self, uri: str) -> None:
        with self._lock:
            old = self._batches.pop(uri, None)
        if old is not None:
            old.cancel()

    def cancel_all(self) -> None:
        """Shutdown: every batch stops (its compiler's process group is killed)."""
        with self._lock:
            batches, self._batches = list(self._batches.values()), {}
        for token in batches:
            token.cancel()

    def verify_all(self, result: AnalysisResult, options: AnalysisOptions, limit: int, token: CancelToken,
                   on_each) -> None:
        """Blocking: the background batch (analysis.verify.verify_all), each outcome remembered."""
        def each(v: Verification) -> None:
            self._remember(result, v)
            on_each(v)

        verify_all(Path(result.source), result, options, limit=limit, cancel=token, cache=self.cache, on_each=each)


VERIFIER = Verifier()


def plans(view: ResultView, fast_math: bool = False) -> list[ActionPlan]:
    return rank_actions(VERIFIER.advice(view.result, fast_math), VERIFIER.for_result(view.result))


def build(view: ResultView, uri: str, version: int | None, requested: types.Range,
          snippets: bool, fast_math: bool = False) -> list[types.CodeAction]:
    out: list[types.CodeAction] = []
    for plan in plans(view, fast_math):
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


async def verify_in_background(ls: Any, uri: str) -> None:
    """Verified by default (issue 15): after a full result, the fixes of its most promising advice are
    re-modeled one after another; each outcome republishes the file's diagnostics and lenses. A newer
    analysis of the file (or closing it) cancels the batch between two compiles."""
    settings = ls.settings.verify
    view = ls.view(uri)
    if not settings.enabled or settings.max_fixes <= 0 or view is None or view.result.depth != "full" \
            or not view.result.compiled:
        return
    result = view.result
    VERIFIER.configure(ls.cache_dir() / "verify")
    token = VERIFIER.start(uri)
    loop = asyncio.get_running_loop()

    def republish(_: Verification) -> None:  # on the worker thread
        loop.call_soon_threadsafe(_refresh, ls, uri, result.source_sha256)

    try:
        await loop.run_in_executor(None, VERIFIER.verify_all, result, ls.settings.analysis, settings.max_fixes,
                                   token, republish)
    except Cancelled:
        return
    except Exception:  # a verification that fails must not take the server down; the estimate stays
        log.exception("background verification of %s failed", uri)


def _refresh(ls: Any, uri: str, sha256: str) -> None:
    view = ls.view(uri)
    if uri not in ls.docs or view is None or view.result.source_sha256 != sha256:
        return  # a newer result is on its way
    ls.publish(uri)
    ws = ls.client_capabilities.workspace
    if ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support:
        ls.workspace_code_lens_refresh(None)


async def verify_command(ls: Any, uri: str, advice_id: str) -> dict[str, Any] | None:
    """`kernelscope.verifyAdvice [uri, advice id]`: verify in the background, then refresh what shows it.

    Returns the Verification as JSON (the client may show `reason`), or None for an unknown id."""
    view = ls.view(uri)
    if view is None:
        return None
    found = next((a for a in VERIFIER.advice(view.result) if a.id == advice_id), None)
    if found is None or found.fix is None:
        return None
    VERIFIER.configure(ls.cache_dir() / "verify")
    loop = asyncio.get_running_loop()
    v = await loop.run_in_executor(None, VERIFIER.run, view.result, found, ls.settings.analysis)
    if uri in ls.docs:
        ls.publish(uri)
        ws = ls.client_capabilities.workspace
        if ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support:
            ls.workspace_code_lens_refresh(None)
    return v.model_dump(mode="json")
