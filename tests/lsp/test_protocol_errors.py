"""Protocol errors a client can cause get a clean answer and one log line, never a traceback
(issue #30; docs/reliability.md): a negative position in didChange, a second `initialize`, and the
client's reply to a request the server cancelled meanwhile. Against the real server (pytest-lsp);
pytest-lsp forwards the server's stderr to the test's, so `capfd` sees what a user's log would."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from conftest import TIMEOUT

#: the test's own cache folder counts only in a trusted workspace (docs/configuration.md, "Security")
TRUSTED = {"workspaceTrusted": True}


def _no_traceback(s, err: str) -> None:
    logged = "\n".join(m.message for m in s.client.log_messages)
    for text in (logged, err):
        assert "Traceback" not in text and "InvalidStateError" not in text, text[-3000:]


async def test_a_negative_position_in_did_change_is_one_log_line_and_the_document_stays_usable(lsp, capfd):
    async with lsp(init_options=TRUSTED) as s:
        await s.open("saxpy.cu")
        uri = s.uri("saxpy.cu")
        # written as plain JSON: lsprotocol's own Position refuses -1, as the server's reader does
        s.client.protocol._send_data({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_DID_CHANGE, "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 1}},
                                "text": "x"}]}})
        for _ in range(200):
            if any("didChange" in m.message for m in s.client.log_messages):
                break
            await asyncio.sleep(0.05)
        said = [m for m in s.client.log_messages if "didChange" in m.message]
        assert len(said) == 1 and "Position.line" in said[0].message and "-1" in said[0].message, said
        # the server still answers, and the buffer it tracks is the one before the refused change
        assert (await s.stats())["openDocuments"] == 1
    _no_traceback(s, capfd.readouterr().err)


async def test_a_second_initialize_is_refused_with_invalid_request(lsp, capfd):
    async with lsp(init_options=TRUSTED) as s:
        await s.open("saxpy.cu")
        try:
            await asyncio.wait_for(s.client.protocol.send_request_async(
                types.INITIALIZE, types.InitializeParams(capabilities=types.ClientCapabilities())), TIMEOUT)
        except Exception as e:  # pygls raises the JSON-RPC error as an exception
            code = getattr(e, "code", None)
            assert code == types.ErrorCodes.InvalidRequest, repr(e)
        else:
            raise AssertionError("a second initialize was accepted")
        # the first session's state is intact: the open document's diagnostics still come
        n = len(s.finished)
        await s.save("saxpy.cu")
        assert s.finished[n:], "no analysis after the refused initialize"
    _no_traceback(s, capfd.readouterr().err)


async def test_the_reply_to_a_request_the_server_cancelled_is_ignored_quietly(lsp, capfd):
    async with lsp(init_options=TRUSTED) as s:
        asked, answered = asyncio.Event(), asyncio.Event()

        async def slow_create(params: types.WorkDoneProgressCreateParams) -> None:
            # the client answers the progress bar's creation late, after the server gave up on it
            asked.set()
            await asyncio.sleep(1.5)
            answered.set()

        # replaces pytest-lsp's immediate answer (the handler table is the client's feature map)
        s.client.protocol.fm.features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = slow_create
        uri = s.uri("saxpy.cu")
        await s.open("saxpy.cu", wait=False)
        await asyncio.wait_for(asked.wait(), TIMEOUT)  # the first analysis now waits on the progress bar
        n = len(s.finished)
        await s.save("saxpy.cu", wait=False)  # supersedes it: its task, and the request it awaits, are cancelled
        await asyncio.wait_for(answered.wait(), TIMEOUT)
        done = await s.wait_finished(uri, n)
        assert done.get("compiled") is True, done
        await asyncio.sleep(0.3)  # the late reply has been read
        await s.stats()  # and the server still answers
    _no_traceback(s, capfd.readouterr().err)
