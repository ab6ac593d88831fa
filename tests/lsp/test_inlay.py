"""Inlay hints at the end of hot lines (#17 item 6), and the settings that turn hints and lenses off."""

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
