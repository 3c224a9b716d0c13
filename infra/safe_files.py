"""Reading files below a root without ever leaving it: for trees the model can shape (a
conversation's ``skills/``) and folders an admin names (documentation).

Paths are split lexically first (no absolute paths, no ``..``, no NUL, nothing decoded: ``%2e``
is a file name, not a dot). Then every component is opened relative to the already-open
parent directory with ``O_NOFOLLOW``: a symbolic link anywhere on the way is refused, not
followed, and a rename racing the walk cannot lead it elsewhere (the descriptors stay on
the directories that were checked). The file itself must be a regular file with one link
(a hard link could make an outside file appear inside), and is read up to a byte cap.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAX_COMPONENT = 255
MAX_PATH = 1024


class Refused(Exception):
    """The path may not be read (policy): becomes a denied call."""


class Missing(Exception):
    """Nothing readable is there: becomes a failed call."""


def split_relative(path: str) -> list[str]:
    """Normalised components of a path relative to a root; Refused when it could leave it."""
    if "\0" in path:
        raise Refused("the path contains a NUL byte")
    if len(path) > MAX_PATH:
        raise Refused(f"the path is longer than {MAX_PATH} characters")
    if path.startswith(("/", "~", "\\")):
        raise Refused(f"{path!r} is an absolute path; use a path relative to the folder")
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise Refused(f"{path!r} contains '..'; paths may not leave the folder")
        if len(part) > MAX_COMPONENT:
            raise Refused("a path component is too long")
        parts.append(part)
    return parts


def _open_dir(root: Path) -> int:
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise Missing(f"the folder {root} does not exist") from None
    except NotADirectoryError:
        raise Missing(f"{root} is not a folder") from None


def _step(fd: int, name: str, shown: str) -> int:
    """Open the sub-directory ``name`` of ``fd`` without following a link."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise Missing(f"{shown!r} does not exist") from None
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{shown!r} is a symbolic link; links are not followed")
    if not stat.S_ISDIR(st.st_mode):
        raise Missing(f"{shown!r} is not a folder")
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:  # replaced by a link between the stat and the open
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(f"{shown!r} is a symbolic link; links are not followed") from None
        raise


@dataclass
class FileData:
    data: bytes
    size: int
    truncated: bool
    mtime_ns: int


def open_beneath(root: Path, parts: list[str]) -> tuple[BinaryIO, os.stat_result]:
    """The regular file ``root/parts...`` open for reading (the caller closes it), reached
    without following a link, with its stat; a hard-linked file is refused."""
    if not parts:
        raise Missing("no file named: the path is the folder itself")
    fd = _open_dir(root)
    try:
        for i, name in enumerate(parts[:-1]):
            nfd = _step(fd, name, "/".join(parts[: i + 1]))
            os.close(fd)
            fd = nfd
        shown = "/".join(parts)
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            raise Missing(f"{shown!r} does not exist") from None
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"{shown!r} is a symbolic link; links are not followed")
        if not stat.S_ISREG(st.st_mode):
            raise Missing(f"{shown!r} is not a regular file")
        try:
            ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused(f"{shown!r} is a symbolic link; links are not followed") from None
            raise
    finally:
        os.close(fd)
    handle = os.fdopen(ffd, "rb")
    try:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Missing(f"{shown!r} is not a regular file")
        if st.st_nlink > 1:
            raise Refused(f"{shown!r} is hard-linked elsewhere; hard-linked files are refused")
    except BaseException:
        handle.close()
        raise
    return handle, st


def read_beneath(root: Path, parts: list[str], *, max_bytes: int, truncate: bool) -> FileData:
    """The file ``root/parts...``; over ``max_bytes`` it is cut (``truncate``) or refused."""
    handle, st = open_beneath(root, parts)
    shown = "/".join(parts)
    with handle:
        if st.st_size > max_bytes and not truncate:
            raise Refused(f"{shown!r} is {st.st_size:,} bytes; the limit is {max_bytes:,}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes and not truncate:
        raise Refused(f"{shown!r} is larger than the limit of {max_bytes:,} bytes")
    return FileData(data[:max_bytes], st.st_size, len(data) > max_bytes, st.st_mtime_ns)


@dataclass(frozen=True)
class Entry:
    parts: tuple[str, ...]
    size: int
    mtime_ns: int


def walk_beneath(
    root: Path,
    *,
    suffixes: tuple[str, ...],
    max_entries: int,
    max_depth: int = 8,
    start: tuple[str, ...] = (),
) -> Iterator[Entry]:
    """Regular files under ``root`` (or under ``root/start...``, reached without following
    links: Refused if one is a link) whose names end with one of ``suffixes`` (lower-cased),
    sorted per folder; links and hidden names are skipped, never followed. Entries' parts
    include ``start``."""
    try:
        fd = _open_dir(root)
    except Missing:
        return
    try:
        for i, name in enumerate(start):
            nfd = _step(fd, name, "/".join(start[: i + 1]))
            os.close(fd)
            fd = nfd
    except Missing:
        os.close(fd)
        return
    except BaseException:
        os.close(fd)
        raise
    count = 0

    def visit(dir_fd: int, prefix: tuple[str, ...], depth: int) -> Iterator[Entry]:
        nonlocal count
        with os.scandir(dir_fd) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if count >= max_entries:
                return
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if depth >= max_depth:
                    continue
                try:
                    sub = os.open(
                        entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd
                    )
                except OSError:
                    continue
                try:
                    yield from visit(sub, (*prefix, entry.name), depth + 1)
                finally:
                    os.close(sub)
            elif entry.is_file(follow_symlinks=False) and entry.name.lower().endswith(suffixes):
                st = entry.stat(follow_symlinks=False)
                count += 1
                yield Entry((*prefix, entry.name), st.st_size, st.st_mtime_ns)

    try:
        yield from visit(fd, start, 0)
    finally:
        os.close(fd)
