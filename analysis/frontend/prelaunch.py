"""The compile started before the analysis is ready for it (issue 18).

A command-line analysis spends its first quarter second importing the engine (pydantic's models
above all) before nvcc can start, and nvcc then leaves the second core idle. The compile command
of a file depends on the options, the compile database and the toolchain, which are what those
imports are for; but it rarely changes between two runs on the same file with the same command
line. So the CLI keeps, per (file, command line, working directory), the exact nvcc invocation
its last analysis ran, and on the next run starts that invocation first, with the standard
library alone. The compile step then *adopts* the running nvcc only when the invocation it
builds itself is the same (argv, working directory and environment; the output file aside);
otherwise it stops it and compiles as always. A stale record costs a wasted compile, never a
wrong result: what nvcc reads (the file, its headers) is read by the adopted run as by a new one.

Only what kernelscope itself would run is replayed, and only from the user's own cache
directory (a record another user could write is ignored).

The language server needs no record: it knows the invocation once it knows a file's result is
not cached, and starts it then (`Prelaunch.now`), before what its analysis resolves first (launch
capture, the arch catalog, the progress bar) rather than after it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import read_regular
from ..process import CancelToken, Started, start_tool

#: stands for the cubin's path in a recorded invocation (each run writes its own temp dir)
_OUT = "{cubin}"


def record_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("kernelscope")) / "prelaunch"


def record_key(source: Path, command_line: Sequence[str], cwd: Path) -> str:
    """The record of `source` analysed by this command line from this directory."""
    text = json.dumps([str(source.absolute()), list(command_line), str(cwd)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class Prelaunch:
    """One file's record, and the compile started from it (at most one, adopted at most once)."""

    path: Path | None  # the record's file; None: started from the invocation itself (`now`), kept nowhere
    started: Started | None = None
    cubin: Path | None = None  # where the started compile writes
    _template: tuple | None = None  # (argv with _OUT, cwd, environment changes) it was started from

    @classmethod
    def start(cls, key: str, directory: Path | None = None) -> Prelaunch:
        """Start the recorded compile of `key`, if there is a usable record."""
        pre = cls((directory or record_dir()) / f"{key}.json")
        template = _load(pre.path)
        if template is not None:
            pre._launch(template)
        return pre

    @classmethod
    def now(cls, argv: Sequence[str], cwd: Path, env: Mapping[str, str], cubin: Path,
            cancel: CancelToken | None = None) -> Prelaunch:
        """`argv` (which writes `cubin`) started now in `cwd` with `env`: the invocation the compile
        step will build, which the caller built the same way (`compile.invocation`). `cancel` stops
        it from now on, adopted or not yet."""
        pre = cls(None)
        pre._launch(_template(argv, cwd, env, cubin))
        if cancel is not None and pre.started is not None:
            cancel.register(pre.started)
        return pre

    def _launch(self, template: tuple) -> None:
        argv, cwd, changes, unset = template
        work = Path(tempfile.mkdtemp(prefix="kernelscope-pre-"))
        cubin = work / "unit.cubin"
        env = {**{k: v for k, v in os.environ.items() if k not in unset}, **changes}
        try:
            self.started = start_tool([str(cubin) if a == _OUT else a for a in argv], cwd=Path(cwd), env=env)
        except OSError:  # the compiler moved or the directory is gone: compile as always
            shutil.rmtree(work, ignore_errors=True)
            return
        self.cubin, self._template = cubin, template

    def take(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], cubin: Path) -> Started | None:
        """The started compile, if it runs exactly `argv` (writing `cubin`) in `cwd` with `env`:
        its output then lands at `cubin` once finished (`settle`). Anything else stops it."""
        started, self.started = self.started, None
        if started is None:
            return None
        if self._template == _template(argv, cwd, env, cubin):
            return started
        started.kill()
        self._discard()
        return None

    def settle(self, cubin: Path) -> None:
        """Move an adopted compile's cubin to where the caller expected it."""
        if self.cubin is not None and self.cubin.exists():
            shutil.move(self.cubin, cubin)
        self._discard()

    def keep(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], cubin: Path) -> None:
        """Remember the invocation that compiled the file, for the next run."""
        if self.path is None:
            return
        template = _template(argv, cwd, env, cubin)
        if template == _load(self.path):
            return
        a, c, changes, unset = template
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"argv": list(a), "cwd": c, "env": changes, "unset": list(unset)}))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only cache costs the next run its head start, nothing else

    def close(self) -> None:
        """Stop a started compile nobody took (the analysis failed before compiling)."""
        if self.started is not None:
            self.started.kill()
            self.started = None
        self._discard()

    def _discard(self) -> None:
        if self.cubin is not None:
            shutil.rmtree(self.cubin.parent, ignore_errors=True)
            self.cubin = None


def _template(argv: Sequence[str], cwd: Path, env: Mapping[str, str], cubin: Path) -> tuple:
    """(argv with the cubin's path as `_OUT`, directory, variables set or changed from this
    process's environment, variables it unsets): what a record holds."""
    changes = {k: v for k, v in env.items() if os.environ.get(k) != v}
    unset = tuple(sorted(k for k in os.environ if k not in env))
    return tuple(_OUT if a == str(cubin) else a for a in argv), str(cwd), changes, unset


def _load(path: Path) -> tuple | None:
    try:
        st = path.stat()
        # only the user's own record, which nobody else can have written
        if st.st_uid != getattr(os, "getuid", lambda: st.st_uid)() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        data = json.loads(read_regular(path, 2**20, follow_symlinks=False))  # never a FIFO's endless wait
        argv, cwd, changes, unset = data["argv"], data["cwd"], data["env"], data.get("unset", [])
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv) and _OUT in argv
                and isinstance(cwd, str) and isinstance(changes, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in changes.items())
                and isinstance(unset, list) and all(isinstance(k, str) for k in unset)):
            return None
        return tuple(argv), cwd, changes, tuple(unset)
    except (OSError, ValueError, KeyError, TypeError):
        return None
