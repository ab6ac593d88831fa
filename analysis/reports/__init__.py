"""The presenters: one per form, shared by every front end (llvm-mca's Views). An `AnalysisResult`
as the command line's text (`text.py`), a self-contained HTML page (`html.py`), SARIF 2.1.0
(`sarif.py`), the editor's Markdown (`markdown.py`: hovers, a kernel's report, an advice explained)
and the roofline chart both the HTML page and the editor draw (`chart.py`); `docs.py` links a
citation into the installed documentation.

A front end imports the names below from here; each presenter loads when first named (the
command line prints one of them, and its start-up counts).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("render_text", "sms_used", "assumed_values", "grid_fill"), "text"),
    **dict.fromkeys(("render_html",), "html"),
    **dict.fromkeys(("render_sarif",), "sarif"),
    **dict.fromkeys(("provenance_kind", "roofline_chart"), "chart"),
    **dict.fromkeys(("markdown", "docs"), None),  # the modules themselves
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _EXPORTS[name]
    value = importlib.import_module(f"{__name__}.{module or name}")
    if module is not None:
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted((*globals(), *_EXPORTS))
