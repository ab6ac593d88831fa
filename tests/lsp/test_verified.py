"""Verified by default (issue 15): after the full result, the server re-models the fixes of the most
promising advice in the background; diagnostics then say the verified figure, the lens names it,
and advice whose fix re-models to no gain leaves the diagnostics. Real server, real nvcc."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from lsprotocol import types

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def _until(pred, timeout: float = 180.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if v := pred():
            return v
        await asyncio.sleep(0.1)
    raise TimeoutError("the condition never held")


async def test_diagnostics_carry_the_verified_figure_after_the_full_result(lsp, workspace):
    shutil.copy(EXAMPLES / "stencil_double_const.cu", workspace / "stencil.cu")
    async with lsp() as s:
        done = await s.open("stencil.cu")
        assert done["depth"] == "full"
        # fixes are verified one after another, most promising first: the double constant's comes
        verified = await _until(lambda: [d for d in s.diagnostics("stencil.cu")
                                         if "Verified: the fix re-models at" in d.message
                                         and d.code == "double_precision_constant"])
        assert verified, [d.message[-80:] for d in s.diagnostics("stencil.cu")]
        lenses = await s.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=s.uri("stencil.cu"))))
        assert any("best fix verified" in (c.command.title if c.command else "") for c in lenses)


async def test_verification_is_off_with_the_setting(lsp, workspace):
    shutil.copy(EXAMPLES / "stencil_double_const.cu", workspace / "stencil.cu")
    async with lsp({"verify": {"enabled": False}}) as s:
        await s.open("stencil.cu")
        await asyncio.sleep(3)  # what a background batch would need to compile one fix at least
        assert not [d for d in s.diagnostics("stencil.cu") if "Verified:" in d.message]
