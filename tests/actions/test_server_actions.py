"""The server's code-action feature translates `rank_actions`: titles with figures, Verify, withheld edits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.server.features import actions
from kernelscope.server.tracking import TrackedDocument

KERNELS = Path(__file__).resolve().parent / "kernels"


def _all() -> types.Range:
    return types.Range(start=types.Position(line=0, character=0), end=types.Position(line=999, character=0))


class _Server(SimpleNamespace):
    """What the code actions feature uses of the language server."""

    def view(self, uri):
        return self.doc.view

    def cache_dir(self) -> Path:
        return self.tmp

    def publish(self, uri) -> int:
        self.published.append(uri)
        return 0

    def refresh_lenses(self) -> None:
        self.refreshed += 1


def test_verify_command_then_titles_carry_the_verified_figure(toolchain, tmp_path):
    src = KERNELS / "block32.cu"
    text = src.read_text()
    uri = src.as_uri()
    result = analyze(src, AnalysisOptions(), toolchain=toolchain)
    doc = TrackedDocument.open(uri, text, 1, PositionCodec(types.PositionEncodingKind.Utf16))
    doc.attach(result, text, "miss")
    a = next(a for a in result.advice if a.optimizer == "thread_increase")

    ls = _Server(doc=doc, tmp=tmp_path, published=[], refreshed=0, docs={uri: doc},
                 settings=SimpleNamespace(analysis=AnalysisOptions()))
    feature = actions.CodeActions(ls)
    before = feature.build(doc.view, uri, 1, _all(), snippets=False)
    fix = next(x for x in before if x.edit is not None and x.title.startswith("Change block size"))
    assert fix.title == f"Change block size (est. {a.estimate.speedup:.2f}×)"
    assert len(fix.edit.changes[uri]) == 3  # block, and the grid's two numbers
    verify_action = next(x for x in before if x.command is not None and x.command.command == actions.VERIFY)
    assert verify_action.command.arguments == [uri, a.id]

    out = asyncio.run(feature.verify_command(uri, a.id))
    assert out["status"] == "verified" and ls.published == [uri] and ls.refreshed == 1
    assert list((tmp_path / "verify").glob("*.json"))  # kept on disk for the next session

    after = feature.build(doc.view, uri, 1, _all(), snippets=False)
    fix = next(x for x in after if x.edit is not None and x.title.startswith("Change block size"))
    assert fix.title == f"Change block size (verified {out['verified_speedup']:.2f}×, est. {a.estimate.speedup:.2f}×)"
    assert not any(x.command is not None and x.command.command == actions.VERIFY and x.command.arguments[1] == a.id
                   for x in after)
