"""Capture runs the user's program: only in a trusted workspace, wherever the setting comes from (the
rule of `profile`); the captured launches change the result cache key."""

from __future__ import annotations

from kernelscope.server.settings import load_settings, screen


def test_capture_from_a_workspace_file_waits_for_trust():
    s, problems = load_settings(None, {"capture": {"enabled": True, "timeoutS": 5}})
    assert not problems and s.capture.enabled and s.capture.timeout_s == 5
    held, refused = screen(s, trusted=False)
    assert not held.capture.enabled and [r.setting for r in refused] == ["capture"]
    kept, refused = screen(s, trusted=True)
    assert kept.capture.enabled and refused == []


def test_capture_from_the_editor_waits_for_trust_too():
    # The server cannot tell the user's settings from a repository's .vscode/settings.json.
    s, _ = load_settings({"capture": {"enabled": True, "args": ["--n", "64"]}}, None)
    held, refused = screen(s, trusted=False)
    # on by default, which VS Code sends as the editor's value: held back without a message
    assert not held.capture.enabled and refused == []
    kept, refused = screen(s, trusted=True)
    assert kept.capture.enabled and kept.capture.args == ("--n", "64") and refused == []


def test_capture_is_on_by_default_only_in_a_trusted_workspace():
    s, _ = load_settings(None, None)
    assert s.capture.enabled
    assert screen(s, trusted=True)[0].capture.enabled
    held, refused = screen(s, trusted=False)
    assert not held.capture.enabled and refused == []


def test_bad_capture_values_fall_back_with_a_message():
    s, problems = load_settings({"capture": {"timeoutS": -1, "launchesPerKernel": 0}}, None)
    assert s.capture.timeout_s == 20.0 and s.capture.launches_per_kernel == 64
    assert any("capture" in p for p in problems)
