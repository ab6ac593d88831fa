"""Reading files kernelscope did not write for itself: only regular files, and only so much.

A workspace may hold anything under a source-like name: a `.cu` symlink to `/dev/zero` (a read
never ends and memory grows without bound), a FIFO named `x.cu` (an open blocks until a writer
comes), a symlink loop (pathlib raises RuntimeError). The includer search (frontend/inclusion.py)
reads every `.cu` of the workspace, and a cache folder may be shared or planted, so every read of
such a file goes through `read_regular`, which opens without blocking, checks the opened file's
type and size, and reads at most that many bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: a source or header larger than this is not one a person wrote (the largest .cu of CUTLASS's
#: generated instantiations is a few MB); reading more would only cost memory
MAX_SOURCE_BYTES = 16 * 2**20
#: a compile_commands.json lists every file of a build: a large project's is tens of MB
MAX_DATABASE_BYTES = 256 * 2**20


def compile_database_file(compile_commands: Path) -> Path:
    """The compile_commands.json a setting names: the file itself, or the one in the folder it names."""
    return compile_commands / "compile_commands.json" if compile_commands.is_dir() else compile_commands


class UnreadableFile(OSError):
    """A path that is not a regular file of at most the allowed size: skipped, never read."""


def regular_size(path: Path | str) -> int | None:
    """The size of `path` (through symlinks) when it is a regular file, else None: missing, a
    FIFO, a device, a directory or a symlink loop (stat fails with ELOOP)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte in the name
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def read_regular(path: Path | str, limit: int = MAX_SOURCE_BYTES, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `limit` bytes.

    Raises UnreadableFile otherwise, or the OSError of the open (FileNotFoundError, ELOOP):
    callers that already skip unreadable files skip these too. O_NONBLOCK makes the open of a
    FIFO return at once instead of waiting for a writer; the type and size are those of the
    opened file, so a swap after a check cannot slip a device in. Without `follow_symlinks` a
    symlink is refused (a cache entry is never one).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)  # missing: FileNotFoundError; a symlink loop, or any symlink without following: ELOOP
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"{path} is not a regular file")
        if st.st_size > limit:
            raise UnreadableFile(f"{path} is larger than {limit} bytes ({st.st_size})")
        chunks, left = [], limit + 1
        while left > 0:  # a file that grows while read still ends at the limit
            chunk = os.read(fd, min(left, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise UnreadableFile(f"{path} grew beyond {limit} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: Path | str, limit: int = MAX_SOURCE_BYTES) -> str:
    """`read_regular` decoded as UTF-8, undecodable bytes replaced (as nvcc's own reads tolerate them)."""
    return read_regular(path, limit).decode("utf-8", "replace")
