"""JSON-RPC over stdio: the framing and error replies that pygls 2.1 leaves out.

pygls's reader loop and protocol drop several malformed messages without an answer, so a
client waiting on that request hangs (found by tests/stress/test_protocol_fuzz.py):

- a body that is not JSON: JSON-RPC 2.0 §5.1 asks for ParseError (-32700) with id null;
- a body that is JSON but not a request object (a number, an array, no "jsonrpc", a
  non-string method): InvalidRequest (-32600), with its id when it has a usable one;
- a request whose params do not fit the method's types: InvalidParams (-32602) with its id
  (pygls raised inside `json.loads` and lost the id);
- a request after `shutdown`: InvalidRequest (LSP 3.17, "Shutdown Request"); pygls ignored it;
- a Content-Length beyond `MAX_MESSAGE_BYTES`: pygls's `stdin.read(n)` allocated n bytes up
  front; the body is now skipped in chunks, which keeps the stream in step when the length
  was honest and memory bounded when it was not.
- a second `initialize`: InvalidRequest (LSP 3.17: "sent only once"); pygls answered it and
  rebuilt the workspace, dropping the open documents' state;
- a notification whose params do not fit (a negative position in `didChange`): one log line
  naming the method and the reason, where pygls logged a 94-line cattrs traceback;
- a client's reply to a request of ours that we cancelled meanwhile (an analysis superseded
  while its progress bar was being created): ignored, where pygls set the result of the
  cancelled future and the reader logged an InvalidStateError traceback.

Header lines are matched case-insensitively with any spacing; other headers (Content-Type,
charset) are ignored: LSP bodies are UTF-8 JSON (and `json.loads` also detects UTF-16/32).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import threading
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("kernelscope.server.rpc")

#: largest body read into memory; a 5 MB didOpen is fine, a bogus 10^12 is skipped
MAX_MESSAGE_BYTES = 64 * 2**20
_SKIP_CHUNK = 2**20


@dataclass(frozen=True)
class _Rejected:
    """A message that gets an error reply instead of a handler (built while parsing)."""

    id: int | str | None
    error: JsonRpcException


def _usable_id(msg_id: Any) -> bool:
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)


class _QuietStructureErrors(logging.Filter):
    """Drops pygls's "Unable to deserialize message" record, a full cattrs traceback: the protocol
    below says the same in one line, with the method's name."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietStructureErrors())


def _reason(e: BaseException) -> str:
    """The innermost messages of a cattrs validation error ("Position.line should be in range ...")."""
    inner = getattr(e, "exceptions", None)  # an exception group (cattrs brings the backport on 3.10)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(dict.fromkeys(_reason(x) for x in inner))
    return str(e) if e.__cause__ is None else _reason(e.__cause__)


class KernelscopeProtocol(LanguageServerProtocol):
    _initialize_seen = False

    def structure_message(self, data: dict[str, Any]):
        if "jsonrpc" not in data:
            return data  # a nested object (json.loads calls this hook bottom-up) or an invalid message
        is_request = "method" in data and "id" in data
        if is_request and data["jsonrpc"] != self.VERSION:
            return _Rejected(data["id"] if _usable_id(data["id"]) else None, JsonRpcInvalidRequest())
        if is_request and (not isinstance(data["method"], str) or not _usable_id(data["id"])):
            return _Rejected(data["id"] if _usable_id(data["id"]) else None, JsonRpcInvalidRequest())
        if is_request and self._shutdown and data["method"] != types.EXIT:
            return _Rejected(data["id"], JsonRpcInvalidRequest("The server is shutting down"))
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            what = data.get("method", f"the reply to request {data.get('id')!r}")
            if isinstance(e, JsonRpcInvalidParams):  # the client's mistake: one line, with the reason
                log.warning("invalid params for %s: %s", what, _reason(e.__cause__ or e))
            else:  # pygls's converter failed on params of the right shape: ours, with its traceback
                log.error("cannot read %s", what, exc_info=e.__cause__ or e)
            if is_request:
                return _Rejected(data["id"], JsonRpcInvalidParams(f"Invalid params for {data['method']}")
                                 if isinstance(e, JsonRpcInvalidParams) else e)
            raise

    def handle_message(self, message: Any):
        if isinstance(message, _Rejected):
            self._reply_error(message.id, message.error)
            return
        if not hasattr(message, "jsonrpc") or message.jsonrpc != self.VERSION:
            # Not a JSON-RPC 2.0 message: answer only what looks like a request.
            msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            method = message.get("method") if isinstance(message, dict) else getattr(message, "method", None)
            if not isinstance(message, dict) and not hasattr(message, "jsonrpc"):
                self._reply_error(None, JsonRpcInvalidRequest())  # a number, a string, an array (no batches in LSP)
            elif method is not None and msg_id is not None:
                self._reply_error(msg_id if _usable_id(msg_id) else None, JsonRpcInvalidRequest())
            else:
                log.warning("ignored a message that is not JSON-RPC 2.0")
            return
        method = getattr(message, "method", None)
        if self._shutdown and method is not None and method != types.EXIT and getattr(message, "id", None) is not None:
            self._reply_error(message.id, JsonRpcInvalidRequest("The server is shutting down"))
            return
        if method == types.INITIALIZE and getattr(message, "id", None) is not None:
            if self._initialize_seen:
                log.warning("a second initialize request was refused")
                self._reply_error(message.id, JsonRpcInvalidRequest("initialize may be sent only once"))
                return
            self._initialize_seen = True
        super().handle_message(message)

    def _handle_response(self, msg_id, result=None, error=None):
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():  # cancelled on our side while the client answered
            self._request_futures.pop(msg_id, None)
            log.debug("reply to request %s ignored: the request was cancelled", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _reply_error(self, msg_id: int | str | None, error: JsonRpcException) -> None:
        # Written as a plain dict: lsprotocol's ResponseErrorMessage omits a None id, and JSON-RPC wants "id": null.
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id,
                         "error": {"code": error.code, "message": error.message}})


class PipeReader:
    """stdin read on the event loop itself, where it is a pipe (as editors start a server).

    pygls's `StdinAsyncReader` reads each line and each body on a thread of its pool: three
    hand-overs of the interpreter lock per message, each waiting up to a switch interval behind
    an analysis running on another thread. A save arriving while background verification
    emulated took 25-40 ms to reach its handler (nvcc started that much later); here a message
    costs the loop one wake-up. Lines are bounded by `MAX_MESSAGE_BYTES`, as bodies are."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    @classmethod
    async def open(cls, pipe: Any) -> PipeReader:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream, loop=loop), pipe)
        return cls(stream)

    async def readline(self) -> bytes:
        try:
            return await self.stream.readline()
        except ValueError:  # a line over the limit, dropped from the buffer: not a header
            return b"?\n"

    async def readexactly(self, n: int) -> bytes:
        """`n` bytes, or fewer at end of file (as a file's `read`)."""
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as e:
            return e.partial


async def stdin_reader(pool: Any) -> PipeReader | StdinAsyncReader:
    """A `PipeReader` over stdin where stdin is a pipe; else pygls's reader on `pool`'s threads. Only
    a pipe: the loop puts the descriptor in non-blocking mode, which a socket or terminal shares with
    stdout when one description serves both."""
    try:
        if stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode):
            return await PipeReader.open(sys.stdin.buffer)
    except (OSError, ValueError, NotImplementedError) as e:  # no descriptor, or a loop without pipes
        log.debug("stdin read on a thread: %s", e)
    return StdinAsyncReader(sys.stdin.buffer, pool)


async def read_messages(stop: threading.Event, reader: PipeReader | StdinAsyncReader,
                        protocol: KernelscopeProtocol) -> None:
    """pygls's `run_async`, with bounded bodies and an answer to every malformed request."""
    while not stop.is_set():
        length: int | None = None
        while True:
            line = await reader.readline()
            if not line:
                return  # EOF: the client is gone
            if not line.strip():
                if length is not None:
                    break
                continue  # a stray blank line, or a header block without a usable Content-Length
            # After a broken frame, the next header often arrives glued to the rest of the old body
            # (bodies end without a newline); picking it out of the line resynchronises at once.
            at = line.lower().rfind(b"content-length:")
            if at > 0:
                line = line[at:]
            name, sep, value = line.partition(b":")
            if sep and name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = None
                if length is not None and length < 0:
                    length = None
                if length is None:
                    log.error("ignored a message with Content-Length %r", value.strip()[:40])
        if length > MAX_MESSAGE_BYTES:
            log.error("skipping a %d-byte message (the limit is %d bytes)", length, MAX_MESSAGE_BYTES)
            while length > 0:
                chunk = await reader.readexactly(min(length, _SKIP_CHUNK))
                if not chunk:
                    return
                length -= len(chunk)
            continue
        body = await reader.readexactly(length)
        if len(body) < length:
            return  # EOF in the middle of a body
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except JsonRpcException:  # a notification whose params do not fit: no one to answer (logged above)
            continue
        except (ValueError, RecursionError) as e:  # includes JSONDecodeError and UnicodeDecodeError
            log.error("not JSON (%s): %r", type(e).__name__, body[:80])
            protocol._reply_error(None, JsonRpcParseError())
            continue
        except Exception:
            log.exception("unable to read a message")
            continue
        try:
            protocol.handle_message(message)
        except Exception:
            log.exception("unable to handle a message")


class _StdoutWriter(StdoutWriter):
    """pygls' stdout writer, quiet once `exit` has closed it: tasks cancelled while the event loop
    winds down still end their progress bars, and each failed write used to log a traceback."""

    def __init__(self, stdout: Any):
        super().__init__(stdout)
        self.closed = False

    def close(self) -> None:
        self.closed = True
        super().close()

    def write(self, data: bytes) -> None:
        if self.closed:
            log.debug("dropped a %d-byte message sent after exit", len(data))
            return
        super().write(data)


def serve_stdio(server: Any) -> None:
    """`LanguageServer.start_io` with `read_messages` as its loop; at exit, `server.stop_work()`."""
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(_StdoutWriter(sys.stdout.buffer))
    code: Any = 0

    async def serve() -> None:
        await read_messages(stop, await stdin_reader(server.thread_pool), server.protocol)

    try:
        asyncio.run(serve())
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except KeyboardInterrupt:
        pass
    except SystemExit as e:  # `exit`: 0 after `shutdown`, else 1 (LSP 3.17); pygls swallowed the code
        code = e.code
    finally:
        stop.set()
        # Kill what we started (compilers, profiles) even on `exit` without `shutdown`...
        try:
            server.stop_work()
        except Exception:
            log.exception("cleanup at exit failed")
        # ...then leave at once: pygls' own shutdown joins its thread pool, whose stdin reader stays
        # blocked until the client closes the pipe, and a client that waits for the process to exit
        # before closing it would wait forever. Analyses in flight die with the process.
        try:
            sys.stdout.flush()
        except Exception:
            pass
        logging.shutdown()
        os._exit(code if isinstance(code, int) else (0 if code is None else 1))
