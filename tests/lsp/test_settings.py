"""Settings: layers, origins, validation, and the generated docs/configuration.md."""

import subprocess
import sys
from pathlib import Path

from kernelscope.analysis.options import AnalysisBudget
from kernelscope.server.settings import Origin, Settings, load_settings, merge_user_layers, read_workspace_file

ROOT = Path(__file__).resolve().parents[2]


def test_configuration_doc_is_generated_from_the_model():
    generated = subprocess.run([sys.executable, "-m", "kernelscope.server.settings", "--markdown"],
                               capture_output=True, text=True, check=True).stdout
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == generated, "regenerate: python -m kernelscope.server.settings --markdown > docs/configuration.md"


def test_camel_and_snake_case_and_embedded_analysis_options():
    s, problems = load_settings({"analysis": {"nvccPath": "/opt/nvcc", "defaultTripCount": 7,
                                              "launchHints": {"my_kernel": {"tripCount": 3}}},
                                 "debounce_ms": 20, "cache": {"maxMegabytes": 5}})
    assert problems == []
    assert s.analysis.nvcc_path == "/opt/nvcc" and s.analysis.default_trip_count == 7
    assert s.analysis.launch_hints["my_kernel"].trip_count == 3  # kernel names are not re-cased
    assert s.debounce_ms == 20 and s.cache.max_megabytes == 5


def test_invalid_values_are_named_and_replaced_by_defaults():
    s, problems = load_settings({"analysis": {"arch": "bogus", "flags": ["-O3"]}, "maxConcurrentAnalyses": 0,
                                 "debounceMs": "soon"})
    assert s.analysis.arch == Settings().analysis.arch and s.analysis.flags == ("-O3",)
    assert s.max_concurrent_analyses == 2 and s.debounce_ms == 150
    text = "; ".join(problems)
    for name in ("kernelscope.analysis.arch", "kernelscope.maxConcurrentAnalyses", "kernelscope.debounceMs"):
        assert name in text


def test_origins_mark_workspace_file_commands(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kernelscope]\nprofile = { command = ["./app"] }\n[tool.kernelscope.analysis]\nnvcc_path = "/ws/nvcc"\n')
    (tmp_path / ".kernelscope.toml").write_text('debounceMs = 10\n[analysis]\narch = "sm_80"\n')
    ws, problems, sources = read_workspace_file(tmp_path)
    assert problems == [] and sources["profile.command"] == str(tmp_path / "pyproject.toml")
    assert sources["debounceMs"] == str(tmp_path / ".kernelscope.toml")
    s, problems = load_settings(merge_user_layers(None, {"analysis": {"nvccPath": None}}, {"analysis": {"flags": ["-O2"]}}),
                                ws, sources)
    assert problems == []
    assert s.profile is not None and s.profile.command == ("./app",)
    assert s.analysis.arch == "sm_80" and s.analysis.nvcc_path == "/ws/nvcc" and s.analysis.flags == ("-O2",)
    assert s.from_workspace_file("profile") and s.from_workspace_file("analysis.nvccPath")
    assert s.sources["analysis.nvccPath"] == str(tmp_path / "pyproject.toml") and "analysis.flags" not in s.sources
    assert s.origin_of("analysis.flags") is Origin.user
    assert s.origin_of("cache") is Origin.default
    # The user layer overrides the file, and then the value is the user's.
    s2, _ = load_settings({"analysis": {"nvccPath": "/usr/bin/nvcc"}}, ws)
    assert s2.analysis.nvcc_path == "/usr/bin/nvcc" and not s2.from_workspace_file("analysis.nvccPath")


def test_origins_cannot_be_claimed_by_input():
    s, _ = load_settings({"origins": {"profile": "user"}, "profile": {"command": ["x"]}}, None)
    assert s.origin_of("profile") is Origin.user and "origins" not in s.model_dump(by_alias=True)


def test_broken_workspace_file_is_a_problem_not_a_crash(tmp_path):
    (tmp_path / ".kernelscope.toml").write_text("this is = = not toml")
    ws, problems, _ = read_workspace_file(tmp_path)
    assert ws == {} and problems and ".kernelscope.toml" in problems[0]


def test_server_entry_point_help():
    out = subprocess.run([sys.executable, "-m", "kernelscope.server", "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "--tcp HOST:PORT" in out


def test_the_server_runs_the_second_stage_in_workers_only(tmp_path):
    """A hover during the second stage needs the server's interpreter: its analyses leave the runs
    to worker processes (emulator/workers.py), which changes neither the result nor its cache key."""
    from kernelscope.server.scheduler import _with_capture

    settings = Settings()
    opts = _with_capture(tmp_path / "k.cu", settings, None)
    assert opts.budget.workers_only and not settings.analysis.budget.workers_only
    assert opts.cache_key("digest", "13.5") == settings.analysis.cache_key("digest", "13.5")
    assert "workersOnly" not in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_screen_is_the_table_of_the_security_section(tmp_path):
    """docs/configuration.md, "Security": what each origin may set, trusted or not."""
    from kernelscope.server.settings import screen

    everything = {"analysis": {"nvccPath": "/x/nvcc", "compileCommands": "/x", "archFile": "/x/a.toml",
                               "flags": ["-Xcompiler", "-Wall"]},
                  "capture": {"enabled": True}, "profile": {"command": ["./app"]}, "cache": {"directory": "/c"}}
    restricted = {"analysis.nvccPath", "analysis.compileCommands", "analysis.archFile", "analysis.flags", "capture",
                  "profile", "cache.directory"}
    # the editor, trusted: all used as written
    s, _ = load_settings(everything)
    kept, refused = screen(s, trusted=True)
    assert refused == [] and kept.analysis.flags == ("-Xcompiler", "-Wall") and kept.cache.directory == Path("/c")
    # the editor, untrusted: every one set aside, each waiting for trust; capture (on by default, and
    # sent by VS Code as the editor's value) without a word
    held, refused = screen(s, trusted=False)
    aloud = restricted - {"capture"}
    assert {r.setting for r in refused} == aloud and all(r.until_trusted for r in refused)
    assert (held.analysis.nvcc_path, held.analysis.compile_commands, held.analysis.arch_file, held.profile,
            held.cache.directory, held.analysis.flags, held.capture.enabled) == (None, None, None, None, None, (), False)
    assert set(held.withheld) == aloud and not any(p.startswith(tuple(aloud)) for p in held.origins)
    # a workspace file, trusted: programs and capture used; flags only from the allow-list; never the cache
    src = str(tmp_path / ".kernelscope.toml")
    s, _ = load_settings(None, everything, {leaf: src for leaf in ("analysis.nvccPath", "analysis.compileCommands",
                                                                     "analysis.archFile", "analysis.flags",
                                                                     "capture.enabled", "profile.command",
                                                                     "cache.directory")})
    kept, refused = screen(s, trusted=True)
    assert [(r.setting, r.source, r.until_trusted) for r in refused] == [
        ("analysis.flags", src, False), ("cache.directory", src, False)]
    assert kept.analysis.nvcc_path == "/x/nvcc" and kept.capture.enabled and kept.profile is not None
    # a workspace file, untrusted: everything set aside, each naming the file
    _, refused = screen(s, trusted=False)
    assert {r.setting for r in refused} == restricted and {r.source for r in refused} == {src}
    # allowed flags from anywhere pass
    s, _ = load_settings(None, {"analysis": {"flags": ["-O3", "-DTILE=32", "-Iinclude"]}})
    assert screen(s, trusted=False)[1] == []


def test_a_workspace_file_cannot_make_an_analysis_unbounded(tmp_path):
    # the budget and the compile timeout have ceilings: a repository's file asking for a million
    # processes or a day per compile gets the defaults and a message naming each setting
    (tmp_path / ".kernelscope.toml").write_text(
        "[analysis]\ncompile_timeout_s = 86400\n[analysis.budget]\nprocesses = 1000000\nseconds = 1e9\nissues = 10000000000\n")
    values, problems, _ = read_workspace_file(tmp_path)
    assert not problems
    settings, problems = load_settings(None, values)
    budget = settings.analysis.budget
    assert (budget.processes, budget.seconds, budget.issues) == (None, 30.0, AnalysisBudget().issues)
    assert settings.analysis.compile_timeout_s == 120.0
    for name in ("budget.processes", "budget.seconds", "budget.issues", "compileTimeoutS"):
        assert any(name in p for p in problems), (name, problems)
