"""Capture runs the user's program: from a workspace file it waits for trust, from the user's own
settings it runs (the rule of `profile`); the captured launches change the result cache key."""

from __future__ import annotations

from kernelscope.server.settings import load_settings, without_untrusted_commands


def test_capture_from_a_workspace_file_waits_for_trust():
    s, problems = load_settings(None, {"capture": {"enabled": True, "timeoutS": 5}})
    assert not problems and s.capture.enabled and s.capture.timeout_s == 5
    held, dropped = without_untrusted_commands(s, trusted=False)
    assert not held.capture.enabled and dropped == ["capture.enabled"]
    kept, dropped = without_untrusted_commands(s, trusted=True)
    assert kept.capture.enabled and dropped == []


def test_capture_from_user_settings_runs_untrusted():
    s, _ = load_settings({"capture": {"enabled": True, "args": ["--n", "64"]}}, None)
    kept, dropped = without_untrusted_commands(s, trusted=False)
    assert kept.capture.enabled and kept.capture.args == ("--n", "64") and dropped == []


def test_bad_capture_values_fall_back_with_a_message():
    s, problems = load_settings({"capture": {"timeoutS": -1, "launchesPerKernel": 0}}, None)
    assert s.capture.timeout_s == 20.0 and s.capture.launches_per_kernel == 64
    assert any("capture" in p for p in problems)
