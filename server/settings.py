"""The server's settings: one typed, immutable model, merged from three layers.

Layers, lowest precedence first:

1. defaults (this model);
2. the workspace's project file: ``[tool.kernelscope]`` in ``pyproject.toml``, then ``.kernelscope.toml``;
3. the editor: ``initializationOptions`` and the ``kernelscope`` section of ``workspace/configuration``.

Every leaf records where its value came from (`Settings.origins`, and the file in
`Settings.sources`), because what a setting may do depends on it: `screen` is the trust model,
the one place that decides (docs/configuration.md, "Security").

``python -m kernelscope.server.settings --markdown`` prints docs/configuration.md.
"""

from __future__ import annotations

import sys
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel, to_snake

from kernelscope.analysis.application import (ALLOWED, AnalysisOptions, LaunchHint, ProfileTarget, RemoteWrapper,
                                              refused_flag)

SECTION = "kernelscope"


class Origin(str, Enum):
    default = "default"
    user = "user"  # the editor: workspace/configuration or initializationOptions
    workspace_file = "workspace_file"  # pyproject.toml / .kernelscope.toml inside the workspace


class _Camel(BaseModel):
    # Editors write camelCase (VS Code settings, Neovim `settings`), TOML files often snake_case: accept both.
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class ProfileCommand(_Camel):
    """How the measured backend runs the user's program under Nsight Compute (`kernelscope.profileNow`)."""

    command: tuple[str, ...] = Field(..., min_length=1,
                                     description="Program and arguments that launch the kernels, e.g. [\"./app\", \"--n\", \"4096\"]. Never run through a shell.")
    cwd: Path | None = Field(None, description="Working directory (default: the workspace root).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    timeout_s: float = Field(300.0, gt=0, description="Stop the profiled program after this many seconds.")
    ncu_path: str = Field("ncu", description="The Nsight Compute command line (`ncu`), by path or on PATH (on the remote side with `remote`).")
    kernel_regex: str | None = Field(None, description="Profile only kernels whose function name matches this regular expression, e.g. \"gemm\". Each kernel's first launch is profiled (ncu --kernel-id ::regex:RE:1).")
    remote: RemoteWrapper | None = Field(None, description="Run on another machine: {\"run\": [\"ssh\", \"gpu01\", \"cd {cwd} && {command}\"], \"fetch\": [\"scp\", \"gpu01:{remote}\", \"{local}\"]} (docs/measured.md).")
    on_save: bool = Field(False, description="Profile again on every save (the measured result replaces the modeled one when it arrives).")

    @field_validator("remote", mode="before")
    @classmethod
    def _snake_remote(cls, v: Any) -> Any:
        # RemoteWrapper (owned by kernelscope.analysis.measure) has snake_case fields and no aliases.
        return _snake_keys(v, RemoteWrapper) if isinstance(v, Mapping) else v

    def target(self, default_cwd: Path | None) -> ProfileTarget:
        """The measurement backend's ProfileTarget for these settings."""
        return ProfileTarget(command=self.command, cwd=self.cwd or default_cwd, env=self.env, timeout_s=self.timeout_s,
                             kernel_regex=self.kernel_regex, first_of_each=True, remote=self.remote)


class CaptureSettings(_Camel):
    """Launch capture (docs/emulator.md): build the open file's main() and run it against
    kernelscope's stand-in CUDA runtime, which records launches instead of running them (no GPU)."""

    enabled: bool = Field(True, description="Capture the launches of programs with a main() on every analysis, so that the model reads the launches the program really makes instead of folding or assuming them. Runs the program (contained, against a stand-in CUDA runtime: no GPU), so only in a trusted workspace, whatever this setting's origin; an edit inside a kernel reuses the last capture. false: launches come from the source, annotations, hints or defaults.")
    args: tuple[str, ...] = Field((), description="Command-line arguments for the captured program.")
    timeout_s: float = Field(20.0, gt=0, le=600, description="Stop the captured program after this many seconds; the launches it made so far are used.")
    launches_per_kernel: int = Field(64, ge=1, le=100_000, description="Launches recorded per kernel; later ones are only counted.")


class VerifySettings(_Camel):
    """Verified by default (docs/actions.md): after each full analysis, the fixes of the most promising
    advice are applied to shadow copies and re-modeled in the background."""

    enabled: bool = Field(True, description="Re-model the mechanical fixes of a file's advice after each full analysis; diagnostics then show the verified figure, and advice whose fix re-models to no gain is dropped from them.")
    max_fixes: int = Field(4, ge=0, le=64, description="Fixes verified per file after each analysis, most promising first (each compiles a shadow copy).")


class CacheSettings(_Camel):
    directory: Path | None = Field(None, description="Where analysis results and the server log are kept (default: the user cache dir, e.g. ~/.cache/kernelscope). Never from a workspace file; from the editor only in a trusted workspace.")
    max_megabytes: float = Field(256.0, gt=0, description="Size bound of the on-disk result cache; the least recently used entries go first.")
    memory_entries: int = Field(64, ge=1, description="Results kept in memory (LRU).")


class Settings(_Camel):
    """Everything under the `kernelscope` section."""

    analysis: AnalysisOptions = Field(default_factory=AnalysisOptions,
                                      description="What an analysis computes; part of the cache key.")
    profile: ProfileCommand | None = Field(None, description="Measured backend: the program to profile. Runs only in a trusted workspace, wherever the setting comes from.")
    capture: CaptureSettings = Field(default_factory=CaptureSettings, description="Launch capture: the real launches of the file's own main(), without a GPU.")
    cache: CacheSettings = Field(default_factory=CacheSettings, description="Result cache.")
    verify: VerifySettings = Field(default_factory=VerifySettings, description="Verification of advice in the background.")
    max_concurrent_analyses: int = Field(2, ge=1, le=64, description="Analyses (compiles) that may run at once, across all files.")
    analyze_on_open: bool = Field(True, description="Analyse a file when it is opened.")
    analyze_on_save: bool = Field(True, description="Analyse a file when it is saved.")
    debounce_ms: int = Field(150, ge=0, le=10_000, description="Saves closer together than this are merged into one analysis.")
    log_level: str = Field("info", description="Server log level: debug, info, warning or error.")
    inlay_hints: bool = Field(True, description="Inlay hint at the end of each hot line: its share of the kernel's samples and top stall reason.")
    code_lens: bool = Field(True, description="Code lens above each kernel: bound, roofline, occupancy, best fix.")
    #: where each leaf value came from, by dotted camelCase path; filled by `load_settings`, never read from input
    origins: dict[str, Origin] = Field(default_factory=dict, exclude=True)
    #: the file each workspace-file leaf came from (pyproject.toml or .kernelscope.toml), for messages
    sources: dict[str, str] = Field(default_factory=dict, exclude=True)
    #: settings `screen` set aside (dotted camelCase) -> where they came from, so that a refusal at the
    #: point of use can say why a value is missing
    withheld: dict[str, str] = Field(default_factory=dict, exclude=True)

    @field_validator("log_level")
    @classmethod
    def _level(cls, v: str) -> str:
        v = v.lower()
        if v not in ("debug", "info", "warning", "error"):
            raise ValueError("must be one of debug, info, warning, error")
        return v

    @field_validator("analysis", mode="before")
    @classmethod
    def _snake_analysis(cls, v: Any) -> Any:
        # AnalysisOptions (owned by kernelscope.analysis) has snake_case fields and no aliases.
        return _snake_keys(v, AnalysisOptions) if isinstance(v, Mapping) else v

    def origin_of(self, path: str) -> Origin:
        """Origin of a setting or of the most specific layer that set anything under it."""
        if path in self.origins:
            return self.origins[path]
        under = [o for p, o in self.origins.items() if p.startswith(path + ".")]
        if Origin.workspace_file in under:
            return Origin.workspace_file  # the untrusted origin wins: a single workspace leaf taints the whole
        return Origin.user if under else Origin.default

    def from_workspace_file(self, path: str) -> bool:
        """True when a command-like setting (e.g. "profile", "analysis.nvccPath") came from a workspace file."""
        return self.origin_of(path) is Origin.workspace_file


def _snake_keys(d: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    by_camel = {to_camel(name): name for name in model.model_fields}
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = by_camel.get(k, k)
        if name == "launch_hints" and isinstance(v, Mapping):
            # Keys are kernel names: keep them, convert each hint's own fields.
            v = {kernel: _snake_keys(h, LaunchHint) if isinstance(h, Mapping) else h for kernel, h in v.items()}
        elif isinstance(v, Mapping) and name in model.model_fields and (sub := _submodel(model.model_fields[name])):
            v = _snake_keys(v, sub)  # a nested model's fields too (`budget.nvccMultiple`)
        out[name] = v
    return out


# ---------------------------------------------------------------------------------------------
# Layers and merging


class WorkspaceFile(typing.NamedTuple):
    """The project file layer, as read from the workspace."""

    values: dict[str, Any]
    problems: list[str]  # files that could not be read, one line each
    sources: dict[str, str]  # camelCase leaf path -> the file that set it (the later file wins)


def read_workspace_file(root: Path | None) -> WorkspaceFile:
    """The project file layer: pyproject's [tool.kernelscope], overridden by .kernelscope.toml.

    A broken file is a problem to report, never a crash.
    """
    merged: dict[str, Any] = {}
    problems: list[str] = []
    sources: dict[str, str] = {}
    if root is None:
        return WorkspaceFile(merged, problems, sources)
    for name, pick in (("pyproject.toml", lambda t: t.get("tool", {}).get("kernelscope", {})),
                       (".kernelscope.toml", lambda t: t)):
        path = root / name
        if not path.is_file():
            continue
        try:
            table = pick(tomllib.loads(path.read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError) as e:
            problems.append(f"{path}: {e}")
            continue
        if isinstance(table, dict):
            _deep_merge(merged, table)
            sources.update({leaf: str(path) for leaf in _leaves(_canonical(table))})
    return WorkspaceFile(merged, problems, sources)


def _deep_merge(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    for k, v in new.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict) and k not in _OPAQUE:
            _deep_merge(into[k], v)
        else:
            into[k] = dict(v) if isinstance(v, Mapping) else v


#: dict-valued settings that replace as a whole (they are values, not nested settings)
_OPAQUE = {"env", "values"}


def _canonical(d: Mapping[str, Any], model: type[BaseModel] = None) -> dict[str, Any]:  # type: ignore[assignment]
    """Rewrite keys to camelCase, so that snake_case and camelCase layers merge into one key."""
    model = model or Settings
    out: dict[str, Any] = {}
    for k, v in d.items():
        if not isinstance(k, str) or v is None:
            continue  # editors send null for "not set": it must not override a lower layer
        key = to_camel(k) if "_" in k else k
        field = _field_by_camel(model, key)
        sub = _submodel(field) if field else None
        if isinstance(v, Mapping) and key == "launchHints":
            v = {kernel: _canonical(h, LaunchHint) if isinstance(h, Mapping) else h for kernel, h in v.items()}
        elif isinstance(v, Mapping) and sub is not None:
            v = _canonical(v, sub)
        out[key] = v
    return out


def _field_by_camel(model: type[BaseModel], key: str):
    for name, f in model.model_fields.items():
        if to_camel(name) == key:
            return f
    return None


def _submodel(field) -> type[BaseModel] | None:
    ann = field.annotation
    # Only the model itself or `Model | None`; dict[str, Model] values are keyed by user names.
    args = typing.get_args(ann) if typing.get_origin(ann) in (typing.Union, types.UnionType) else ()
    for cand in (ann, *args):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand
    return None


def _leaves(d: Mapping[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for k, v in d.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping) and k not in _OPAQUE and k != "launchHints" and v:
            out += _leaves(v, path + ".")
        else:
            out.append(path)
    return out


def _drop(d: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    """Remove the value at a pydantic error location (field names or aliases); True if something went."""
    node: Any = d
    for i, part in enumerate(loc):
        if not isinstance(node, dict):
            return False
        key = next((k for k in (part, to_camel(str(part))) if k in node), None)
        if key is None:
            return False
        if i == len(loc) - 1 or not isinstance(node[key], dict):
            del node[key]
            return True
        node = node[key]
    return False


def _display(loc: tuple[Any, ...]) -> str:
    return SECTION + "." + ".".join(to_camel(str(p)) if isinstance(p, str) else str(p) for p in loc)


def merge_user_layers(*layers: Any) -> dict[str, Any]:
    """initializationOptions then workspace/configuration: one "user" layer, later ones win."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if isinstance(layer, Mapping):
            _deep_merge(merged, _canonical(layer))
    return merged


def load_settings(user: Mapping[str, Any] | None, workspace_file: Mapping[str, Any] | None = None,
                  sources: Mapping[str, str] | None = None) -> tuple[Settings, list[str]]:
    """Merge the layers and validate; invalid values fall back to their defaults.

    `sources`: the file of each workspace-file leaf (`WorkspaceFile.sources`). Returns (settings,
    problems); each problem names the bad setting and why, for one window/showMessage. What the
    settings may do is `screen`'s to decide, after this.
    """
    merged: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    for layer, origin in ((workspace_file, Origin.workspace_file), (user, Origin.user)):
        if not isinstance(layer, Mapping):
            continue
        canon = _canonical(layer)
        for own in ("origins", "sources", "withheld"):
            canon.pop(own, None)  # provenance is ours to record, never the user's to claim
        _deep_merge(merged, canon)
        for path in _leaves(canon):
            origins[path] = origin
    problems: list[str] = []
    for _ in range(20):  # each round drops the offending values; a bounded loop cannot spin forever
        try:
            settings = Settings.model_validate(merged)
            break
        except ValidationError as e:
            dropped = False
            for err in e.errors():
                loc = tuple(err["loc"])
                problems.append(f"{_display(loc)}: {err['msg']}")
                # Drop the innermost value that pydantic can point at; fall back to its parents.
                for n in range(len(loc), 0, -1):
                    if _drop(merged, loc[:n]):
                        dropped = True
                        break
            if not dropped:
                settings = Settings()
                break
    else:  # pragma: no cover - only with pathological input
        settings = Settings()
    kept = {p: o for p, o in origins.items() if _has(merged, p)}
    files = {p: f for p, f in (sources or {}).items() if kept.get(p) is Origin.workspace_file}
    return settings.model_copy(update={"origins": kept, "sources": files}), list(dict.fromkeys(problems))


# ---------------------------------------------------------------------------------------------
# The trust model (docs/configuration.md, "Security"): what a value may do depends on where it came from.
#
# The user's own settings are the editor's in a trusted workspace. A file inside the workspace (a
# cloned repository) is not, and neither are the editor's settings in an untrusted workspace: the
# server cannot tell VS Code's user settings from a repository's .vscode/settings.json, both arrive
# as workspace/configuration. Clients without a trust concept (Neovim) say
# initializationOptions {"workspaceTrusted": true} for the workspaces the user trusts.

#: how the user trusts a workspace, said in every refusal that trust would lift
HOW_TO_TRUST = ('trust the workspace (VS Code: "Manage Workspace Trust"; other editors: initializationOptions '
                '{"workspaceTrusted": true})')
#: settings that choose a program the server runs (nvcc; the compiler a compile_commands.json names)
#: or a file it reads: from a workspace file they wait for trust; from the editor too, since the
#: server cannot tell whose editor settings they are
CHOOSES_A_PROGRAM = ("analysis.nvccPath", "analysis.compileCommands", "analysis.archFile")
#: settings that run the user's program: only in a trusted workspace, whatever their origin
RUNS_THE_PROGRAM = ("capture", "profile")
#: every setting `screen` may set aside; the VS Code extension lists them (and their leaves) in
#: package.json's `restrictedConfigurations`, so that VS Code itself ignores a workspace's values
RESTRICTED = (*CHOOSES_A_PROGRAM, "analysis.flags", *RUNS_THE_PROGRAM, "cache.directory")


@dataclass(frozen=True)
class Refusal:
    """A setting `screen` set aside, and why: one clause of one message to the user."""

    setting: str  # dotted camelCase, e.g. "analysis.flags"
    source: str  # the workspace file's path, or "the editor's settings"
    why: str
    until_trusted: bool  # trusting the workspace would lift it

    def text(self) -> str:
        return f"{SECTION}.{self.setting} from {self.source}: {self.why}."


def refusal_message(refused: list[Refusal]) -> str:
    """One window/showMessage for everything set aside by one settings load."""
    text = "kernelscope: settings not used. " + " ".join(r.text() for r in refused)
    if any(r.until_trusted for r in refused):
        text += f" To use what waits for trust, {HOW_TO_TRUST}."
    if any(not r.until_trusted for r in refused):
        text += " A setting a workspace may never choose can be set in your own editor settings."
    return text


def screen(settings: Settings, trusted: bool) -> tuple[Settings, list[Refusal]]:
    """`settings` minus what its origins may not decide; the one place the trust model lives.

    - capture and profile run the program: only in a trusted workspace, whatever their origin;
    - nvccPath, compileCommands, archFile choose a program or a file: from a workspace file or the
      editor, only in a trusted workspace;
    - flags that are not the user's own (a workspace file's, or the editor's in an untrusted
      workspace) pass the allow-list of analysis/frontend/flag_policy.py, shell metacharacters never;
    - cache.directory decides which results are shown as kernelscope's: never from a workspace
      file, from the editor only in a trusted workspace.
    """
    refused: list[Refusal] = []

    def refuse(setting: str, why: str, until_trusted: bool) -> None:
        origin = settings.origin_of(setting)
        source = "the editor's settings" if origin is not Origin.workspace_file else next(
            (f for p, f in sorted(settings.sources.items()) if p == setting or p.startswith(setting + ".")),
            "a workspace file")
        refused.append(Refusal(setting, source, why, until_trusted))

    untrusted = "the workspace is not trusted"
    analysis: dict[str, Any] = {}
    update: dict[str, Any] = {}
    if not trusted and settings.capture.enabled:
        # on by default, and VS Code sends every default as the editor's value: only a workspace
        # file asking for it is news; the editor's (the default) is silently off until trusted
        if settings.origin_of("capture") is Origin.workspace_file:
            refuse("capture", f"it builds and runs the file's main(), and {untrusted}", True)
        update["capture"] = settings.capture.model_copy(update={"enabled": False})
    if not trusted and settings.profile is not None:
        refuse("profile", f"it runs your program under Nsight Compute, and {untrusted}", True)
        update["profile"] = None
    for name in CHOOSES_A_PROGRAM:
        field = to_snake(name.split(".", 1)[1])
        if not trusted and getattr(settings.analysis, field) is not None:
            refuse(name, f"it names a program to run or a file to read, and {untrusted}", True)
            analysis[field] = None
    flags_origin = settings.origin_of("analysis.flags")
    if settings.analysis.flags and (flags_origin is Origin.workspace_file or not trusted):
        if (why := refused_flag(settings.analysis.flags)) is not None:
            allowed = f"flags that are not your own may only be {ALLOWED}"
            if flags_origin is Origin.workspace_file:
                refuse("analysis.flags", f"{why} ({allowed})", False)
            else:
                refuse("analysis.flags", f"{why}, and {untrusted} ({allowed})", True)
            analysis["flags"] = ()
    if settings.cache.directory is not None:
        if settings.origin_of("cache.directory") is Origin.workspace_file:
            refuse("cache.directory", "a file inside the workspace never chooses where kernelscope keeps the "
                                      "results it shows", False)
            update["cache"] = settings.cache.model_copy(update={"directory": None})
        elif not trusted:
            refuse("cache.directory", f"the cache decides which results are shown, and {untrusted}", True)
            update["cache"] = settings.cache.model_copy(update={"directory": None})
    if not refused and not update and not analysis:
        return settings, []
    gone = [r.setting for r in refused]
    keep = lambda p: not any(p == g or p.startswith(g + ".") for g in gone)  # noqa: E731
    update.update(analysis=settings.analysis.model_copy(update=analysis),
                  withheld={r.setting: r.source for r in refused},
                  origins={p: o for p, o in settings.origins.items() if keep(p)},
                  sources={p: f for p, f in settings.sources.items() if keep(p)})
    return settings.model_copy(update=update), refused


def _has(d: Mapping[str, Any], path: str) -> bool:
    node: Any = d
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


# ---------------------------------------------------------------------------------------------
# docs/configuration.md


def _type_name(ann: Any) -> str:
    s = getattr(ann, "__name__", None) if isinstance(ann, type) else None
    s = s or str(ann).replace("typing.", "").replace("pathlib.", "").replace("NoneType", "None")
    return s.replace("kernelscope.analysis.options.", "")


def _default(field) -> str:
    if field.is_required():
        return "(required)"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, Enum):
        value = value.value
    import json

    try:
        return "`" + json.dumps(value) + "`"
    except TypeError:
        return f"`{value}`"


def _rows(model: type[BaseModel], prefix: str) -> list[str]:
    rows: list[str] = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        key = f"{prefix}.{to_camel(name)}"
        sub = _submodel(field)
        if sub is not None and sub is not LaunchHint:
            rows.append(f"| `{key}` | object | {_default(field)} | {field.description or ''} |")
            rows += _rows(sub, key)
            continue
        desc = (field.description or "").replace("|", "\\|")
        typ = _type_name(field.annotation).replace("|", "\\|")
        rows.append(f"| `{key}` | `{typ}` | {_default(field)} | {desc} |")
    return rows


def markdown() -> str:
    hint_rows = _rows(LaunchHint, f"{SECTION}.analysis.launchHints.<kernel>")
    return "\n".join([
        "# Configuration",
        "",
        "<!-- Generated by `python -m kernelscope.server.settings --markdown`; tests/lsp/test_settings.py",
        "     fails when this file and server/settings.py disagree. Do not edit by hand. -->",
        "",
        "Settings live under the `kernelscope` section. The server reads, lowest precedence first:",
        "",
        "1. the defaults below;",
        "2. the workspace's `pyproject.toml` (`[tool.kernelscope]`), then `.kernelscope.toml` at the workspace root;",
        "3. the editor: `initializationOptions`, then the `kernelscope` section of `workspace/configuration`",
        "   (re-read on `workspace/didChangeConfiguration`).",
        "",
        "Keys are camelCase (`nvccPath`); snake_case (`nvcc_path`) is accepted too, which suits TOML files.",
        "An invalid value is reported once in a message that names it, and its default is used instead.",
        "",
        "What a setting may do depends on where it comes from and on whether the workspace is trusted:",
        "see [Security](#security) below.",
        "",
        "| Setting | Type | Default | Description |",
        "|---|---|---|---|",
        *_rows(Settings, SECTION),
        "",
        "## Launch hints",
        "",
        "`analysis.launchHints` maps a kernel name to what the model should assume about its launch:",
        "",
        "| Setting | Type | Default | Description |",
        "|---|---|---|---|",
        *hint_rows,
        "",
        "## Example",
        "",
        "```toml",
        "# .kernelscope.toml",
        "[analysis]",
        "arch = \"sm_80\"",
        "flags = [\"-O3\", \"-std=c++17\"]",
        "defaultTripCount = 128",
        "",
        "[analysis.launchHints.saxpy]",
        "grid = 4096",
        "block = 256",
        "",
        "[cache]",
        "maxMegabytes = 512",
        "```",
        "",
        *_security(),
    ])


def _security() -> list[str]:
    restricted = ", ".join(f"`{SECTION}.{r}`" for r in RESTRICTED)
    return [
        "## Security",
        "",
        "kernelscope compiles the files you open and can run programs: nvcc and the host compiler it",
        "starts, the compiler a `compile_commands.json` names, the file's own `main()` for launch capture,",
        "and your program under Nsight Compute for `profile`. A cloned repository must not choose any of",
        "them, so what a setting may do depends on where it comes from (`screen` in server/settings.py):",
        "",
        "| From | `analysis.nvccPath`, `analysis.compileCommands`, `analysis.archFile` | `capture`, `profile` | `analysis.flags` | `cache.directory` |",
        "|---|---|---|---|---|",
        "| the editor, trusted workspace | used | used | used as written | used |",
        "| the editor, untrusted workspace | set aside | set aside | allow-list | set aside |",
        "| a workspace file, trusted workspace | used | used | allow-list | never |",
        "| a workspace file, untrusted workspace | set aside | set aside | allow-list | never |",
        "",
        "- **The editor** is `initializationOptions` and `workspace/configuration`. The server cannot tell",
        "  your user settings from a repository's `.vscode/settings.json`: both arrive the same way, so in",
        "  an untrusted workspace they count as the workspace's. The VS Code extension lists every setting",
        f"  above in `restrictedConfigurations` ({restricted} and their leaves), so VS Code",
        "  itself ignores a workspace's values of them until you trust it.",
        "- **A workspace file** is `pyproject.toml` (`[tool.kernelscope]`) or `.kernelscope.toml` at the",
        "  workspace root. Trusting the workspace lets it choose programs (you trust its code to run), never",
        "  the cache: the cache decides which results are shown as kernelscope's, and a repository could",
        "  ship forged ones.",
        "- **Trust**: VS Code's Workspace Trust (the extension sends `workspaceTrusted` at start-up and",
        "  `kernelscope/didGrantWorkspaceTrust` when you grant it). Other editors have no trust concept:",
        "  `initializationOptions: {\"workspaceTrusted\": true}` in your own client configuration says so,",
        "  for the workspaces you trust. A client that says nothing is untrusted. Granting or withdrawing",
        "  trust re-reads the settings and analyses the open files again.",
        "- **Flags that are not your own** (a workspace file's, or the editor's in an untrusted workspace)",
        f"  pass an allow-list: {ALLOWED}. No character a shell interprets may appear in them",
        "  (`$`, backtick, `\\`, quotes, `;`, `|`, `&`, `<`, `>`, parentheses, globs, whitespace): nvcc hands",
        "  `-D`/`-U` values to `/bin/sh` inside double quotes, so `-DX=$(cmd)` would run `cmd`. Anything else",
        "  (`-Xcompiler`, `-ccbin`, `--options-file`, `--forward-unknown-to-host-compiler -B<dir>/`, which",
        "  makes gcc run `<dir>/cc1plus`) sets the whole `analysis.flags` of that source aside.",
        "- **Capture and profiling** run your program, so they run only in a trusted workspace, wherever",
        "  the setting comes from.",
        "",
        "What is set aside is named, with the file it came from, in one message; everything else applies.",
        "In an untrusted workspace kernelscope still compiles and models every file with the nvcc it",
        "finds by itself (docs/toolchain.md) and the allowed flags.",
        "",
        "The command line (`kernelscope analyze`) reads no workspace file: it runs what its arguments name.",
        "A `--compile-commands` database's compiler (when it is an nvcc) and its flags, `-ccbin` included,",
        "run as written: give it only a database you trust. `--capture` runs the file's `main()`.",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if argv == ["--json-schema"]:
        import json

        sys.stdout.write(json.dumps(Settings.model_json_schema(by_alias=True), indent=2) + "\n")
        return 0
    sys.stderr.write("usage: python -m kernelscope.server.settings --markdown | --json-schema\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
