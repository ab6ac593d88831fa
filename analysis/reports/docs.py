"""Links from the editor into this install's own documentation.

A diagnostic or hover cites "GPA Eq. 2" or "Starlight Eq. 3"; docs/advisor.md says what those are.
The docs travel with the install (a checkout has them beside the package; `pip install .` puts them
in `<prefix>/share/kernelscope/docs`, pyproject's data-files), so the links are `file:` URIs that
work offline. Each points at its heading's line (`#L104`), which VS Code opens the file at; where
no docs are installed there is no link and the citation stays plain text.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

#: where `pip install .` puts the docs, under sys.prefix (pyproject's [tool.setuptools.data-files])
INSTALLED = Path("share", "kernelscope", "docs")
#: docs/advisor.md's headings the editor links to
ESTIMATORS = "## 3. Estimators"
OPTIMIZERS = "## 2. Optimizers"


@lru_cache(maxsize=1)
def docs_dir() -> Path | None:
    # a checkout: docs/ beside the package's folders (analysis/reports/ -> the repository's root)
    for d in (Path(__file__).resolve().parents[2] / "docs", Path(sys.prefix) / INSTALLED):
        if (d / "advisor.md").is_file():
            return d
    return None


@lru_cache(maxsize=32)
def link(page: str, heading: str) -> str | None:
    """`file:` URI of `page` at the line of `heading` (a prefix of its line), or None without docs."""
    d = docs_dir()
    if d is None or not (d / page).is_file():
        return None
    lines = (d / page).read_text(encoding="utf-8").splitlines()
    n = next((i + 1 for i, text in enumerate(lines) if text.startswith(heading)), None)
    return (d / page).as_uri() + (f"#L{n}" if n else "")


def citation(formula: str) -> str | None:
    """The paper equation an estimate's formula cites ("GPA Eq. 2: T/(T-M)" -> "GPA Eq. 2"), if any."""
    head = formula.split(":", 1)[0].strip()
    return head if " Eq. " in f" {head} " else None


def cited(formula: str) -> str | None:
    """Markdown for an estimate's equation, linked to what it means: "[GPA Eq. 2](file:…#L104)"."""
    name = citation(formula)
    if name is None:
        return None
    target = link("advisor.md", ESTIMATORS)
    return f"[{name}]({target})" if target else name
