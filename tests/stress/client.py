"""A raw JSON-RPC client for the stress tests: bytes in, frames out, no pygls on our side.

pytest-lsp's client validates what it sends, so it cannot send a malformed message; this one
writes whatever bytes it is given and parses the server's frames on a reader thread. It answers
the server's own requests (workspace/configuration with `settings`, everything else null) and
records notifications. The server runs in its own session (process group), so the tests can
find every process it started.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from pygls.uris import from_fs_path

#: every wait in the stress tests is bounded; a reply slower than this counts as a hang
REPLY_TIMEOUT = float(os.environ.get("KERNELSCOPE_STRESS_REPLY_TIMEOUT", "20"))


class Hang(AssertionError):
    pass


def frame(body: bytes | str) -> bytes:
    if isinstance(body, str):
        body = body.encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


#: the tests' settings are the user's own, so by default they say that they trust the workspace (in an
#: untrusted one the editor's cache.directory would be set aside); init_options None says nothing
TRUSTED = {"workspaceTrusted": True}


class RawServer:
    def __init__(self, root: Path, settings: dict[str, Any] | None = None, *, init_options: Any = TRUSTED,
                 env: dict[str, str] | None = None, stderr: Path | None = None):
        self.root = root
        # capture is on by default in a trusted workspace; the stress tests are about the server
        self.settings = {"capture": {"enabled": False}, **(settings or {})}
        self.init_options = init_options
        self._err = open(stderr or root.parent / f"server-{time.monotonic_ns()}.err", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "kernelscope.server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err, cwd=root,
                                     env={**os.environ, **(env or {})}, start_new_session=True)
        self.pgid = self.proc.pid
        self._ids = itertools.count(1_000_000)
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.null_id_errors: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.reader_error: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- wire ------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(frame(json.dumps(message)))

    def _read(self) -> None:
        out = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    if not line.strip():
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None:
                    self.reader_error = "server sent a frame without Content-Length"
                    return
                body = out.read(length)
                if len(body) < length:
                    return
                self._dispatch(json.loads(body))
        except Exception as e:  # a malformed frame from the server is a test failure, reported by check()
            self.reader_error = f"{type(e).__name__}: {e}"

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:
            self.server_requests.append(msg)
            result: Any = None
            if msg["method"] == "workspace/configuration":
                result = [self.settings for _ in msg["params"]["items"]]
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            return
        with self._cond:
            if "method" in msg:
                self.notifications.append(msg)
            elif msg.get("id") is None:
                self.null_id_errors.append(msg)
            else:
                self.responses[msg["id"]] = msg
            self._cond.notify_all()

    # -- requests --------------------------------------------------------------------------

    def next_id(self) -> int:
        return next(self._ids)

    def request_async(self, method: str, params: Any = None) -> int:
        msg_id = self.next_id()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def wait_response(self, msg_id: Any, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    raise Hang(f"no reply to request {msg_id!r} within {timeout} s (alive: {self.alive()}); "
                               f"stderr: {self.stderr_tail()}")
                self._cond.wait(min(left, 0.5))
            return self.responses.pop(msg_id)

    def request(self, method: str, params: Any = None, timeout: float = REPLY_TIMEOUT) -> Any:
        reply = self.wait_response(self.request_async(method, params), timeout)
        if "error" in reply:
            raise AssertionError(f"{method} failed: {reply['error']}")
        return reply["result"]

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_notification(self, pred: Callable[[dict[str, Any]], bool], after: int = 0,
                          timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for n in self.notifications[after:]:
                    if pred(n):
                        return n
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    raise Hang(f"notification not received within {timeout} s; stderr: {self.stderr_tail()}")
                self._cond.wait(min(left, 0.5))

    # -- LSP -------------------------------------------------------------------------------

    def initialize(self, encoding: str = "utf-16") -> dict[str, Any]:
        caps = {"general": {"positionEncodings": [encoding]},
                "workspace": {"configuration": True, "workspaceFolders": True},
                "window": {"workDoneProgress": True, "showMessage": {}},
                "textDocument": {"publishDiagnostics": {"versionSupport": True}, "hover": {},
                                 "codeAction": {}, "codeLens": {}}}
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": self.uri(""), "capabilities": caps,
            "workspaceFolders": [{"uri": self.uri(""), "name": "ws"}],
            "initializationOptions": self.init_options})
        self.notify("initialized", {})
        return result

    def uri(self, name: str) -> str:
        return from_fs_path(str(self.root / name)) if name else from_fs_path(str(self.root))

    def open(self, name: str, text: str | None = None, version: int = 1) -> None:
        text = (self.root / name).read_text(encoding="utf-8") if text is None else text
        self.notify("textDocument/didOpen", {"textDocument": {"uri": self.uri(name), "languageId": "cuda",
                                                              "version": version, "text": text}})

    def save(self, name: str) -> None:
        self.notify("textDocument/didSave", {"textDocument": {"uri": self.uri(name)}})

    def stats(self, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        return self.request("kernelscope/stats", {}, timeout)

    def finished(self, uri: str, after: int, timeout: float = 120) -> dict[str, Any]:
        """The next final kernelscope/analysisFinished (not a superseded run, not a quick partial)."""
        return self.wait_notification(lambda n: n["method"] == "kernelscope/analysisFinished"
                                      and n["params"]["uri"] == uri and "cancelled" not in n["params"]
                                      and n["params"].get("depth") != "quick", after, timeout)["params"]

    def messages(self, method: str = "window/showMessage") -> list[str]:
        return [n["params"]["message"] for n in list(self.notifications) if n["method"] == method]

    # -- process ---------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_bytes(self) -> int:
        return process_rss(self.proc.pid)

    def stderr_tail(self, n: int = 2000) -> str:
        self._err.flush()
        try:
            return Path(self._err.name).read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def shutdown(self, timeout: float = 30) -> int:
        """shutdown + exit; returns the exit code (kills the server if it does not exit)."""
        try:
            if self.alive():
                self.request("shutdown", None, timeout)
                self.notify("exit")
        except (Hang, OSError, AssertionError):
            pass
        return self.stop(timeout)

    def stop(self, timeout: float = 30) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.pgid, 9)
            rc = self.proc.wait(10)
            raise Hang(f"the server did not exit within {timeout} s after exit/EOF")
        finally:
            self._err.close()
        return rc

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.alive():
            os.killpg(self.pgid, 9)
            self.proc.wait(10)
        if not self._err.closed:
            self._err.close()


def process_rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def left_after_teardown(pgid: int, grace_s: float = 5.0) -> list[tuple[int, str]]:
    """`processes_of(pgid)` once the kernel has finished tearing the group down: a process killed
    with its parent is still listed (cmdline already empty, not yet a zombie) for a moment after
    the parent is reaped. Not a speed check: a process still there after the grace outlived it."""
    deadline = time.monotonic() + grace_s
    left = processes_of(pgid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = processes_of(pgid)
    return left


def processes_of(pgid: int | None = None, mentioning: str | None = None) -> list[tuple[int, str]]:
    """(pid, cmdline) of live processes in process group `pgid` or whose cmdline mentions `mentioning`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        state, pgrp = fields[0], int(fields[2])
        if state == "Z":
            continue  # exited, waiting for its parent to reap it: not running
        if (pgid is not None and pgrp == pgid) or (mentioning and mentioning in cmd):
            found.append((int(d.name), cmd))
    return found
