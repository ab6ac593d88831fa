"""Failure modes: missing toolchain, invalid settings, configuration race, workspace settings files."""

import asyncio

from lsprotocol import types

MISSING = "/nonexistent/cuda/bin/nvcc"


async def test_missing_nvcc_gives_one_message_and_the_server_stays_up(lsp):
    # An explicit nvccPath that does not exist is an error, never a silent fallback to PATH or the wheels.
    async with lsp({"analysis": {"nvccPath": MISSING}}) as s:
        done = await s.open("tracked.cu")
        assert "error" in done and "nvccPath" in done["error"]
        await s.save("tracked.cu")
        await s.open("saxpy.cu")
        shown = [m for m in s.client.messages if m.type == types.MessageType.Error]
        assert len(shown) == 1, shown
        assert MISSING in shown[0].message and "nvccPath" in shown[0].message
        stats = await s.stats()
        assert stats["compilerRuns"] == 0 and stats["openDocuments"] == 2
        assert await s.hover("tracked.cu", 3, 20) is None  # answers, with nothing to show


async def test_invalid_settings_one_message_naming_the_fields_and_defaults_used(lsp):
    async with lsp({"maxConcurrentAnalyses": 0, "analysis": {"arch": "sm_banana"}}) as s:
        done = await s.open("tracked.cu")
        assert done["compiled"] is True  # analysed with the default arch and concurrency
        errors = [m.message for m in s.client.messages if m.type == types.MessageType.Error]
        assert len(errors) == 1, errors
        assert "kernelscope.maxConcurrentAnalyses" in errors[0] and "kernelscope.analysis.arch" in errors[0]


async def test_settings_arriving_late_are_awaited_before_analysing(lsp):
    # The client answers workspace/configuration only after 1 s; didOpen is sent before that.
    # Were the race not handled, the analysis would run with defaults (and succeed).
    async with lsp({"analysis": {"nvccPath": MISSING}}, config_delay=1.0) as s:
        done = await s.open("tracked.cu")
        assert "error" in done and MISSING in done["error"]


async def test_workspace_file_settings_are_used_and_their_origin_is_logged(lsp, workspace):
    (workspace / ".kernelscope.toml").write_text(
        f'[analysis]\nnvcc_path = "{MISSING}"\n\n[profile]\ncommand = ["./app"]\n')
    # A workspace file's nvccPath counts only in a trusted workspace (tests/stress/test_security.py: untrusted).
    async with lsp(init_options={"workspaceTrusted": True}) as s:
        done = await s.open("tracked.cu")
        assert MISSING in done["error"]
        log = s.log_text()
        assert "analysis.nvccPath from workspace_file" in log and "profile.command from workspace_file" in log


async def test_did_change_configuration_reloads_and_reanalyses(lsp):
    async with lsp({"analysis": {"nvccPath": MISSING}}) as s:
        done = await s.open("tracked.cu")
        assert "error" in done
        n = len(s.finished)
        s.client.set_configuration({"cache": {"directory": str(s.root.parent / "cache")}}, section="kernelscope")
        s.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        done = await s.wait_finished(s.uri("tracked.cu"), n)
        assert done["compiled"] is True and done["reason"] == "settings"
        await asyncio.sleep(0)
