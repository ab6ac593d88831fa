"""Generate package.json's `contributes.configuration` from the server's Settings model.

    python vscode-client/scripts/gen_settings.py           # rewrite package.json
    python vscode-client/scripts/gen_settings.py --check   # exit 1 if package.json is stale

The model is the one source of truth (docs/configuration.md is generated from it too), and so is
the trust model for `capabilities.untrustedWorkspaces.restrictedConfigurations`;
tests/clients/test_vscode_settings.py fails when package.json and the model disagree.

VS Code settings are flat dotted keys, so nested models become `kernelscope.analysis.arch`,
except models that may be null (`profile`): flattening those would make VS Code send an
object of defaults, which the server rejects as incomplete, so they stay one object setting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from kernelscope.server.settings import RESTRICTED, SECTION, Settings

PACKAGE_JSON = Path(__file__).resolve().parents[1] / "package.json"

#: settings of the extension itself; the client strips them before the server sees the section
CLIENT_SETTINGS: dict[str, dict[str, Any]] = {
    f"{SECTION}.server.path": {
        "type": "string", "default": "", "scope": "machine-overridable",
        "markdownDescription": "Path to the `kernelscope` executable (run as `kernelscope serve`). "
                               "Empty: use `#kernelscope.server.interpreter#`, then the Python extension's "
                               "active environment, then `kernelscope` on PATH.",
    },
    f"{SECTION}.server.interpreter": {
        "type": "string", "default": "", "scope": "machine-overridable",
        "markdownDescription": "Python interpreter that has kernelscope installed (run as "
                               "`python -m kernelscope.server`). Empty: the Python extension's active "
                               "environment, then `kernelscope` on PATH.",
    },
    f"{SECTION}.heat.style": {
        "type": "string", "enum": ["off", "gutter", "background"], "default": "off", "scope": "window",
        "enumDescriptions": ["No heat decoration (the inlay hints still give each hot line's share).",
                             "A bar in the gutter beside each line costing >= 1 % of its kernel's samples, "
                             "wider and redder the hotter the line.",
                             "A tint across each such line, deeper the hotter the line."],
        "markdownDescription": "Shade the hot lines of a CUDA file by their share of the kernel's samples "
                               "(modeled or measured, as the diagnostics say); the hottest also mark the "
                               "scroll bar.",
    },
    f"{SECTION}.trace.server": {
        "type": "string", "enum": ["off", "messages", "verbose"], "default": "off", "scope": "window",
        "description": "Log the LSP messages between VS Code and the server in the kernelscope output.",
    },
}

#: the extension's own settings that choose a program to run (the server)
CLIENT_RESTRICTED = (f"{SECTION}.server.path", f"{SECTION}.server.interpreter")

#: schema keys VS Code's settings schema (draft-07) has no use for
_DROP = {"title", "format"}
#: dict-valued settings whose keys are the user's (kernel names, variable names), never flattened
_OPAQUE = {"launchHints", "env", "values"}


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _clean(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline refs, camelCase property names, draft-2020 tuples as draft-07, simple unions as type lists."""
    schema = _resolve(schema, defs)
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _DROP:
            continue
        if k == "properties":
            out[k] = {to_camel(name): _clean(sub, defs) for name, sub in v.items()}
        elif k == "required":
            out[k] = [to_camel(name) for name in v]
        elif k in ("items", "additionalProperties") and isinstance(v, dict):
            out[k] = _clean(v, defs)
        elif k == "prefixItems":
            out["items"] = [_clean(sub, defs) for sub in v]
        elif k == "anyOf":
            out[k] = [_clean(sub, defs) for sub in v]
        else:
            out[k] = v
    branches = out.get("anyOf")
    # `str | None` and friends: a type list keeps VS Code's settings editor able to edit the value.
    if branches and all(set(b) <= {"type", "minimum", "maximum", "exclusiveMinimum", "items"} and
                        isinstance(b.get("type"), str) for b in branches):
        non_null = [b for b in branches if b["type"] != "null"]
        if len(non_null) == 1 or all(set(b) == {"type"} for b in non_null):
            del out["anyOf"]
            for b in non_null:
                out.update({k: v for k, v in b.items() if k != "type"})
            out["type"] = [b["type"] for b in branches]
    return out


def _is_nested_model(schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    return "$ref" in schema and "properties" in _resolve(schema, defs)


def _camel_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {to_camel(k): _camel_keys(v) for k, v in value.items()}
    return value


def _settings(model_schema: dict[str, Any], defs: dict[str, Any], prefix: str,
              defaults: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, prop in model_schema["properties"].items():
        key = f"{prefix}.{to_camel(name)}"
        default = defaults.get(to_camel(name))
        if to_camel(name) not in _OPAQUE and _is_nested_model(prop, defs):
            out.update(_settings(_resolve(prop, defs), defs, key, default or {}))
            continue
        # The schema omits defaults made by factories ({} for launchHints); the model has them all.
        out[key] = {**_clean(prop, defs), "default": default}
    return out


def excluded_names() -> set[str]:
    """Fields the model keeps for itself (e.g. `origins`, provenance), never settings."""
    return {n for n, f in Settings.model_fields.items() if f.exclude}


def configuration() -> dict[str, Any]:
    schema = Settings.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    excluded = {to_camel(n) for n in excluded_names()}
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k not in excluded}
    defaults = _camel_keys(Settings().model_dump(mode="json", exclude=excluded_names()))
    props = {**CLIENT_SETTINGS, **_settings(schema, defs, SECTION, defaults)}
    for i, value in enumerate(props.values()):
        value["order"] = i  # the model's order, not VS Code's alphabetical one
    return {"title": "kernelscope", "properties": props}


def restricted_configurations(props: dict[str, Any]) -> list[str]:
    """Every setting that can run or choose something: the server's trust model (settings.RESTRICTED,
    each with its leaves) and the extension's own. VS Code ignores a workspace's values of these
    until the workspace is trusted."""
    server = [key for key in props if any(key == f"{SECTION}.{r}" or key.startswith(f"{SECTION}.{r}.")
                                          for r in RESTRICTED)]
    return [*CLIENT_RESTRICTED, *server]


def render(package: dict[str, Any]) -> str:
    config = configuration()
    untrusted = {**package["capabilities"]["untrustedWorkspaces"],
                 "restrictedConfigurations": restricted_configurations(config["properties"])}
    package = {**package, "capabilities": {**package["capabilities"], "untrustedWorkspaces": untrusted},
               "contributes": {**package["contributes"], "configuration": config}}
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    current = PACKAGE_JSON.read_text(encoding="utf-8")
    wanted = render(json.loads(current))
    if argv == ["--check"]:
        if current != wanted:
            sys.stderr.write(f"{PACKAGE_JSON} is stale: run python vscode-client/scripts/gen_settings.py\n")
            return 1
        return 0
    if argv:
        sys.stderr.write("usage: gen_settings.py [--check]\n")
        return 2
    PACKAGE_JSON.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
