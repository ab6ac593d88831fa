"""Protocol fuzzing: thousands of malformed and hostile JSON-RPC messages over raw stdio.

Two kinds of damage, tested differently:

- *in-stream* faults (a well-framed body that is not JSON, not a request, has wrong types,
  unknown methods, out-of-range positions, unopened documents, huge documents, odd ids...):
  the stream stays in step, so thousands go through one server process in blocks; after
  each block a valid `kernelscope/stats` and a hover must be answered correctly;
- *framing* faults (a missing, negative, non-numeric, too small or too large Content-Length,
  a truncated body): the bytes after them may be read as part of the broken frame, so each
  runs in a fresh server and the test states how many following messages it may cost.

Every request must get exactly the error JSON-RPC 2.0 / LSP 3.17 prescribe (a ParseError or
InvalidRequest for a message without a usable id goes back with "id": null); an internal
error (-32603) counts as a bug. Every wait has a timeout, so a hang fails instead of stalling CI.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from .client import RawServer, frame, left_after_teardown, processes_of
from .conftest import report, scaled

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603

#: messages per block between two sentinel checks
BLOCK = 40
SETTINGS = {"analysis": {"emulate": False}, "debounceMs": 0}


class Expect:
    """What a fuzzed message must produce: nothing checkable, a reply to `id` (with one of `codes`,
    or any non-internal answer when codes is None), or an error with id null."""

    def __init__(self, kind: str, msg_id: Any = None, codes: set[int] | None = None):
        self.kind, self.id, self.codes = kind, msg_id, codes


NONE = Expect("none")


def _pos(rng: random.Random) -> dict[str, Any]:
    pick = [0, 1, 5, 30, 10**9, -1, -(10**9), 2**31, 2**53]
    return {"line": rng.choice(pick), "character": rng.choice(pick)}


class Fuzzer:
    def __init__(self, rng: random.Random, root: Path, anchor_uri: str):
        self.rng = rng
        self.root = root
        self.anchor = anchor_uri
        self.ids = iter(range(1, 10**9))
        self.big_docs = 0

    def uri(self) -> str:
        r = self.rng.random()
        if r < 0.4:
            return self.anchor
        if r < 0.6:
            return (self.root / f"nowhere-{self.rng.randrange(50)}.cu").as_uri()
        return self.rng.choice(["untitled:Untitled-1", "file:///", "", "file:///dev/null", "http://x/y.cu",
                                "file:///%ZZ", "file:" + "a" * 5000, "file:///tmp/\u00e9\U0001f600/\u4e2d.cu"])

    def request(self, method: str, params: Any) -> tuple[bytes, int]:
        msg_id = next(self.ids)
        return frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})), msg_id

    def messages(self) -> Iterator[tuple[bytes, Expect]]:
        gens = [self.not_json, self.not_a_request, self.unknown_method, self.wrong_types, self.positions,
                self.documents, self.odd_ids, self.commands, self.headers, self.settings_noise]
        weights = [12, 8, 10, 14, 22, 14, 6, 6, 5, 3]
        while True:
            yield self.rng.choices(gens, weights)[0]()

    # -- generators ------------------------------------------------------------------------

    def not_json(self) -> tuple[bytes, Expect]:
        body, _ = self.request("textDocument/hover", {"textDocument": {"uri": self.anchor}, "position": _pos(self.rng)})
        text = body.split(b"\r\n\r\n", 1)[1]
        choice = self.rng.randrange(6)
        if choice == 0:
            bad = text[: self.rng.randrange(1, len(text) - 1)]  # a strict prefix of an object is never JSON
        elif choice == 1:
            bad = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 200)))
            bad = b"{" + bad  # an unclosed object: never JSON
        elif choice == 2:
            bad = b"\xff\xfe\x00{" + text  # not UTF-8/16/32 JSON
        elif choice == 3:
            bad = b"[" * 200_000  # nesting deeper than any parser's recursion limit
        elif choice == 4:
            bad = text.replace(b'"', b"'")
        else:
            bad = b""  # Content-Length: 0
        return frame(bad), Expect("null", codes={PARSE_ERROR})

    def not_a_request(self) -> tuple[bytes, Expect]:
        msg_id = next(self.ids)
        choice = self.rng.randrange(6)
        if choice == 0:
            return frame(self.rng.choice([b"42", b'"hello"', b"null", b"true", b"[]", b"3.5"])), \
                Expect("null", codes={INVALID_REQUEST})
        if choice == 1:  # a batch: LSP has none
            return frame(json.dumps([{"jsonrpc": "2.0", "id": msg_id, "method": "kernelscope/stats"}])), \
                Expect("null", codes={INVALID_REQUEST})
        if choice == 2:  # no "jsonrpc"
            return frame(json.dumps({"id": msg_id, "method": "kernelscope/stats"})), \
                Expect("reply", msg_id, {INVALID_REQUEST})
        if choice == 3:
            return frame(json.dumps({"jsonrpc": "1.0", "id": msg_id, "method": "kernelscope/stats"})), \
                Expect("reply", msg_id, {INVALID_REQUEST})
        if choice == 4:  # a method that is not a string
            return frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": self.rng.choice([5, None, [], {}])})), \
                Expect("reply", msg_id, {INVALID_REQUEST})
        # a response to a request the server never sent: ignored
        return frame(json.dumps({"jsonrpc": "2.0", "id": 10**12 + msg_id, "result": {"x": 1}})), NONE

    def unknown_method(self) -> tuple[bytes, Expect]:
        name = self.rng.choice(["kernelscope/nope", "textDocument/doesNotExist", "$/unknownRequest", "",
                                "a" * 2000, "\u00e9\U0001f600", "workspace/executeCommand2"])
        if self.rng.random() < 0.5:
            data, msg_id = self.request(name, self.rng.choice([None, {}, [], 1, "x"]))
            return data, Expect("reply", msg_id, {METHOD_NOT_FOUND})
        return frame(json.dumps({"jsonrpc": "2.0", "method": name, "params": {}})), NONE

    def wrong_types(self) -> tuple[bytes, Expect]:
        method = self.rng.choice(["textDocument/hover", "textDocument/codeAction", "textDocument/codeLens",
                                  "workspace/executeCommand"])
        params = self.rng.choice([
            "abc", 7, [1, 2], {"textDocument": 5}, {"textDocument": {"uri": 5}, "position": {"line": "x"}},
            {"textDocument": {"uri": self.anchor}, "position": {"line": 1.5, "character": None}},
            {"textDocument": {"uri": self.anchor}},  # required fields missing
            {"command": 12, "arguments": "x"},
        ])
        data, msg_id = self.request(method, params)
        if method == "textDocument/codeLens" and isinstance(params, dict) and isinstance(params.get("textDocument"), dict):
            # codeLens needs only textDocument.uri, and lsprotocol's converter coerces a uri of 5 or null
            # to a string: an empty answer is as correct as InvalidParams.
            return data, Expect("reply", msg_id, None)
        return data, Expect("reply", msg_id, {INVALID_PARAMS})

    def positions(self) -> tuple[bytes, Expect]:
        uri = self.uri()
        method = self.rng.choice(["textDocument/hover", "textDocument/codeAction", "textDocument/codeLens"])
        if method == "textDocument/hover":
            params: Any = {"textDocument": {"uri": uri}, "position": _pos(self.rng)}
        elif method == "textDocument/codeAction":
            params = {"textDocument": {"uri": uri}, "range": {"start": _pos(self.rng), "end": _pos(self.rng)},
                      "context": {"diagnostics": []}}
        else:
            params = {"textDocument": {"uri": uri}}
        data, msg_id = self.request(method, params)
        # Negative or beyond-uinteger numbers violate the LSP types: InvalidParams is correct, so is a lenient answer.
        return data, Expect("reply", msg_id, None)

    def documents(self) -> tuple[bytes, Expect]:
        uri = self.uri()
        if uri == self.anchor:
            uri = (self.root / "victim.cu").as_uri()  # the anchor's text stays what the sentinel hovers on
        choice = self.rng.randrange(6)
        if choice == 0 and self.big_docs < 3:
            self.big_docs += 1
            text = ("// " + "\u00e9\U0001f600\u4e2d" * 20 + "\n") * 60_000  # about 5 MB
            return frame(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}})), NONE
        if choice <= 1:
            return frame(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri, "languageId": "cuda", "version": 1,
                                 "text": "__global__ void k() {}\n\u00e9\U0001f600\n"}}})), NONE
        if choice == 2:
            change: dict[str, Any] = {"range": {"start": _pos(self.rng), "end": _pos(self.rng)},
                                      "text": self.rng.choice(["", "x", "\n\n", "\U0001f600\u00e9"])}
            return frame(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": self.rng.randrange(-5, 10**6)},
                "contentChanges": [change]}})), NONE
        if choice == 3:
            return frame(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didClose",
                                     "params": {"textDocument": {"uri": uri}}})), NONE
        if choice == 4:  # a save of a file that does not exist: one message, no crash
            return frame(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
                "textDocument": {"uri": (self.root / f"nowhere-{self.rng.randrange(3)}.cu").as_uri()}}})), NONE
        return frame(json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                 "params": {"id": self.rng.choice([1, "x", None, 10**15])}})), NONE

    def odd_ids(self) -> tuple[bytes, Expect]:
        odd = self.rng.choice([1.5, {"a": 1}, [1], True, None])
        return frame(json.dumps({"jsonrpc": "2.0", "id": odd, "method": "kernelscope/stats"})), \
            Expect("null", codes={INVALID_REQUEST})

    def commands(self) -> tuple[bytes, Expect]:
        command = self.rng.choice(["kernelscope.showReport", "kernelscope.explain", "kernelscope.nope", ""])
        args = self.rng.choice([None, [], [self.anchor], [self.anchor, "nope"], [1, 2, 3], ["x"] * 50])
        data, msg_id = self.request("workspace/executeCommand", {"command": command, "arguments": args})
        return data, Expect("reply", msg_id, None)

    def headers(self) -> tuple[bytes, Expect]:
        data, msg_id = self.request("kernelscope/stats", {})
        body = data.split(b"\r\n\r\n", 1)[1]
        head = self.rng.choice([
            b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=latin1\r\n\r\n",
            b"content-length:%d\r\n\r\n",
            b"Content-Type: text/plain\r\nContent-Length:   %d  \r\nX-Whatever: 1\r\n\r\n",
        ]) % len(body)
        return head + body, Expect("reply", msg_id, set())  # set(): must succeed

    def settings_noise(self) -> tuple[bytes, Expect]:
        return frame(json.dumps({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {
            "settings": self.rng.choice([None, 5, {"kernelscope": {"debounceMs": "x", "analysis": 3}}])}})), NONE


def check(reply: dict[str, Any], expect: Expect) -> str | None:
    """A description of what is wrong with `reply`, or None."""
    err = reply.get("error")
    if expect.codes == set():
        return None if err is None else f"expected success, got {err}"
    if expect.codes is None:
        if err is not None and err.get("code") == INTERNAL_ERROR:
            return f"internal error: {err.get('message')}"
        return None
    if err is None or err.get("code") not in expect.codes:
        return f"expected error {sorted(expect.codes)}, got {err or reply.get('result')!r}"
    return None


def sentinel(server: RawServer, anchor: str) -> None:
    stats = server.stats(timeout=20)
    assert isinstance(stats.get("rssBytes"), int) and stats["openDocuments"] >= 1
    hover = server.request("textDocument/hover", {"textDocument": {"uri": anchor},
                                                 "position": {"line": 0, "character": 0}}, 20)
    assert hover is None or "contents" in hover


@pytest.mark.slow
def test_in_stream_fuzz_never_crashes_hangs_or_misanswers(examples_ws: Path):
    total = scaled(10_000)
    per_server = max(BLOCK, total // 2)
    rng = random.Random(20260911)
    sent = checked = blocks = 0
    problems: list[str] = []
    peak_rss = 0
    started = time.monotonic()
    while sent < total:
        with RawServer(examples_ws, SETTINGS, env={"KERNELSCOPE_FUZZ": "1"}) as server:
            server.settings = {**SETTINGS, "cache": {"directory": str(examples_ws.parent / "cache")}}
            server.initialize()
            anchor = server.uri("strided_access.cu")
            n = len(server.notifications)
            server.open("strided_access.cu")
            server.finished(anchor, n)
            fuzz = Fuzzer(rng, examples_ws, anchor).messages()
            in_this = 0
            while in_this < per_server and sent < total:
                pending: list[tuple[Expect, bytes]] = []
                nulls_before = len(server.null_id_errors)
                for _ in range(min(BLOCK, total - sent)):
                    data, expect = next(fuzz)
                    server.send_raw(data)
                    sent += 1
                    in_this += 1
                    if expect.kind != "none":
                        pending.append((expect, data))
                for expect, data in pending:
                    if expect.kind == "reply":
                        problem = check(server.wait_response(expect.id), expect)
                        if problem:
                            problems.append(f"{problem} for {data[:300]!r}")
                    checked += 1
                sentinel(server, anchor)  # also orders the null-id errors: they precede the sentinel's reply
                nulls = server.null_id_errors[nulls_before:]
                want = [e for e, _ in pending if e.kind == "null"]
                if len(nulls) != len(want):
                    problems.append(f"{len(want)} messages needed an id-null error, {len(nulls)} came")
                for (e, data), got in zip([p for p in pending if p[0].kind == "null"], nulls):
                    if got["error"]["code"] not in e.codes:
                        problems.append(f"expected {e.codes}, got {got['error']} for {data[:200]!r}")
                blocks += 1
                peak_rss = max(peak_rss, server.rss_bytes())
                assert server.alive(), server.stderr_tail()
                assert not server.reader_error, server.reader_error
            popups = server.messages()
            assert len(popups) <= 10, f"the editor was flooded with {len(popups)} messages: {popups[:5]}"
            assert server.shutdown() == 0
            assert not processes_of(server.pgid), "processes left behind"
    report("protocol_fuzz", messages=sent, replies_checked=checked, blocks=blocks, problems=len(problems),
           peak_rss_mb=round(peak_rss / 2**20, 1), seconds=round(time.monotonic() - started, 1))
    assert not problems, "\n".join(problems[:20])


# -- framing faults: one fresh server each ---------------------------------------------------

def _stats_frame(msg_id: int) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "kernelscope/stats", "params": {}}))


BODY = b'{"jsonrpc": "2.0", "id": 1, "method": "kernelscope/stats", "params": {}}'

#: (name, bytes, how many of the valid messages sent right after it may go unanswered)
FRAMING = [
    ("missing Content-Length", b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + BODY, 1),
    ("negative Content-Length", b"Content-Length: -5\r\n\r\n" + BODY, 1),
    ("non-numeric Content-Length", b"Content-Length: lots\r\n\r\n" + BODY, 1),
    ("Content-Length too small", b"Content-Length: %d\r\n\r\n" % (len(BODY) - 10) + BODY, 1),
    ("Content-Length too large by 20", b"Content-Length: %d\r\n\r\n" % (len(BODY) + 20) + BODY, 1),
    ("LF-only header lines", b"Content-Length: %d\n\n" % len(BODY) + BODY, 0),
    ("garbage line before the header", b"hello there\r\n" + frame(BODY), 0),
    ("Content-Length beyond the size limit, honest", b"Content-Length: %d\r\n\r\n" % (70 * 2**20)
     + b" " * (70 * 2**20), 0),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,data,may_lose", FRAMING, ids=[f[0] for f in FRAMING])
def test_framing_fault_costs_at_most_the_next_message(examples_ws: Path, name: str, data: bytes, may_lose: int):
    with RawServer(examples_ws, SETTINGS) as server:
        server.initialize()
        server.send_raw(data)
        answered = None
        for i in range(may_lose + 1):
            msg_id = 500 + i
            server.send_raw(_stats_frame(msg_id))
            try:
                reply = server.wait_response(msg_id, timeout=5 if i < may_lose else 20)
            except AssertionError:
                continue
            answered = reply
            break
        assert answered is not None and "result" in answered, f"{name}: the stream did not recover"
        assert server.alive()
        assert server.rss_bytes() < 400 * 2**20, "memory grew with the bogus length"
        assert server.shutdown() == 0


@pytest.mark.slow
@pytest.mark.parametrize("length", [10**12, 10**30])
def test_bogus_huge_length_waits_with_bounded_memory_and_exits_on_eof(examples_ws: Path, length: int):
    """Unrecoverable by design: the server skips the announced bytes, which never come. It must
    neither allocate them nor hang once the client goes away."""
    with RawServer(examples_ws, SETTINGS) as server:
        server.initialize()
        server.send_raw(b"Content-Length: %d\r\n\r\n" % length + BODY + _stats_frame(2))
        time.sleep(1.0)
        assert server.alive()
        assert server.rss_bytes() < 400 * 2**20
        assert server.stop(timeout=20) in (0, 1)


@pytest.mark.slow
def test_eof_in_the_middle_of_a_body_exits_cleanly(examples_ws: Path):
    with RawServer(examples_ws, SETTINGS) as server:
        server.initialize()
        server.send_raw(b"Content-Length: 500\r\n\r\n" + BODY)
        assert server.stop(timeout=20) in (0, 1)


@pytest.mark.slow
def test_requests_after_shutdown_get_invalid_request_and_exit_exits(examples_ws: Path):
    with RawServer(examples_ws, SETTINGS) as server:
        server.initialize()
        assert server.request("shutdown") is None
        for method in ("kernelscope/stats", "textDocument/hover", "nope/unknown"):
            reply = server.wait_response(server.request_async(method, {}), 10)
            assert reply.get("error", {}).get("code") == INVALID_REQUEST, reply
        server.notify("textDocument/didOpen", {"textDocument": {"uri": server.uri("x.cu"), "languageId": "cuda",
                                                                "version": 1, "text": ""}})  # ignored
        server.notify("exit")
        assert server.proc.wait(20) == 0


@pytest.mark.slow
def test_exit_without_shutdown_exits_with_1(examples_ws: Path):
    with RawServer(examples_ws, SETTINGS) as server:
        server.initialize()
        server.notify("exit")
        assert server.proc.wait(20) == 1


@pytest.mark.slow
def test_exit_during_an_analysis_exits_at_once_with_stdin_still_open(examples_ws: Path):
    # A client may wait for the process to end before closing its end of the pipe. Exit while the
    # second stage (sensitivity, what-if) runs: its progress bar ends after stdout is closed, and that
    # failed write once set off an endless chain of log messages about failing to send log messages.
    with RawServer(examples_ws, {"debounceMs": 0}) as server:
        server.initialize()
        server.open("sgemm_tiled.cu")
        quick = server.wait_notification(lambda n: n["method"] == "kernelscope/analysisFinished"
                                         and n["params"].get("depth") == "quick", 0, 120)
        assert quick and server.stats()["running"] == 1, "the second stage was not running"
        server.notify("exit")  # without shutdown: nothing was cancelled before the pipe closed
        assert server.proc.wait(20) == 1, server.stderr_tail()
        assert not left_after_teardown(server.pgid), "a compiler outlived the server"
        # Against a client that does not drain stderr, that chain blocked the server for good.
        log = server.stderr_tail(1 << 20)
        assert "I/O operation on closed file" not in log and "Error sending data" not in log, log
