"""Inclusion context through the real server (issue #14 item 4): opening a `.cuh` that nvcc does
not compile on its own analyses it in the translation unit of the workspace file that includes it
(tests/inputs/inclusion/), and the diagnostics, lenses and hovers are for the header's lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types

INCLUSION = Path(__file__).resolve().parents[1] / "inputs" / "inclusion"


async def test_a_header_opened_in_the_editor_is_analysed_in_its_includers_unit(lsp, workspace):
    shutil.copytree(INCLUSION, workspace / "inclusion")
    async with lsp() as s:
        done = await s.open("inclusion/kernels.cuh")
        assert done["compiled"] is True, s.log_text()
        diagnostics = s.diagnostics("inclusion/kernels.cuh")
        assert not [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error], diagnostics
        assert any("analysed in the translation unit of" in d.message and "main.cu" in d.message for d in diagnostics)
        lenses = await s.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=s.uri("inclusion/kernels.cuh"))))
        # one lens per kernel the header defines (tiled_scale at line 7, fill at line 13), none for
        # main.cu's unrolled_add, and none says the launch is assumed: main.cu's launches fold
        assert sorted({lens.range.start.line for lens in lenses}) == [6, 12]
        assert not [lens for lens in lenses if lens.command and "launch assumed" in lens.command.title]
        hover = await s.hover("inclusion/kernels.cuh", 9, 8)  # `x[i] = x[i] * 0.5f + 1.0f;`
        assert hover is not None
