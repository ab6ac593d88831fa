"""`kernelscope analyze --json` before and after a change that must not change it (issue 36: the
front door moved, the results did not).

    python benchmarks/same_json.py record OUT_DIR [--verify] [FILE.cu ...]
    python benchmarks/same_json.py compare BEFORE_DIR AFTER_DIR

`record` analyses every example (examples/*.cu) and every real program (tests/data/real/**/*.cu,
with the flags of tests/data/real/build_flags.json) through the command line, one process per file
with a cache folder of its own, and writes each result with what varies from run to run taken out:
the stage timings, the provenance's time, the folder of the run's cache and of the repository (so that two copies
of the repository, one at the commit before and one after, compare). `compare` says which files
differ, and where. Exit status 1 when any does. Options before the files (`--verify`) go to every
`analyze`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "data" / "real"
#: keys whose values are wall-clock: timings (seconds per stage), the provenance's date
_VARYING = {"timings", "time", "seconds"}


def _files() -> list[Path]:
    return sorted((REPO / "examples").glob("*.cu")) + sorted(REAL.rglob("*.cu"))


def _flags(f: Path) -> list[str]:
    if not f.is_relative_to(REAL):
        return []
    table = json.loads((REAL / "build_flags.json").read_text())
    rel = f.relative_to(REAL).as_posix()
    return [x.replace("{real}", str(REAL)) for x in table.get("*", []) + table.get(rel, [])]


def _stable(value, cache: str):
    if isinstance(value, dict):
        return {k: _stable(v, cache) for k, v in value.items() if k not in _VARYING}
    if isinstance(value, list):
        return [_stable(v, cache) for v in value]
    if isinstance(value, str):
        return value.replace(cache, "$CACHE").replace(str(REPO), "$REPO")
    return value


def _name(f: Path) -> str:
    return f.relative_to(REPO).as_posix().replace("/", "__") + ".json"


def record(out: Path, files: list[Path], extra: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        with tempfile.TemporaryDirectory(prefix="kernelscope-same-json-") as cache:
            argv = [sys.executable, "-m", "kernelscope.cli", "analyze", "--json", *extra, str(f)]
            if flags := _flags(f):
                argv[-1:-1] = [f"--flags={' '.join(flags)}"]
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                                  env={**os.environ, "XDG_CACHE_HOME": cache})
            try:
                result = _stable(json.loads(proc.stdout), cache)
            except ValueError:
                result = {"exit": proc.returncode, "stderr": proc.stderr[-2000:]}
            (out / _name(f)).write_text(json.dumps({"exit": proc.returncode, "result": result}, indent=1,
                                                   sort_keys=True))
            print(f"{f.relative_to(REPO)}: exit {proc.returncode}", flush=True)
    return 0


def _where(a, b, path: str = "") -> str | None:
    """The first path at which two JSON values differ."""
    if type(a) is not type(b):
        return path or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}"
            if (w := _where(a[k], b[k], f"{path}/{k}")) is not None:
                return w
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
        return next((w for i, (x, y) in enumerate(zip(a, b)) if (w := _where(x, y, f"{path}/{i}")) is not None), None)
    return None if a == b else f"{path}: {str(a)[:80]!r} vs {str(b)[:80]!r}"


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.json")} | {p.name for p in after.glob("*.json")})
    differ = 0
    for n in names:
        a, b = before / n, after / n
        if not a.exists() or not b.exists():
            print(f"{n}: only in {'after' if not a.exists() else 'before'}")
            differ += 1
            continue
        if (w := _where(json.loads(a.read_text()), json.loads(b.read_text()))) is not None:
            print(f"{n}: differs at {w}")
            differ += 1
    print(f"{len(names) - differ} of {len(names)} identical")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "record":
        extra = [a for a in argv[2:] if a.startswith("--")]
        files = [Path(f).resolve() for f in argv[2:] if not f.startswith("--")]
        return record(Path(argv[1]), files or _files(), extra)
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
