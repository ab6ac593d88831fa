"""The one cache of finished work: an in-memory LRU in front of a directory of JSON files, one per key.

The language server keeps analysis results in it (server/cache.py), verification keeps the
outcomes of re-modeled fixes (advisor/verify.py). Keys are content hashes the caller computes;
this module only stores and finds.

Two processes (two editor windows, a command line beside a server) may share a directory, so
every write goes to a temporary file in the same directory and is renamed into place
(`os.replace` is atomic on POSIX and Windows): a reader sees a whole entry or none. An entry is
used only when it is a regular file (not a symlink, FIFO or device) of at most `max_entry_bytes`
that parses as the cached model; any other (a disk error, a schema change, a hand edit, a planted
file) is deleted and recomputed. A disk that refuses a write costs time, never correctness.

All methods except `get_memory` may touch the disk: a server calls them from a worker thread.
"""

from __future__ import annotations

import errno
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from .files import UnreadableFile, read_regular

log = logging.getLogger("kernelscope.cache")

Hit = Literal["memory", "disk"]
Model = TypeVar("Model", bound=BaseModel)

#: temp files older than this belong to a writer that died; eviction removes them
_STALE_TEMP_S = 3600.0


class DiskCache(Generic[Model]):
    """`model` values by key: in memory (LRU, `memory_entries`) and, with a `directory`, on disk,
    bounded to `max_bytes` by evicting the least recently used entries (None: unbounded)."""

    def __init__(self, model: type[Model], directory: Path | None, *, max_entry_bytes: int,
                 max_bytes: int | None = None, memory_entries: int = 64) -> None:
        self.model = model
        self.directory = directory
        self.max_entry_bytes = max_entry_bytes
        self.max_bytes = max_bytes
        self.memory_entries = memory_entries
        self._memory: OrderedDict[str, Model] = OrderedDict()
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path | None:
        return self.directory / f"{key}.json" if self.directory is not None else None

    def get_memory(self, key: str) -> Model | None:
        with self._lock:
            value = self._memory.get(key)
            if value is not None:
                self._memory.move_to_end(key)
            return value

    def _remember(self, key: str, value: Model) -> None:
        with self._lock:
            self._memory[key] = value
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)

    def get(self, key: str) -> tuple[Model, Hit] | None:
        value = self.get_memory(key)
        if value is not None:
            return value, "memory"
        path = self._path(key)
        if path is None:
            return None
        try:
            # a regular file of an entry's size, not followed through a symlink: a FIFO planted under an
            # entry's name would block the read forever, a symlink to /dev/zero would never end (files.py)
            data = read_regular(path, self.max_entry_bytes, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except UnreadableFile as e:
            log.warning("cache: entry %s deleted: %s", path.name, e)
            self._drop(path)
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:  # a symlink under an entry's name
                log.warning("cache: entry %s deleted: a symlink, not a file kernelscope wrote", path.name)
                self._drop(path)
            else:
                log.warning("cache: cannot read %s: %s", path, e)
            return None
        try:
            value = self.model.model_validate_json(data)
        except (ValidationError, ValueError) as e:
            log.warning("cache: corrupt entry %s deleted (%s)", path.name, str(e).splitlines()[0])
            self._drop(path)
            return None
        try:
            os.utime(path)  # mark as recently used for eviction (atime is unreliable with noatime mounts)
        except OSError:
            pass
        self._remember(key, value)
        return value, "disk"

    @staticmethod
    def _drop(path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError:  # a directory under an entry's name: `put` cannot replace it either, and says so
            pass

    def put(self, key: str, value: Model) -> None:
        self._remember(key, value)
        path = self._path(key)
        if path is None or self.directory is None:
            return
        data = value.model_dump_json()
        if len(data) > self.max_entry_bytes:  # `get` would refuse it
            log.info("cache: entry %s not written to disk (%d bytes)", key[:16], len(data))
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as e:
            log.warning("cache: cannot write %s: %s", self.directory, e)
            return
        if self.max_bytes is not None:
            self.evict()

    def evict(self) -> None:
        """Delete least recently used entries until the directory is within `max_bytes`."""
        if self.directory is None or self.max_bytes is None:
            return
        entries: list[tuple[float, int, Path]] = []
        now = time.time()
        try:
            scan = list(os.scandir(self.directory))
        except OSError:
            return
        for e in scan:
            try:
                st = e.stat()
            except OSError:
                continue  # removed by the other process meanwhile
            if e.name.endswith(".tmp"):
                if now - st.st_mtime > _STALE_TEMP_S:
                    Path(e.path).unlink(missing_ok=True)
                continue
            if e.name.endswith(".json"):
                entries.append((max(st.st_atime, st.st_mtime), st.st_size, Path(e.path)))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
            log.info("cache: evicted %s", path.name)

    def clear_memory(self) -> None:
        with self._lock:
            self._memory.clear()
