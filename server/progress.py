"""`$/progress` for analyses: server-initiated, cancellable work-done progress.

The client's "cancel" (window/workDoneProgress/cancel) cancels pygls's future for the
token; we turn that into `CancelToken.cancel()` through `on_cancel`, which kills the compiler.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

log = logging.getLogger("kernelscope.server.progress")


class _NoProgress:
    def report(self, message: str, fraction: float) -> None:
        pass

    def note(self, message: str) -> None:
        pass

    def end(self, message: str) -> None:
        pass


class _Progress:
    def __init__(self, ls: LanguageServer, token: str):
        self._ls = ls
        self._token = token
        self._last = -1

    def report(self, message: str, fraction: float) -> None:
        percent = max(0, min(100, int(fraction * 100)))
        if percent == self._last:
            return  # per-kernel stage messages: at most one notification per percent
        self._last = percent
        self._send(message, percent)

    def note(self, message: str) -> None:
        """A message worth showing whatever the percentage: a Slurm job that started running."""
        self._send(message, max(0, self._last))

    def _send(self, message: str, percent: int) -> None:
        self._ls.work_done_progress.report(self._token, types.WorkDoneProgressReport(
            message=message, percentage=percent, cancellable=True))

    def end(self, message: str) -> None:
        self._ls.work_done_progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        # pygls never forgets tokens; without this every save would leak one future.
        self._ls.work_done_progress.tokens.pop(self._token, None)


def supported(ls: LanguageServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.work_done_progress)


async def begin(ls: LanguageServer, uri: str, title: str, on_cancel: Callable[[], None]):
    if not supported(ls):
        return _NoProgress()
    token = f"kernelscope/{uuid.uuid4().hex}"
    try:
        await ls.work_done_progress.create_async(token)
    except Exception as e:  # a client that refuses progress still gets its analysis
        log.debug("progress refused: %s", e)
        return _NoProgress()
    future = ls.work_done_progress.tokens[token]
    future.add_done_callback(lambda f: on_cancel() if f.cancelled() else None)
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
        title=title, message="compiling", percentage=0, cancellable=True))
    return _Progress(ls, token)
