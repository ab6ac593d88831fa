"""A real VS Code (code-server 4.100.3 in headless Chromium) with the built kernelscope .vsix.

Drives the workbench the way a user does (Ctrl+P, the command palette, Ctrl+.) and asserts on
what the workbench shows: the Problems count, a squiggle on the hot line, the hover text, the
roofline webview, the text after a quick fix. Screenshots of each step go to artifacts/vscode/.

Needs node + npm (build and code-server) and Chromium. code-server is installed once into
~/.cache/kernelscope-ci/code-server (about 2 minutes); later runs reuse it.
Debian packages: see code_server.APT_PACKAGES.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import code_server  # noqa: E402
from _load import load_file  # noqa: E402
from cdp import Browser, chromium_binary  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "vscode-client"
ARTIFACTS = REPO / "artifacts" / "vscode"
#: the first compile + emulation on a cold, 2-core machine
ANALYSIS_TIMEOUT = float(os.environ.get("KERNELSCOPE_TEST_TIMEOUT", "240"))

#: 1-based; `acc += A[row * n + k] * B[k * n + col];`, the modeled profile's hottest line
HOT_LINE = 28
#: 1-based; `for (int k = 0; k < n; ++k)`, whose diagnostic's related information leads to HOT_LINE
LOOP_LINE = 27
#: the file and 1-based kernel line whose quick fix step 4 applies (`__restrict__`)
FIX_FILE, FIX_LINE = "stencil_double_const.cu", 21

_missing = [name for name, ok in (("node", shutil.which("node")), ("npm", shutil.which("npm")),
                                  ("chromium", chromium_binary())) if not ok]
pytestmark = [
    pytest.mark.editor,
    pytest.mark.slow,
    # builds in vscode-client/ as tests/clients/test_vscode_unit.py does: the same worker
    pytest.mark.xdist_group("vscode-client"),
    pytest.mark.skipif(bool(_missing), reason=f"{', '.join(_missing)} not installed (Debian: apt-get install -y "
                       f"nodejs npm {' '.join(code_server.APT_PACKAGES)})"),
]


def _kernelscope_executable() -> str:
    exe = Path(sys.executable).parent / "kernelscope"
    return str(exe) if exe.exists() else (shutil.which("kernelscope") or "kernelscope")


def build_vsix(out: Path) -> Path:
    return load_file(CLIENT / "scripts" / "build.py").package(out / "kernelscope.vsix")


# -- workbench helpers (JavaScript run in the page) ---------------------------------------------

_EDITOR_LINE_TOPS = """(() => {
  const ed = document.querySelector('.editor-instance .monaco-editor');
  if (!ed) return null;
  const tops = {};
  for (const n of ed.querySelectorAll('.margin-view-overlays .line-numbers')) {
    tops[Math.round(n.parentElement.getBoundingClientRect().top)] = parseInt(n.textContent, 10);
  }
  return tops;
})()"""

_SQUIGGLE_LINES = """(() => {
  const ed = document.querySelector('.editor-instance .monaco-editor');
  if (!ed) return [];
  const tops = %s;
  const lines = new Set();
  for (const s of ed.querySelectorAll('.view-overlays [class*="squiggly-"]')) {
    const top = Math.round(s.getBoundingClientRect().top);
    if (tops && tops[top] !== undefined) lines.add(tops[top]);
  }
  return [...lines].sort((a, b) => a - b);
})()""" % _EDITOR_LINE_TOPS

#: lines (1-based) with a heat bar in the gutter: margin elements whose background is a heat icon
_HEAT_LINES = """(() => {
  const ed = document.querySelector('.editor-instance .monaco-editor');
  if (!ed) return [];
  const tops = %s;
  const lines = new Set();
  for (const el of ed.querySelectorAll('.margin *')) {
    if (!getComputedStyle(el).backgroundImage.includes('heat-')) continue;
    const top = Math.round(el.getBoundingClientRect().top);
    for (const t of Object.keys(tops)) {
      if (Math.abs(Number(t) - top) <= 2) lines.add(tops[t]);
    }
  }
  return [...lines].sort((a, b) => a - b);
})()""" % _EDITOR_LINE_TOPS

#: lines (1-based) tinted by the heat decoration's background: line overlays in a heat colour
_TINTED_LINES = """(() => {
  const ed = document.querySelector('.editor-instance .monaco-editor');
  if (!ed) return [];
  const tops = %s;
  const heat = ['244, 211, 94', '246, 174, 45', '242, 100, 25', '231, 111, 81', '193, 18, 31'];
  const lines = new Set();
  for (const el of ed.querySelectorAll('.view-overlays > div > div')) {
    const bg = getComputedStyle(el).backgroundColor;
    if (!heat.some(c => bg.includes(c))) continue;
    const top = Math.round(el.getBoundingClientRect().top);
    for (const t of Object.keys(tops)) {
      if (Math.abs(Number(t) - top) <= 2) lines.add(tops[t]);
    }
  }
  return [...lines].sort((a, b) => a - b);
})()""" % _EDITOR_LINE_TOPS

_LENSES = """Array.from(document.querySelectorAll('.editor-instance .codelens-decoration'))
  .map(e => e.innerText).join('\\n')"""


def _line_text(line: int) -> str:
    """JS: the rendered text of a 1-based editor line, or null when it is scrolled out of view."""
    return """(() => {
  const ed = document.querySelector('.editor-instance .monaco-editor');
  const tops = %s;
  for (const v of ed.querySelectorAll('.view-lines .view-line')) {
    if (tops[Math.round(v.getBoundingClientRect().top)] === %d) return v.textContent;
  }
  return null;
})()""" % (_EDITOR_LINE_TOPS, line)


_PROBLEMS_COUNT = """(() => {
  const item = document.querySelector('#status\\\\.problems');
  if (!item) return null;
  const nums = (item.textContent.match(/\\d+/g) || []).map(Number);
  return nums.reduce((a, b) => a + b, 0);
})()"""

_KS_STATUS = """(() => {
  for (const el of document.querySelectorAll('.statusbar-item')) {
    if (el.textContent.includes('kernelscope')) return el.textContent.trim();
  }
  return null;
})()"""


def _text(browser: Browser, selector: str) -> str:
    return browser.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                        "return e ? e.innerText : ''; }})()") or ""


def run_command(browser: Browser, title: str) -> None:
    """Run a command from the palette by its full title, e.g. 'kernelscope: Show Roofline'."""
    browser.key("P", "Control", "Shift")
    browser.wait_for("!!document.querySelector('.quick-input-widget:not([style*=\"display: none\"]) input')",
                     10, "the command palette")
    browser.type(title)
    browser.wait_for(f"Array.from(document.querySelectorAll('.quick-input-list .monaco-list-row'))"
                     f".some(r => r.innerText.includes({json.dumps(title.split(': ', 1)[-1])}))",
                     10, f"'{title}' in the palette")
    browser.key("Enter")


def open_file(browser: Browser, name: str) -> None:
    """Quick open (Ctrl+P) a workspace file and wait for its editor tab."""
    browser.key("P", "Control")
    browser.wait_for("!!document.querySelector('.quick-input-widget:not([style*=\"display: none\"]) input')",
                     10, "quick open")
    browser.type(name)
    browser.wait_for("Array.from(document.querySelectorAll('.quick-input-list .monaco-list-row'))"
                     f".some(r => r.innerText.includes('{name}'))", 20, f"{name} in quick open")
    browser.key("Enter")
    browser.wait_for(f"!!document.querySelector('.tab.active[aria-label*=\"{name}\"]')", 20, f"the {name} editor")


def goto(browser: Browser, line: int, col: int = 1) -> None:
    browser.key("G", "Control")
    browser.wait_for("!!document.querySelector('.quick-input-widget:not([style*=\"display: none\"]) input')",
                     10, "the go-to-line box")
    browser.type(f"{line}:{col}")
    time.sleep(0.2)
    browser.key("Enter")
    time.sleep(0.3)


@pytest.fixture
def workbench(tmp_path):
    """code-server with the freshly built extension, and a browser on it, stopped afterwards by PID."""
    t0 = time.monotonic()
    entry = code_server.install()
    vsix = build_vsix(tmp_path)
    ws = tmp_path / "examples"
    shutil.copytree(REPO / "examples", ws)
    settings = {
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "extensions.ignoreRecommendations": True,
        "telemetry.telemetryLevel": "off",
        "chat.commandCenter.enabled": False,
        "editor.hover.delay": 200,
        # the optional heat decoration (#17 item 6), off by default
        "kernelscope.heat.style": "gutter",
        "kernelscope.server.path": _kernelscope_executable(),
        # A cache of its own: the test must see a real compile, not a result from an earlier run.
        "kernelscope.cache.directory": str(tmp_path / "ks-cache"),
    }
    cs = code_server.Server(entry, ws, tmp_path / "cs", settings)
    cs.install_extension(vsix)
    # The server finds nvcc like the CLI does; the venv's bin on PATH keeps that identical.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    url = cs.start(env)
    browser = Browser(chromium_binary())  # type: ignore[arg-type]
    setup_s = time.monotonic() - t0
    try:
        browser.navigate(f"{url}?folder={ws}")
        browser.wait_for("!!document.querySelector('.monaco-workbench .part.editor')", 60, "the workbench")
        yield browser, ws, cs, setup_s
    finally:
        browser.close()
        cs.stop()


def test_vscode_diagnostics_hover_roofline_quickfix(workbench):
    browser, ws, cs, setup_s = workbench
    try:
        _steps(browser, ws, cs, setup_s)
    except Exception:
        _diagnose(browser, cs)
        raise


def _diagnose(browser: Browser, cs: code_server.Server) -> None:
    """What a failed run leaves for a human: a screenshot, the status bar, the extension's log."""
    with contextlib.suppress(Exception):
        browser.screenshot(ARTIFACTS / "failure.png")
    with contextlib.suppress(Exception):
        print("status bar:", browser.eval("Array.from(document.querySelectorAll('.statusbar-item'))"
                                          ".map(e => e.textContent.trim())"), file=sys.stderr)
    for log in sorted(cs.data.glob("logs/**/*.log")):
        if "kernelscope" in str(log) or log.name in ("exthost.log", "remoteexthost.log"):
            print(f"--- {log}\n{log.read_text(errors='replace')[-6000:]}", file=sys.stderr)
    print(f"--- code-server\n{cs.log_path.read_text(errors='replace')[-3000:]}", file=sys.stderr)


def _steps(browser: Browser, ws: Path, cs: code_server.Server, setup_s: float) -> None:
    shots = ARTIFACTS
    t0 = time.monotonic()

    # 1. Open the file; wait for kernelscope's diagnostics and a squiggle on the hot line.
    browser.wait_for(_KS_STATUS, 60, "the kernelscope status bar item (extension activated)")
    open_file(browser, "sgemm_naive.cu")
    status = browser.wait_for(f"(() => {{ const s = {_KS_STATUS}; return s && /\\d+ findings?/.test(s) ? s : null; }})()",
                              ANALYSIS_TIMEOUT, "kernelscope's status bar result")
    assert re.search(r"kernelscope: \d+ findings? \(modeled\)", status), status
    problems = browser.wait_for(_PROBLEMS_COUNT, 30, "a Problems count > 0")
    assert problems > 0
    goto(browser, HOT_LINE - 8)  # scroll so lines 20..35 are in view
    lines = browser.wait_for(_SQUIGGLE_LINES, 20, "squiggles in the editor")
    assert HOT_LINE in lines, f"no squiggle on line {HOT_LINE}: squiggles on {lines}"
    browser.screenshot(shots / "1-diagnostics.png")

    # 1b. Per-line cost without code moving (#17 item 6): the inlay hint at the end of the hot line
    # ("34 % · lg throttle"), the kernel's lens above its signature, and the heat bar in the gutter.
    hinted = browser.wait_for(f"(() => {{ const l = {_line_text(HOT_LINE)}; "
                              "return l && /\\d+\\s%\\s·\\s[a-z]/.test(l) ? l : null; })()", 30, "the hot line's inlay hint")
    assert "acc\xa0+=" in hinted.replace(" ", "\xa0"), hinted
    lens = browser.wait_for(f"(() => {{ const t = {_LENSES}; return /occupancy/.test(t) ? t : null; }})()",
                            30, "the kernel's code lens")
    assert "modeled" in lens, lens
    heat = browser.wait_for(_HEAT_LINES, 30, "heat bars in the gutter")
    assert HOT_LINE in heat, f"no heat bar on line {HOT_LINE}: bars on {heat}"
    browser.screenshot(shots / "1b-hints-lens-heat.png")

    # 2. Hover the hot line: its share of the stall samples, marked as modeled.
    goto(browser, HOT_LINE, 9)  # on `acc`
    browser.key("K", "Control")
    browser.key("I", "Control")  # editor.action.showHover
    # VS Code shows the diagnostics' hovers first; the server's own hover is the part that
    # starts "kernelscope · line 28".
    part = ("(() => { const rows = Array.from(document.querySelectorAll('.monaco-hover .hover-row'));"
            " return rows.find(r => /kernelscope . line \\d+ in/.test(r.innerText)); })()")
    hover = browser.wait_for(f"(() => {{ const r = {part}; return r ? r.innerText : null; }})()",
                             20, "kernelscope's hover")
    assert re.search(rf"line {HOT_LINE} in \S+ . [\d.]+ ?% of the kernel's samples \(modeled\)", hover), hover
    browser.eval(f"{part}.scrollIntoView()")  # for the screenshot
    time.sleep(0.3)
    browser.screenshot(shots / "2-hover.png")
    # Its advice cites the paper equation that estimated it, linked to docs/advisor.md (#17 item 8).
    eq = ("(() => Array.from(document.querySelectorAll('.monaco-hover a'))"
          ".find(a => /^(GPA|Starlight) Eq\\. \\d+$/.test(a.innerText.trim())))()")
    href = browser.wait_for(f"(() => {{ const a = {eq}; return a ? (a.dataset.href || a.href) : null; }})()",
                            10, "an equation link in the hover")
    assert re.search(r"advisor\.md#L\d+$", href), href
    browser.eval(f"{eq}.scrollIntoView()")
    box = browser.eval(f"(() => {{ const r = {eq}.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
    browser.click(*box)
    browser.wait_for("!!document.querySelector('.tab.active[aria-label*=\"advisor.md\"]')", 20,
                     "docs/advisor.md opened from the hover's link")
    browser.wait_for("Array.from(document.querySelectorAll('.editor-instance .view-lines .view-line'))"
                     ".some(l => l.textContent.includes('Estimators'))", 20, "advisor.md's estimators section in view")
    browser.screenshot(shots / "2a-advisor-doc.png")
    browser.key("W", "Control")
    browser.wait_for("!!document.querySelector('.tab.active[aria-label*=\"sgemm_naive.cu\"]')", 20,
                     "the sgemm_naive.cu editor again")
    browser.key("Escape")

    # 2b. Blame as navigation (#17 item 7): the loop line's diagnostic links, as related information,
    # to the loads its stalls wait on; clicking the link in the hover moves the cursor there.
    goto(browser, LOOP_LINE, 9)
    browser.key("K", "Control")
    browser.key("I", "Control")
    link = ("(() => Array.from(document.querySelectorAll('.monaco-hover .marker a'))"
            ".find(a => /sgemm_naive\\.cu\\(%d, \\d+\\)/.test(a.innerText)))()" % HOT_LINE)
    text = browser.wait_for(f"(() => {{ const a = {link}; return a ? a.parentElement.innerText : null; }})()",
                            20, "the related-information link in the diagnostic's hover")
    assert "feeds" in text, text
    browser.screenshot(shots / "2b-blame-link.png")
    box = browser.eval(f"(() => {{ const r = {link}.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
    browser.click(*box)
    cursor = browser.wait_for(f"(() => {{ const s = document.querySelector('#status\\\\.editor\\\\.selection'); "
                              f"return s && /Ln {HOT_LINE},/.test(s.innerText) ? s.innerText : null; }})()",
                              10, f"the cursor on line {HOT_LINE}")
    assert f"Ln {HOT_LINE}," in cursor
    browser.key("Escape")

    # 3. The roofline webview, drawn from the server's SVG.
    run_command(browser, "kernelscope: Show Roofline")
    browser.wait_for("!!document.querySelector('iframe.webview')", 20, "the roofline webview")
    svg = _wait_frames(browser, "svg", 60, "an <svg> in the roofline webview")
    assert "roofline" in svg[0].lower() and "sgemm_naive" in svg[0], svg[0][:500]
    browser.screenshot(shots / "3-roofline.png")

    open_file(browser, "sgemm_naive.cu")  # back from the webview: the commands act on the active editor
    # 5. Analyse Now: one more analysis, as the server's log (the output channel) shows.
    before = _analyses(cs)
    run_command(browser, "kernelscope: Analyse Now")
    deadline = time.monotonic() + ANALYSIS_TIMEOUT
    while _analyses(cs) <= before and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _analyses(cs) > before, "Analyse Now started no analysis"
    browser.wait_for(f"(() => {{ const s = {_KS_STATUS}; return s && /\\d+ findings?/.test(s) ? s : null; }})()",
                     ANALYSIS_TIMEOUT, "the status bar result after Analyse Now")

    # 6. The kernel report (the code lens command), in the Markdown preview.
    run_command(browser, "kernelscope: Show Kernel Report")
    report = _wait_frames(browser, ".markdown-body", 30, "the kernel report preview", contains="sgemm_naive")
    assert any("bound" in r for r in report), report
    time.sleep(1)  # the preview's frame has its text before it has painted
    browser.screenshot(shots / "6-kernel-report.png")

    # 7. Profile Now answers, never silently: here no profile command is configured (and no GPU exists).
    run_command(browser, "kernelscope: Profile Now")
    note = browser.wait_for("(() => { const t = Array.from(document.querySelectorAll('.notification-toast'))"
                            ".map(e => e.innerText).join('\\n'); return /kernelscope/.test(t) ? t : null; })()",
                            60, "a kernelscope notification after Profile Now")
    assert "profile" in note.lower(), note
    browser.screenshot(shots / "7-profile-now.png")

    # 8. The heat as a background tint instead: the setting applies at once, without a new analysis.
    # Changed as a user does, in the settings editor (code-server does not notice the file changing
    # under it), then back to the CUDA file.
    settings_file = cs.data / "User" / "settings.json"
    settings = json.loads(settings_file.read_text())
    run_command(browser, "Preferences: Open User Settings (JSON)")
    browser.wait_for("!!document.querySelector('.tab.active[aria-label*=\"settings.json\"]')", 20,
                     "the settings.json editor")
    browser.key("A", "Control")
    browser.type(json.dumps({**settings, "kernelscope.heat.style": "background"}))  # one line: no auto-indent
    browser.key("End", "Control", "Shift")  # what the editor's auto-closing added after the text
    browser.key("Delete")
    browser.key("S", "Control")
    deadline = time.monotonic() + 10
    while '"background"' not in settings_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert json.loads(settings_file.read_text())["kernelscope.heat.style"] == "background"
    browser.key("W", "Control")
    browser.wait_for("!!document.querySelector('.tab.active[aria-label*=\"sgemm_naive.cu\"]')", 20,
                     "the sgemm_naive.cu editor again")
    browser.wait_for(f"(() => {{ const h = {_HEAT_LINES}; return h.length === 0; }})()", 30,
                     "the gutter bars to go")
    tinted = browser.wait_for(_TINTED_LINES, 30, "tinted lines")
    assert HOT_LINE in tinted, f"no tint on line {HOT_LINE}: tints on {tinted}"
    browser.screenshot(shots / "8-heat-background.png")
    # 9. A quick fix on a kernel's line: `const __restrict__` on the stencil (its loads after a store
    # may alias it; sgemm_naive's loads all precede its store, so it gets no such advice), then save
    # and read the file.
    run_command(browser, "View: Close All Editors")  # the line probes read the first editor on the page
    browser.wait_for("!document.querySelector('.editor-instance .monaco-editor')", 20, "no editor open")
    open_file(browser, FIX_FILE)
    browser.wait_for(f"(() => {{ const s = {_KS_STATUS}; return s && /\\d+ findings?/.test(s) ? s : null; }})()",
                     ANALYSIS_TIMEOUT, f"kernelscope's result for {FIX_FILE}")
    goto(browser, FIX_LINE, 1)
    rows = "Array.from(document.querySelectorAll('.action-widget .monaco-list-row'))"
    fix = "r.innerText.trim().startsWith('Mark pointers')"  # the fix itself, not "Explain: Mark pointers…"
    deadline = time.monotonic() + ANALYSIS_TIMEOUT
    while True:  # the status bar may still show the other file's result: ask again until the fix is offered
        browser.key(".", "Control")
        try:
            browser.wait_for(f"{rows}.some(r => {fix})", 5, "the __restrict__ quick fix")
            break
        except TimeoutError:
            if time.monotonic() > deadline:
                raise
            browser.key("Escape")
    browser.screenshot(shots / "9-quickfix-menu.png")
    for _ in range(10):  # walk the menu to the fix; Enter applies the focused row
        if browser.eval(f"{rows}.some(r => r.classList.contains('focused') && {fix})"):
            break
        browser.key("ArrowDown")
        time.sleep(0.1)
    browser.key("Enter")
    browser.wait_for(f"(() => {{ const l = {_line_text(FIX_LINE)}; return l && l.includes('__restrict__'); }})()",
                     10, "the edit in the editor")
    browser.screenshot(shots / "9-quickfix-applied.png")
    browser.key("S", "Control")  # VS Code may already have saved it (it saves files a refactoring touched)
    deadline = time.monotonic() + 10
    while "__restrict__" not in (ws / FIX_FILE).read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    text = (ws / FIX_FILE).read_text().splitlines()
    assert "__restrict__" in text[FIX_LINE - 1], text[FIX_LINE - 1]
    print(f"\nVS Code e2e: setup {setup_s:.0f} s, steps {time.monotonic() - t0:.0f} s", file=sys.stderr)


def _analyses(cs: code_server.Server) -> int:
    """Analyses the server has finished, counted in the extension's output channel (a log file):
    compiled ("cache: miss") or answered from the cache for an unchanged file ("cache: hit")."""
    return sum(log.read_text(errors="replace").count(": cache: ")
               for log in cs.data.glob("logs/*/exthost*/kernelscope.kernelscope/kernelscope.log"))


def _wait_frames(browser: Browser, selector: str, timeout: float, what: str, contains: str = "") -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [f for f in browser.frame_texts(selector) if contains in f]
        if found:
            return found
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")
