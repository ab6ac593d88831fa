"""Does a report belong to the source that is open now? (measurement.md, "Never": map a report
onto source that changed after it was captured.)

Two kinds of evidence, strongest first:
1. the source text the report embeds (`ncu --import-source yes`): compare content hashes;
2. otherwise the report's line table: a line past the end of the file proves the file changed.
   Kernel names missing from the source are only noted: a kernel may come from a macro or
   another file, so their absence proves nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from .errors import StaleReportError


@dataclass(frozen=True)
class SourceEvidence:
    """What a report says about the source it was captured from."""

    embedded: dict[str, str] = field(default_factory=dict)  # file name in the report -> content
    lines: frozenset[tuple[str, int]] = frozenset()  # (file name in the report, line)
    kernel_names: tuple[str, ...] = ()  # function base names, e.g. "naive_gemm"


def text_sha256(text: str) -> str:
    # A report captured on Windows embeds CRLF text; the same file checked out on Linux has LF.
    return hashlib.sha256(text.replace("\r\n", "\n").encode("utf-8")).hexdigest()


def basename(report_file: str) -> str:
    """Base name of a path recorded on any OS (the RTX 3080 report holds `C:/ProgramData/...`)."""
    return PureWindowsPath(report_file).name if ("\\" in report_file or ":" in report_file[:3]) \
        else Path(report_file).name


def same_file(report_file: str, source: Path | None) -> bool:
    return source is not None and basename(report_file) == source.name


def check_source(evidence: SourceEvidence, source: Path | None, source_text: str) -> tuple[str, ...]:
    """Raise StaleReportError when the report provably belongs to another version of the source.

    Returns notes on weaker mismatches (kernels not found in the text) for the provenance.
    """
    where = source.name if source is not None else "the open source"
    embedded = {f: t for f, t in evidence.embedded.items() if same_file(f, source)}
    if source is None and len(evidence.embedded) == 1:
        embedded = dict(evidence.embedded)
    for report_file, captured in embedded.items():
        if text_sha256(captured) != text_sha256(source_text):
            raise StaleReportError(
                f"The report embeds {basename(report_file)} as it was at capture time, and {where} has changed "
                f"since (sha256 {text_sha256(captured)[:12]} then, {text_sha256(source_text)[:12]} now); "
                "its per-line numbers would land on the wrong lines")
    n_lines = len(source_text.splitlines())
    past_end = sorted(ln for f, ln in evidence.lines if same_file(f, source) and ln > n_lines)
    if past_end:
        raise StaleReportError(
            f"The report attributes samples to line {past_end[-1]} of {where}, which now has {n_lines} lines; "
            "the file changed after the report was captured")
    notes = []
    missing = [k for k in evidence.kernel_names if not re.search(rf"\b{re.escape(k)}\b", source_text)]
    if missing and evidence.kernel_names:
        notes.append(f"kernel(s) {', '.join(sorted(set(missing)))} not found in {where}: "
                     "the report may come from another file or another version of it")
    return tuple(notes)
