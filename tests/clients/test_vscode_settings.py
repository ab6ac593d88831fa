"""The VS Code extension's package.json agrees with the server's Settings model.

package.json's `contributes.configuration` is generated (vscode-client/scripts/gen_settings.py);
these tests fail when the model changed and nobody regenerated, and check that what VS Code
will send by default is exactly what the server would assume anyway.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _load import load_file
from kernelscope.server.settings import RESTRICTED, SECTION, Settings, load_settings, screen

CLIENT = Path(__file__).resolve().parents[2] / "vscode-client"
PACKAGE = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
PROPS: dict[str, dict[str, Any]] = PACKAGE["contributes"]["configuration"]["properties"]


def _generator():
    return load_file(CLIENT / "scripts" / "gen_settings.py")


def test_package_json_is_generated_from_the_model():
    gen = _generator()
    current = (CLIENT / "package.json").read_text(encoding="utf-8")
    assert gen.render(json.loads(current)) == current, \
        "package.json is stale: run python vscode-client/scripts/gen_settings.py"


def _as_vscode_sends() -> dict[str, Any]:
    """The `kernelscope` section VS Code returns when nothing is set: every default, nested by dots,
    minus the extension's own keys (the client strips them, see src/serverSettings.ts)."""
    client_only = set(_generator().CLIENT_SETTINGS)
    section: dict[str, Any] = {}
    for key, schema in PROPS.items():
        if key in client_only:
            continue
        node = section
        *parents, leaf = key.split(".")[1:]
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = schema["default"]
    return section


def test_defaults_sent_by_vscode_are_valid_and_change_nothing():
    settings, problems = load_settings(_as_vscode_sends())
    assert problems == []
    assert screen(settings, trusted=False)[1] == []  # no warning in an untrusted workspace for the defaults
    dump = lambda s: s.model_dump(exclude={"origins"})  # noqa: E731
    assert dump(settings) == dump(Settings())


def test_every_leaf_setting_is_contributed():
    gen = _generator()
    server_keys = {k for k in PROPS if k not in gen.CLIENT_SETTINGS}
    assert {f"{SECTION}.analysis.arch", f"{SECTION}.analysis.launchHints", f"{SECTION}.profile",
            f"{SECTION}.cache.maxMegabytes", f"{SECTION}.debounceMs"} <= server_keys
    for key, schema in PROPS.items():
        assert schema.get("description") or schema.get("markdownDescription"), f"{key} has no description"
        assert "$ref" not in json.dumps(schema), f"{key}: VS Code cannot resolve $ref in settings"


def test_restricted_settings_exist_and_profiling_needs_trust():
    untrusted = PACKAGE["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    for key in untrusted["restrictedConfigurations"]:
        assert key in PROPS, key
    restricted = set(untrusted["restrictedConfigurations"])
    # Every setting that can run or choose something: the server's trust model and all their leaves.
    assert {f"{SECTION}.{k}" for k in ("profile", "analysis.nvccPath", "analysis.flags", "analysis.compileCommands",
                                       "analysis.archFile", "cache.directory", "capture.enabled", "capture.args",
                                       "capture.timeoutS", "capture.launchesPerKernel")} <= restricted
    assert {k for k in PROPS if any(k == f"{SECTION}.{r}" or k.startswith(f"{SECTION}.{r}.") for r in RESTRICTED)} <= restricted
    commands = {c["command"]: c for c in PACKAGE["contributes"]["commands"]}
    for cmd in ("kernelscope.ui.profileNow", "kernelscope.ui.verifyAdvice"):
        assert commands[cmd].get("enablement") == "isWorkspaceTrusted"


def test_client_strips_exactly_its_own_settings():
    import re

    src = (CLIENT / "src" / "serverSettings.ts").read_text(encoding="utf-8")
    stripped = set(re.findall(r'"(\w+)"', re.search(r"CLIENT_ONLY_KEYS = \[([^\]]*)\]", src).group(1)))
    own = {k.split(".")[1] for k in _generator().CLIENT_SETTINGS}
    assert stripped == own
    assert not own & set(Settings.model_fields), "an extension setting shadows a server setting"
