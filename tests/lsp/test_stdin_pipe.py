"""stdin read on the event loop where it is a pipe (server/rpc.py `PipeReader`): the framing
`read_messages` relies on (a line, a body of n bytes, a short body at end of file, an oversized
line skipped), over a real pipe. Every end-to-end LSP test reads its messages through it too."""

from __future__ import annotations

import os
import sys


from kernelscope.server import rpc


async def _reader_over(data: bytes) -> rpc.PipeReader:
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return await rpc.PipeReader.open(os.fdopen(r, "rb", buffering=0))


async def test_lines_and_bodies_come_as_a_file_would_give_them():
    body = b'{"jsonrpc": "2.0", "method": "exit"}'
    reader = await _reader_over(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) + b"tail")
    assert await reader.readline() == b"Content-Length: %d\r\n" % len(body)
    assert await reader.readline() == b"\r\n"
    assert await reader.readexactly(len(body)) == body
    assert await reader.readexactly(10) == b"tail"  # end of file in a body: what there is
    assert await reader.readline() == b""  # end of file


async def test_a_line_over_the_limit_is_dropped_and_the_next_one_read(monkeypatch):
    monkeypatch.setattr(rpc, "MAX_MESSAGE_BYTES", 1024)
    reader = await _reader_over(b"x" * 5000 + b"\nContent-Length: 2\r\n")
    assert (await reader.readline()).strip() not in (b"", b"x" * 5000)  # not a header, not end of file
    assert await reader.readline() == b"Content-Length: 2\r\n"


async def test_a_pipe_on_stdin_is_read_on_the_loop_and_anything_else_on_threads(monkeypatch, tmp_path):
    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(r, "r"))
    try:
        assert isinstance(await rpc.stdin_reader(None), rpc.PipeReader)
    finally:
        os.close(w)
    f = tmp_path / "messages"
    f.write_bytes(b"")
    with open(f) as regular:
        monkeypatch.setattr(sys, "stdin", regular)
        assert not isinstance(await rpc.stdin_reader(None), rpc.PipeReader)
