"""Headless Chromium driven over the DevTools protocol (websocket-client), just enough for VS Code.

`chromium --screenshot` gives a blank page for VS Code (the workbench renders after the load
event), so tests drive a live page: navigate, evaluate JavaScript, type keys, take screenshots.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

from code_server import free_port, stop_group


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    def __init__(self, binary: str, width: int = 1400, height: int = 900):
        self.port = free_port()
        self.profile = Path(tempfile.mkdtemp(prefix="ks-chromium-"))
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--window-size={width},{height}",
             f"--user-data-dir={self.profile}", f"--remote-debugging-port={self.port}",
             "--remote-debugging-address=127.0.0.1", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.ws = websocket.create_connection(self._page_ws(), timeout=60, suppress_origin=True)
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def _page_ws(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("chromium's DevTools endpoint did not come up")

    # -- protocol ----------------------------------------------------------------------------

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expression: str, context_id: int | None = None) -> Any:
        params: dict[str, Any] = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        if context_id is not None:
            params["contextId"] = context_id
        r = self.call("Runtime.evaluate", **params)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JS error in {expression[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float, what: str, interval: float = 0.25) -> Any:
        """Poll a JS expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = self.eval(expression)
            if last:
                return last
            time.sleep(interval)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what} (last value {last!r})")

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    # -- input -------------------------------------------------------------------------------

    _KEYS = {"Enter": 13, "Escape": 27, "Tab": 9, "ArrowDown": 40, "ArrowUp": 38, "End": 35, "Home": 36,
             "Delete": 46, "Backspace": 8}
    _MODS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}

    def key(self, key: str, *modifiers: str) -> None:
        """One key press, e.g. key("P", "Control") or key("Enter"). VS Code reads keyCode/code."""
        mods = sum(self._MODS[m] for m in modifiers)
        if key == ".":
            code, vk = "Period", 190
        elif len(key) == 1:
            code, vk = f"Key{key.upper()}" if key.isalpha() else f"Digit{key}", ord(key.upper())
        else:
            code, vk = key, self._KEYS[key]
        base = {"modifiers": mods, "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
        text = "\r" if key == "Enter" else ""
        self.call("Input.dispatchKeyEvent", type="keyDown", text=text, **base)
        self.call("Input.dispatchKeyEvent", type="keyUp", **base)

    def type(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def mouse_move(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    # -- frames ------------------------------------------------------------------------------

    def frame_texts(self, selector: str) -> list[str]:
        """outerHTML of `selector` matches in every frame, out-of-process iframes included.

        VS Code webviews are nested iframes on another origin; Runtime.evaluate in the page
        cannot see into them, but each frame has its own execution context that can."""
        out: list[str] = []
        contexts = [e["params"]["context"] for e in self.events if e.get("method") == "Runtime.executionContextCreated"]
        for ctx in contexts:
            try:
                found = self.eval(f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
                                  ".map(e => e.outerHTML)", context_id=ctx["id"])
            except RuntimeError:
                continue  # a context that went away
            out += found or []
        return out

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            stop_group(self.proc)
            shutil.rmtree(self.profile, ignore_errors=True)
