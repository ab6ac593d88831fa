"""The base of the server's stateful features (esbonio's `LanguageFeature`).

A feature holds the typed server it belongs to and hears the documents' lifecycle through hooks;
app.py's handlers call the hooks of every feature in `KernelscopeServer.features`, so a feature
keeps its own state (a verification batch per file, an attached report, a pending republish) and
never reaches into another's or the server's private parts. Stateless translations of a result
into lsprotocol types (hover, lens, inlay, heat, roofline) stay plain functions in features/.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelscope.analysis.application import AnalysisResult

    from .app import KernelscopeServer


class LanguageFeature:
    def __init__(self, server: KernelscopeServer) -> None:
        self.server = server

    def document_open(self, uri: str) -> None:
        """The client opened `uri` (its analysis is requested after every feature heard this)."""

    def document_change(self, uri: str) -> None:
        """The buffer changed; the result on screen now follows the edit (tracking.py)."""

    def document_save(self, uri: str) -> None:
        """The client saved `uri` (its analysis is requested after every feature heard this)."""

    def document_close(self, uri: str) -> None:
        """The client closed `uri`: stop what runs for it and forget it."""

    def analysis_requested(self, uri: str) -> None:
        """A new analysis of `uri` is on its way: work based on the current result is out of date."""

    def result_shown(self, uri: str, result: AnalysisResult) -> None:
        """A result of `uri` was published (the quick one, then the full one)."""

    def shutdown(self) -> None:
        """The server stops: kill what this feature started."""
