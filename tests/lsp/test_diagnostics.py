"""Open -> diagnostics; edits move them; save -> new analysis at the new lines; close clears them."""

from lsprotocol import types

UNUSED_LINE = 3  # 0-based line of `int unused = 3;` in tracked.cu


def _insert(line: int, text: str) -> types.TextDocumentContentChangePartial:
    at = types.Position(line=line, character=0)
    return types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=text)


def _nvcc(diags):
    return [d for d in diags if d.source != "kernelscope"]


async def test_open_publishes_compiler_and_performance_diagnostics(lsp):
    async with lsp() as s:
        done = await s.open("tracked.cu")
        assert done["cache"] == "miss" and done["compiled"] is True
        warn = _nvcc(s.diagnostics("tracked.cu"))
        assert [d.range.start.line for d in warn] == [UNUSED_LINE]
        assert warn[0].severity == types.DiagnosticSeverity.Warning and "unused" in warn[0].message
        assert warn[0].source == "nvcc"

        await s.open("saxpy.cu")
        perf = [d for d in s.diagnostics("saxpy.cu") if d.source == "kernelscope"]
        assert perf, f"no performance findings for saxpy.cu: {s.diagnostics('saxpy.cu')}"
        for d in perf:
            assert d.message.startswith(("[modeled] ", "[measured] ", "[static] "))
            assert d.severity in (types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Information,
                                  types.DiagnosticSeverity.Hint)


async def test_results_follow_edits_and_edited_lines_are_withdrawn(lsp):
    async with lsp() as s:
        await s.open("tracked.cu")
        # Two lines typed above the warning: it moves down without a new analysis.
        s.change("tracked.cu", _insert(1, "// one\n// two\n"))
        await s.published()
        assert [d.range.start.line for d in _nvcc(s.diagnostics("tracked.cu"))] == [UNUSED_LINE + 2]
        hover = await s.hover("tracked.cu", 0, 0)
        assert hover is None  # line 0 has no finding; nothing shows at a shifted-away place

        # Editing the warning's own line withdraws it: its text no longer matches the analysis.
        line = UNUSED_LINE + 2
        s.change("tracked.cu", types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=2), end=types.Position(line=line, character=2)),
            text="  "))
        await s.published()
        assert _nvcc(s.diagnostics("tracked.cu")) == []
        stats = await s.stats()
        assert stats["compilerRuns"] == 1  # following edits never recompiles


async def test_edit_and_save_reanalyses_at_shifted_lines(lsp):
    async with lsp() as s:
        await s.open("tracked.cu")
        text = s.text("tracked.cu")
        new = "// a new first line\n" + text
        s.change("tracked.cu", _insert(0, "// a new first line\n"))
        done = await s.save("tracked.cu", new)
        assert done["cache"] == "miss"
        assert [d.range.start.line for d in _nvcc(s.diagnostics("tracked.cu"))] == [UNUSED_LINE + 1]
        assert (await s.stats())["compilerRuns"] == 2


async def test_close_clears_diagnostics(lsp):
    async with lsp() as s:
        await s.open("tracked.cu")
        assert s.diagnostics("tracked.cu")
        s.close("tracked.cu")
        await s.published()
        assert s.diagnostics("tracked.cu") == []


async def test_compile_error_is_an_error_diagnostic_at_its_line(lsp):
    async with lsp() as s:
        done = await s.open("broken.cu")
        assert done["compiled"] is False
        errors = [d for d in s.diagnostics("broken.cu") if d.severity == types.DiagnosticSeverity.Error]
        assert len(errors) == 1 and errors[0].range.start.line == 4, s.diagnostics("broken.cu")
        assert "undeclared_value" in errors[0].message and errors[0].source == "nvcc"
        # The server is still up and answers.
        assert (await s.stats())["failed"] == 0
