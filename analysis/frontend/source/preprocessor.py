"""`#include` lines and `// kernelscope:` annotations.
"""

from __future__ import annotations

from tree_sitter import Node

from .folding import _Env, _fold_text
from .records import Annotation, AnnotationValue, Include
from .syntax import _Locator, _text


def _include(node: Node, loc: _Locator) -> Include | None:
    path = node.child_by_field_name("path")
    if path is None:
        return None
    text = _text(path)
    is_system = path.type == "system_lib_string"
    if path.type in ("system_lib_string", "string_literal") and len(text) >= 2:
        text = text[1:-1]
    return Include(line=node.start_point[0] + 1, path=text, is_system=is_system, span=loc.span(node))


_ANNOTATION_TAG = "kernelscope:"


def _annotation(node: Node, loc: _Locator, function: str | None, env: _Env) -> Annotation | None:
    text = _text(node)
    if not text.startswith("//"):
        return None
    body = text[2:].strip()
    if not body.startswith(_ANNOTATION_TAG):
        return None
    entries = []
    for word in body[len(_ANNOTATION_TAG):].split():
        key, eq, value = word.partition("=")
        if eq and key:
            entries.append(AnnotationValue(key=key, text=value, value=_fold_text(value, env)))
    return Annotation(line=node.start_point[0] + 1, span=loc.span(node), entries=tuple(entries), function=function)
