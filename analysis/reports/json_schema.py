"""docs/json-schema.md, generated from the result models so the documentation cannot drift.

Regenerate with `python -m kernelscope.analysis.reports.json_schema > docs/json-schema.md`.
"""

from __future__ import annotations

import json

from ..results import SCHEMA_VERSION, AnalysisResult


def render_schema_markdown() -> str:
    schema = AnalysisResult.model_json_schema()
    return (
        "# `kernelscope analyze --json` schema\n\n"
        f"Schema version {SCHEMA_VERSION} (the `schema_version` field). It is generated from the pydantic models in\n"
        "`analysis/results.py`, `analysis/advisor/advice.py` and `analysis/profile.py`; a test keeps this file in sync.\n"
        "Lines are 1-based. Source columns in `StaticFact`, `Advice.columns` and `SourceEdit` are 0-based\n"
        "character indices; compiler `Message.column` is 1-based as compilers print it.\n"
        "Samples are per stall reason, using Nsight Compute's warp-state names; `provenance.kind` says\n"
        "whether they were modeled or measured.\n\n"
        "```json\n" + json.dumps(schema, indent=2, sort_keys=True) + "\n```\n"
    )


if __name__ == "__main__":
    print(render_schema_markdown(), end="")
