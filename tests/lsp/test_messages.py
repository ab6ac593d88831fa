"""What the user is told (#17 item 5): Verify says its figure in window/showMessage, and the server's own
log reaches the client as window/logMessage with its level, never on stderr (Neovim logs stderr as [ERROR])."""

import asyncio

from lsprotocol import types


async def test_verify_shows_the_re_modeled_figure(lsp):
    async with lsp() as s:
        await s.open("saxpy.cu")
        uri = s.uri("saxpy.cu")
        ids = [d.data["adviceId"] for d in s.diagnostics("saxpy.cu") if d.source == "kernelscope"]
        shown = []
        for i in ids:
            before = len(s.client.messages)
            v = await s.client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="kernelscope.verifyAdvice", arguments=[uri, i]))
            if v is None:
                assert len(s.client.messages) == before  # nothing verified, nothing said
                continue
            for _ in range(50):
                if len(s.client.messages) > before:
                    break
                await asyncio.sleep(0.1)
            m = s.client.messages[-1]
            assert v["kernel"] in m.message and v["status"].replace("_", " ") in m.message
            if v.get("verified_speedup") is not None:
                assert "re-modeled" in m.message and "×" in m.message
            shown.append(m)
        assert shown, "no advice with a fix in saxpy.cu"


async def test_info_logs_are_log_messages_of_type_info_not_stderr(lsp, capfd):
    async with lsp() as s:
        await s.open("saxpy.cu")
        infos = [m for m in s.client.log_messages if "cache: miss" in m.message]
        assert infos and all(m.type == types.MessageType.Info for m in infos)
    # pytest-lsp forwards the server's stderr to the test's stderr
    err = capfd.readouterr().err
    assert "cache: miss" not in err and "INFO" not in err, err
