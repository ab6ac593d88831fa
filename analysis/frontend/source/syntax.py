"""Positions (node -> line and character column: UTF-8 bytes to `str` indices) and node text."""

from __future__ import annotations

from tree_sitter import Node

from .records import Position, Span


class _Locator:
    """Tree-sitter points are (row, byte column); the models want character columns."""

    def __init__(self, source: bytes, ascii_only: bool) -> None:
        self._source = source
        self._ascii = ascii_only
        self._line_starts = [0]
        if not ascii_only:
            at = source.find(b"\n")
            while at != -1:
                self._line_starts.append(at + 1)
                at = source.find(b"\n", at + 1)

    def position(self, point: tuple[int, int]) -> Position:
        row, byte_col = point
        if self._ascii or row >= len(self._line_starts):
            return Position(line=row + 1, col=byte_col)
        start = self._line_starts[row]
        prefix = self._source[start : start + byte_col]
        try:
            chars = len(prefix.decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            chars = len(prefix.decode("utf-8", "replace"))
        return Position(line=row + 1, col=chars)

    def span(self, node: Node) -> Span:
        return Span(
            start=self.position(node.start_point),
            end=self.position(node.end_point),
            start_byte=node.start_byte,
            end_byte=node.end_byte,
        )


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _squash(text: str) -> str:
    return " ".join(text.split())
