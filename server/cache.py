"""Analysis results by cache key: an in-memory LRU in front of a size-bounded directory of JSON files.

Two servers (two editor windows) may share the directory, so every write goes to a
temporary file in the same directory and is renamed into place (`os.replace` is atomic on
POSIX and Windows); a reader therefore sees a whole entry or none. An entry is used only when
it is a regular file (not a symlink, FIFO or device) of at most MAX_ENTRY_BYTES that parses as
a result of this schema; any other (a disk error, a schema change, a hand edit, a planted file)
is deleted and recomputed. Only finished analyses reach `put`: a compile that timed out, was
killed or failed for a reason of the machine raises instead (frontend/compile.py).

All methods except `get_memory` touch the disk: call them from a worker thread.
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
from typing import Literal

from pydantic import ValidationError

from kernelscope.analysis.files import UnreadableFile, read_regular
from kernelscope.analysis.results import SCHEMA_VERSION, AnalysisResult

log = logging.getLogger("kernelscope.server.cache")

Hit = Literal["memory", "disk"]

#: temp files older than this belong to a writer that died; eviction removes them
_STALE_TEMP_S = 3600.0
#: the largest entry read or written: a result of a file with thousands of kernels is a few MB
MAX_ENTRY_BYTES = 64 * 2**20


class ResultCache:
    def __init__(self, directory: Path, max_bytes: int, memory_entries: int = 64):
        # One sub-folder per schema version: an old server and a new one never read each other's entries.
        self.directory = directory / f"results-v{SCHEMA_VERSION}"
        self.max_bytes = max_bytes
        self.memory_entries = memory_entries
        self._memory: OrderedDict[str, AnalysisResult] = OrderedDict()
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get_memory(self, key: str) -> AnalysisResult | None:
        with self._lock:
            result = self._memory.get(key)
            if result is not None:
                self._memory.move_to_end(key)
            return result

    def _remember(self, key: str, result: AnalysisResult) -> None:
        with self._lock:
            self._memory[key] = result
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)

    def get(self, key: str) -> tuple[AnalysisResult, Hit] | None:
        result = self.get_memory(key)
        if result is not None:
            return result, "memory"
        path = self._path(key)
        try:
            # a regular file of an entry's size, not followed through a symlink: a FIFO planted under an
            # entry's name would block the read forever, a symlink to /dev/zero would never end (files.py)
            data = read_regular(path, MAX_ENTRY_BYTES, follow_symlinks=False)
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
            result = AnalysisResult.model_validate_json(data)
        except (ValidationError, ValueError) as e:
            log.warning("cache: corrupt entry %s deleted (%s)", path.name, str(e).splitlines()[0])
            self._drop(path)
            return None
        try:
            os.utime(path)  # mark as recently used for eviction (atime is unreliable with noatime mounts)
        except OSError:
            pass
        self._remember(key, result)
        return result, "disk"

    @staticmethod
    def _drop(path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError:  # a directory under an entry's name: `put` cannot replace it either, and says so
            pass

    def put(self, key: str, result: AnalysisResult) -> None:
        self._remember(key, result)
        data = result.model_dump_json()
        if len(data) > MAX_ENTRY_BYTES:  # `get` would refuse it
            log.info("cache: result %s not written to disk (%d bytes)", key[:16], len(data))
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(data)
                os.replace(tmp, self._path(key))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as e:
            log.warning("cache: cannot write %s: %s", self.directory, e)
            return
        self.evict()

    def evict(self) -> None:
        """Delete least recently used entries until the directory is within `max_bytes`."""
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
                continue  # removed by the other server meanwhile
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
