"""SARIF 2.1.0 output: one result per advice, with the fix as a SARIF `fix` and the estimate as properties.

Code-scanning UIs (GitHub, VS Code's SARIF viewer) show these like compiler warnings. Columns
in SARIF are 1-based; `Advice` columns are 0-based characters, so they are shifted here.
Paths are relative to `%SRCROOT%` (the directory given as `base`, normally the working directory)
as GitHub code scanning expects: it matches results to files in the repository by relative path.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..advisor.advice import Advice
from ..results import AnalysisResult

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


def _level(a: Advice) -> str:
    # A likely gain of 10 % or more is worth a warning; smaller ones are notes. An estimate on an
    # assumed launch is a guess: never a warning.
    return "warning" if a.speedup >= 1.1 and not a.assumed else "note"


def _region(a: Advice) -> dict:
    region: dict = {"startLine": max(1, a.lines[0] if a.lines else 1)}
    if a.columns is not None:
        region["startColumn"] = a.columns[0] + 1
        region["endColumn"] = max(a.columns[1], a.columns[0] + 1) + 1
    return region


def _location(source: str, base: Path | None) -> dict:
    """An artifactLocation: relative to %SRCROOT% when the file is under `base`, else an absolute file URI."""
    path = Path(source)
    if base is not None and path.is_absolute():
        try:
            return {"uri": path.relative_to(base.resolve()).as_posix(), "uriBaseId": SRCROOT}
        except ValueError:
            pass
    return {"uri": path.as_uri() if path.is_absolute() else path.as_posix()}


SRCROOT = "%SRCROOT%"


def _fix(a: Advice, uri: dict) -> list[dict]:
    if a.fix is None:
        return []
    return [{
        "description": {"text": a.fix.description},
        "artifactChanges": [{
            "artifactLocation": uri,
            "replacements": [{
                "deletedRegion": {"startLine": e.line, "startColumn": e.col + 1, "endLine": e.end_line,
                                  "endColumn": e.end_col + 1},
                "insertedContent": {"text": e.new_text},
            } for e in a.fix.edits],
        }],
    }]


def to_sarif(result: AnalysisResult, base: Path | None = None) -> dict:
    uri = _location(result.source, base)
    rules: dict[str, dict] = {}
    for a in result.advice:
        rules.setdefault(a.optimizer, {
            "id": a.optimizer,
            "name": "".join(w.capitalize() for w in a.optimizer.split("_")),
            "shortDescription": {"text": a.title},
            "properties": {"category": "performance"},
        })
    rule_index = {rid: n for n, rid in enumerate(rules)}
    results = []
    for a in result.advice:
        here = uri if a.file is None else _location(a.file, base)  # a kernel of an included file: its lines
        r = {
            "ruleId": a.optimizer,
            "ruleIndex": rule_index[a.optimizer],
            "level": _level(a),
            "message": {"text": a.message},
            "locations": [{
                "physicalLocation": {"artifactLocation": here, "region": _region(a)},
                "logicalLocations": [{"name": a.kernel_name, "fullyQualifiedName": a.kernel, "kind": "function"}],
            }],
            "partialFingerprints": {"kernelscopeAdvice/v1": a.id},
            "properties": {
                "estimatedSpeedup": a.speedup, "formula": a.estimate.formula, "inputs": a.estimate.inputs,
                "importance": a.importance, "importanceBasis": a.importance_basis, "provenance": a.provenance,
                "assumed": list(a.assumed),
                "hotspots": [h.model_dump() for h in a.hotspots],
            },
        }
        related = [{"id": n, "physicalLocation": {"artifactLocation": here,
                                                  "region": {"startLine": ln}}, "message": {"text": f"line {ln}"}}
                   for n, ln in enumerate(a.lines[1:], start=1) if ln > 0]
        if related:
            r["relatedLocations"] = related
        if fixes := _fix(a, uri):
            r["fixes"] = fixes
        results.append(r)
    version = result.toolchain.version if result.toolchain else None
    run = {
        "tool": {"driver": {"name": "kernelscope", "semanticVersion": "0.1.0",
                            "informationUri": "https://github.com/kernelscope/kernelscope",
                            "rules": list(rules.values())}},
        "artifacts": [{"location": uri, "hashes": {"sha-256": result.source_sha256}}],
        "results": results,
        "properties": {"arch": result.arch, "device": result.device, "nvcc": version,
                       "provenance": result.profile.provenance.kind if result.profile else "static"},
    }
    if "uriBaseId" in uri and base is not None:
        run["originalUriBaseIds"] = {SRCROOT: {"uri": base.resolve().as_uri() + "/"}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(result: AnalysisResult, base: Path | None = None) -> str:
    return json.dumps(to_sarif(result, base), indent=2)
