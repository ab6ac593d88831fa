"""Inlay hints at the end of hot lines (#17 item 6), and the settings that turn hints and lenses off."""

import asyncio

import pytest
from lsprotocol import types

WHOLE = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=10_000, character=0))


async def _hints(s, name):
    return await s.client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=s.uri(name)), range=WHOLE))


async def test_hot_lines_get_a_share_hint_at_their_end(lsp):
    async with lsp() as s:
        await s.open("saxpy.cu")
        hints = await _hints(s, "saxpy.cu")
        assert hints, "saxpy's body line is hot"
        lines = s.text("saxpy.cu").splitlines()
        for h in hints:
            assert h.label.split(" ")[1] == "%" and float(h.label.split(" ")[0]) >= 5
            # at the end of the line's text, so no code moves
            assert h.position.character == len(lines[h.position.line].rstrip().encode("utf-16-le")) // 2
        assert any("·" in h.label for h in hints)  # a stall reason beside the share


async def test_hints_and_lenses_can_be_turned_off(lsp):
    async with lsp({"inlayHints": False, "codeLens": False}) as s:
        await s.open("saxpy.cu")
        assert not await _hints(s, "saxpy.cu")
        assert not await s.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=s.uri("saxpy.cu"))))


async def _heat(s, name):
    return await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="kernelscope.lineHeat", arguments=[s.uri(name)]))


async def test_line_heat_gives_the_hints_shares_where_the_lines_are_now(lsp):
    """`kernelscope.lineHeat` feeds VS Code's heat decoration (#17 item 6): the inlay hints' shares,
    as data, on the lines as they are in the buffer after an edit above them."""
    async with lsp() as s:
        await s.open("saxpy.cu")
        heat = await _heat(s, "saxpy.cu")
        assert heat["kind"] == "modeled" and heat["lines"]
        assert all(0.01 <= h["share"] <= 1 for h in heat["lines"])
        hints = {h.position.line: float(h.label.split(" ")[0]) for h in await _hints(s, "saxpy.cu")}
        shaded = {h["line"]: 100 * h["share"] for h in heat["lines"]}
        assert hints and all(abs(shaded[line] - pct) <= 0.5 for line, pct in hints.items())
        assert any(h["reason"] for h in heat["lines"]) and all(h["kernel"] for h in heat["lines"])
        # two lines typed at the top: the same lines, two lower, before any new analysis
        s.change("saxpy.cu", types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            text="// a\n// b\n"))
        moved = await _heat(s, "saxpy.cu")
        assert sorted(h["line"] for h in moved["lines"]) == sorted(line + 2 for line in shaded)


@pytest.mark.parametrize("kind,refresh", [("visual-studio-code", "codeLens"), ("neovim", "inlayHint")])
async def test_lenses_and_hints_are_refreshed_after_a_save_that_hits_the_cache(lsp, kind, refresh):
    """#17 item 5: after a save whose result came from the cache, the server asks each client to
    redraw what it can refresh (VS Code's recorded capabilities: lenses; Neovim 0.11's: inlay hints).
    Neovim has no lens refresh; its documented setup redraws lenses on kernelscope/analysisFinished,
    which a cache hit sends too (tests/editors/test_neovim.py runs that setup)."""
    async with lsp(kind=kind) as s:
        await s.open("saxpy.cu")
        before = len(s.refreshes)
        done = await s.save("saxpy.cu")  # unchanged on disk: the cached result
        assert done["cache"].startswith("hit")
        for _ in range(100):
            if refresh in s.refreshes[before:]:
                break
            await asyncio.sleep(0.05)
        assert refresh in s.refreshes[before:], s.refreshes
