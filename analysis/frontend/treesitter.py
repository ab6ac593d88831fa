"""The one tree-sitter-cuda parser: every reading of C++/CUDA structure (the source model,
conditional blocks, the device-only fallback's host functions, the fixes) parses with it."""

from __future__ import annotations

import threading

import tree_sitter_cuda
from tree_sitter import Language, Parser

_LANGUAGE = Language(tree_sitter_cuda.language())
# A Parser keeps per-parse state, and the server may parse from several threads.
_PARSERS = threading.local()


def parser() -> Parser:
    """This thread's parser."""
    current = getattr(_PARSERS, "parser", None)
    if current is None:
        current = _PARSERS.parser = Parser(_LANGUAGE)
    return current
