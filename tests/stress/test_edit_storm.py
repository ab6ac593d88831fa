"""Edit storms: random edit/save cycles over the real example kernels, and no result in the wrong place.

Invariant, for every textDocument/publishDiagnostics the server sends (it carries the document
version it describes): each diagnostic's range lies inside that version of the text, and its
`data.lineText` (the analysed text of its line, attached by features/diagnostics.py) equals the
text of the line it is on in that version. Results follow edits; a result whose line was edited
must be withdrawn, never shown on other text.

Edits: whole-line replacements, insertions and deletions (so positions need no UTF-16 arithmetic
on our side), unicode (é, 😀, CJK), code broken and repaired; saves come in bursts shorter than
the debounce, so most are superseded, and some land while a compile runs (which is then killed).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from .client import RawServer, processes_of
from .conftest import report, scaled

pytestmark = pytest.mark.slow

FILES = ("strided_access.cu", "sgemm_naive.cu")
UNICODE = ["// é", "// 😀😀", "// 中文注释", "/* é😀中 */", "// \u00e9\u0301 combining"]
BREAKERS = ["int broken = ;", "@@ not cuda @@", "undefined_fn(1);", "float x = \"s\";", "}"]


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _edit(rng: random.Random, lines: list[str]) -> tuple[int, int, list[str]]:
    """(first line, end line exclusive, replacement lines) of one random edit."""
    n = len(lines)
    kind = rng.random()
    at = rng.randrange(n)
    if kind < 0.30:  # insert lines
        return at, at, [rng.choice(UNICODE + BREAKERS + ["", "    int pad = 0;"]) for _ in range(rng.randint(1, 3))]
    if kind < 0.50 and n > 20:  # delete lines
        return at, min(n, at + rng.randint(1, 2)), []
    if kind < 0.80:  # change inside a line (append, or drop a character: often breaks the code)
        line = lines[at]
        if rng.random() < 0.5 or not line:
            new = line + " " + rng.choice(UNICODE)
        else:
            i = rng.randrange(len(line))
            new = line[:i] + line[i + 1:]
        return at, at + 1, [new]
    # undo-like: restore a pristine line from the original file where it still fits
    return at, at + 1, [rng.choice(lines)]


def test_edit_storm_results_always_on_the_analysed_text(examples_ws: Path, tmp_path: Path):
    cycles = scaled(1000)
    rng = random.Random(1234)
    cache = tmp_path / "cache"
    settings = {"analysis": {"emulate": False}, "debounceMs": 150, "cache": {"directory": str(cache),
                                                                            "maxMegabytes": 0.05}}
    texts: dict[str, dict[int, list[str]]] = {}
    lines: dict[str, list[str]] = {}
    versions: dict[str, int] = {}
    saves = superseded_waits = 0
    started = time.monotonic()
    peak_rss = 0
    with RawServer(examples_ws, settings) as server:
        server.initialize()
        for name in FILES:
            uri = server.uri(name)
            lines[uri] = (examples_ws / name).read_text(encoding="utf-8").split("\n")
            versions[uri] = 1
            texts[uri] = {1: list(lines[uri])}
            server.open(name)
        burst = 0
        for cycle in range(cycles):
            name = rng.choice(FILES)
            uri = server.uri(name)
            a, b, new = _edit(rng, lines[uri])
            cur = lines[uri]
            change = {"range": {"start": {"line": a, "character": 0}, "end": {"line": b, "character": 0}},
                      "text": "".join(x + "\n" for x in new)}
            if b >= len(cur):  # the last line has no newline after it: replace up to its end
                change["range"]["end"] = {"line": len(cur) - 1, "character": _utf16_len(cur[-1])}
                change["text"] = "\n".join(new) if a < len(cur) else change["text"]
                if a == b == len(cur):
                    continue
                lines[uri] = cur[:a] + (new if new else [""])
                if not new:
                    change["text"] = ""
            else:
                lines[uri] = cur[:a] + new + cur[b:]
            versions[uri] += 1
            texts[uri][versions[uri]] = list(lines[uri])
            server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": versions[uri]},
                                                     "contentChanges": [change]})
            if rng.random() < 0.6:  # save: write what the editor holds, then didSave
                (examples_ws / name).write_text("\n".join(lines[uri]), encoding="utf-8")
                server.save(name)
                saves += 1
            burst += 1
            if burst >= rng.randint(10, 40):
                burst = 0
                # A pause: sometimes long enough for the analysis to finish, sometimes cut short by the next burst.
                if rng.random() < 0.5:
                    n = len(server.notifications)
                    try:
                        server.finished(uri, n, timeout=60)
                    except AssertionError:
                        superseded_waits += 1
                else:
                    time.sleep(rng.uniform(0.05, 1.5))
                peak_rss = max(peak_rss, server.rss_bytes())
                assert server.alive(), server.stderr_tail()
        for name in FILES:  # the final state: both files analysed as they are now
            n = len(server.notifications)
            server.save(name)
            server.finished(server.uri(name), n, timeout=120)
        time.sleep(0.3)  # the last re-publish after the final didChange
        stats = server.stats()
        peak_rss = max(peak_rss, server.rss_bytes())
        pgid = server.pgid
        assert server.shutdown() == 0
    assert not processes_of(pgid) and not processes_of(mentioning=str(examples_ws)), "orphans"

    published = checked = 0
    misplaced: list[str] = []
    for note in server.notifications:
        if note["method"] != "textDocument/publishDiagnostics":
            continue
        p = note["params"]
        version = p.get("version")
        if p["uri"] not in texts or version is None:
            continue
        published += 1
        text = texts[p["uri"]][version]
        for d in p["diagnostics"]:
            start, end = d["range"]["start"], d["range"]["end"]
            if not (0 <= start["line"] <= end["line"] < len(text)):
                misplaced.append(f"v{version}: range {d['range']} outside {len(text)} lines")
                continue
            if end["character"] > _utf16_len(text[end["line"]]):
                misplaced.append(f"v{version}: {d['range']} beyond the line {text[end['line']]!r}")
            want = (d.get("data") or {}).get("lineText")
            if want is None:
                misplaced.append(f"v{version}: diagnostic without data.lineText: {d['message'][:80]}")
            elif text[start["line"]] != want:
                misplaced.append(f"v{version} line {start['line']}: computed for {want!r}, shown on "
                                 f"{text[start['line']]!r} ({d['message'][:60]})")
            checked += 1
    cache_bytes = sum(f.stat().st_size for f in cache.rglob("*.json"))
    report("edit_storm", cycles=cycles, saves=saves, compiles=stats["compilerRuns"], cancelled=stats["cancelled"],
           publishes_checked=published, diagnostics_checked=checked, misplaced=len(misplaced),
           peak_rss_mb=round(peak_rss / 2**20, 1), cache_kb=round(cache_bytes / 1024, 1),
           seconds=round(time.monotonic() - started, 1))
    assert not misplaced, "\n".join(misplaced[:20])
    assert checked > 0, "no diagnostics were published: the storm checked nothing"
    # The disk cache stays within its bound (0.05 MB) plus the one entry just written.
    largest = max((f.stat().st_size for f in cache.rglob("*.json")), default=0)
    assert cache_bytes <= 0.05 * 2**20 + largest
