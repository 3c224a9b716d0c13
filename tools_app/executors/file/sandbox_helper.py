"""File operations, run INSIDE the sandbox (``python3 -c <this file>``, request as JSON on stdin).

Standalone on purpose: no imports beyond the standard library, because it runs in the sandbox
image (or under bubblewrap with the host's /usr). Paths are resolved here, in the sandbox's own
view of the filesystem, so a symlink the model created with the shell tool is judged where it
really points. Every component is opened relative to an already-open directory with
O_NOFOLLOW and symlinks are followed by hand, re-checking each target against the allowed
paths — an emulation of openat2(RESOLVE_BENEATH), so a rename racing the walk cannot lead it
out of the workspace.

Host folders an admin granted (the File group's *host folders*) are mounted into the sandbox
and named ``/mnt/<name>/...``; the request's ``folders`` maps each name to where it is here
and whether it is writable. A path in one is resolved below that folder the same way, a link
may not lead out of it (nor into the workspace or another folder), and nothing is written
through a link there at all: a write or a delete in a host folder refuses every link on the
way. A read-only folder refuses writes here as well as at its (read-only) mount.

Answer on stdout: {"ok": true, ...} or {"ok": false, "kind": "denied"|"error", "error": "..."}.
"""

import errno
import json
import os
import posixpath
import stat
import sys

MAX_HOPS = 40
MAX_LIST = 2000
HOST_ROOT = "/mnt"


class Refused(Exception):
    """Policy: the path is not allowed (becomes a denied call)."""


class Failed(Exception):
    """The operation failed (becomes a failed call)."""


def split(path):
    """Workspace-relative, normalised components; refuses anything that leaves the workspace."""
    if "\0" in path:
        raise Refused("the path contains a NUL byte")
    if path.startswith("/"):
        if path == "/workspace" or path.startswith("/workspace/"):
            path = path[len("/workspace") :]
        else:
            raise Refused(f"{path!r} is outside the workspace")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise Refused(f"{path!r} leaves the workspace")
            parts.pop()
        else:
            parts.append(part)
    return parts


def allowed(parts, prefixes):
    return any(parts[: len(p)] == p for p in prefixes)


def check(parts, prefixes, original):
    if not allowed(parts, prefixes):
        raise Refused(f"{original!r} is not inside an allowed path")


class Root:
    """Where a path is resolved: the workspace (the current directory) or a host folder."""

    def __init__(self, folder=None, name=None):
        self.folder = folder  # None: the workspace
        self.name = name

    def open(self):
        where = self.folder["path"] if self.folder else "."
        try:
            return os.open(where, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            raise Failed(f"host folder {self.name!r} is not there on this worker") from None

    def shown(self, parts):
        inside = "/".join(parts)
        if self.folder is None:
            return inside
        return f"{HOST_ROOT}/{self.name}" + (f"/{inside}" if inside else "")


def locate(path, folders):
    """(Root, path within it) of a requested path: ``/mnt/<name>/...`` is a host folder an
    admin granted, everything else the workspace (``split`` refuses what leaves it)."""
    if path == HOST_ROOT or path.startswith(HOST_ROOT + "/"):
        rest = path[len(HOST_ROOT) :].lstrip("/")
        name, _, inside = rest.partition("/")
        folder = (folders or {}).get(name)
        if folder is None:
            granted = ", ".join(f"{HOST_ROOT}/{n}" for n in sorted(folders or {})) or "none"
            raise Refused(f"{path!r} is not in a host folder an admin granted (granted: {granted})")
        return Root(folder, name), inside
    return Root(), path


def resolve(path, prefixes, *, follow_last=True, create_dirs=False, folders=None, write=False):
    """Return (dir_fd, last_name, parts, root): dir_fd is the opened parent directory."""
    root, inside = locate(path, folders)
    if root.folder is not None and write and not root.folder.get("rw"):
        raise Refused(f"host folder {root.name!r} is read-only")
    parts = split(inside if root.folder is not None else path)
    if root.folder is None:
        check(parts, prefixes, path)
    for _ in range(MAX_HOPS):
        fd = root.open()
        redirected = None
        try:
            for i, comp in enumerate(parts):
                last = i == len(parts) - 1
                try:
                    st = os.stat(comp, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        return fd, comp, parts, root
                    if not create_dirs:
                        raise Failed(f"{root.shown(parts[: i + 1])!r} does not exist") from None
                    os.mkdir(comp, 0o755, dir_fd=fd)
                    st = os.stat(comp, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode) and (follow_last or not last):
                    shown = root.shown(parts[: i + 1])
                    if root.folder is not None:
                        if write:
                            raise Refused(
                                f"{shown!r} is a symbolic link; nothing is written through a "
                                "link in a host folder"
                            )
                        target = os.readlink(comp, dir_fd=fd)
                        if target.startswith("/"):
                            raise Refused(f"{shown!r} is a symlink pointing outside its folder")
                        try:
                            redirected = (
                                split(posixpath.join("/".join(parts[:i]), target)) + parts[i + 1 :]
                            )
                        except Refused:
                            raise Refused(
                                f"{shown!r} is a symlink pointing outside its folder"
                            ) from None
                        break
                    target = os.readlink(comp, dir_fd=fd)
                    base = "/".join(parts[:i])
                    joined = target if target.startswith("/") else posixpath.join(base, target)
                    try:
                        redirected = split(joined) + parts[i + 1 :]
                    except Refused:
                        raise Refused(
                            f"{'/'.join(parts[: i + 1])!r} is a symlink pointing outside the "
                            "workspace"
                        ) from None
                    if not allowed(redirected, prefixes):
                        raise Refused(
                            f"{'/'.join(parts[: i + 1])!r} is a symlink pointing outside the "
                            "allowed paths"
                        )
                    break
                if last:
                    return fd, comp, parts, root
                if not stat.S_ISDIR(st.st_mode):
                    raise Failed(f"{root.shown(parts[: i + 1])!r} is not a directory")
                nfd = os.open(comp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
            else:
                return fd, None, parts, root  # the workspace (or the folder) itself
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        parts = redirected
    raise Refused(f"too many symlinks resolving {path!r}")


def open_file(dir_fd, name, flags):
    """Open a regular file that is not hard-linked. Nothing may change before the checks pass:
    O_NONBLOCK so a FIFO cannot hang us waiting for a peer, and never O_TRUNC (callers
    truncate after the checks, or a hard link to an outside file would be emptied)."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644, dir_fd=dir_fd)
    except IsADirectoryError:
        raise Failed(f"{name!r} is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, or a socket
            raise Failed(f"{name!r} is not a regular file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Failed(f"{name!r} is not a regular file")
    if st.st_nlink > 1:
        os.close(fd)
        raise Refused(f"{name!r} is hard-linked elsewhere; hard-linked files are refused")
    os.set_blocking(fd, True)
    return fd, st


def op_read(req, prefixes):
    dir_fd, name, parts, root = resolve(req["path"], prefixes, folders=req.get("folders"))
    try:
        if name is None:
            raise Failed("the path is a directory; use file_list")
        try:
            fd, st = open_file(dir_fd, name, os.O_RDONLY)
        except FileNotFoundError:
            raise Failed(f"{req['path']!r} does not exist") from None
        limit = int(req["max_bytes"])
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(dir_fd)
    truncated = len(data) > limit or st.st_size > limit
    data = data[:limit]
    if b"\0" in data[:8192]:
        return {
            "path": root.shown(parts),
            "size": st.st_size,
            "binary": True,
            "content": None,
            "notice": f"binary file ({st.st_size} bytes) not shown",
        }
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    start = max(1, int(req.get("start_line") or 1))
    count = req.get("max_lines")
    chosen = lines[start - 1 : (start - 1 + int(count)) if count else None]
    out = {
        "path": root.shown(parts),
        "size": st.st_size,
        "content": "".join(chosen),
        "start_line": start,
        "end_line": start + len(chosen) - 1,
        "total_lines": len(lines),
    }
    if truncated:
        out["truncated"] = True
        out["notice"] = f"file is {st.st_size} bytes; only the first {limit} bytes were read"
    return out


def op_write(req, prefixes):
    content = req["content"].encode("utf-8")
    if len(content) > int(req["max_bytes"]):
        raise Refused(f"content is {len(content)} bytes; the limit is {req['max_bytes']}")
    dir_fd, name, parts, root = resolve(
        req["path"], prefixes, create_dirs=True, folders=req.get("folders"), write=True
    )
    try:
        if name is None:
            raise Failed("cannot write to the folder itself")
        append = req.get("mode") == "append"
        fd, _ = open_file(dir_fd, name, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0))
        if not append:
            os.ftruncate(fd, 0)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            size = os.fstat(handle.fileno()).st_size
    finally:
        os.close(dir_fd)
    return {
        "status": "written",
        "path": root.shown(parts),
        "size_bytes": len(content),
        "size": size,
        "mode": req.get("mode") or "overwrite",
    }


def op_delete(req, prefixes):
    dir_fd, name, parts, root = resolve(
        req["path"], prefixes, follow_last=False, folders=req.get("folders"), write=True
    )
    try:
        if name is None:
            raise Refused("refusing to delete the workspace (or a host folder) itself")
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise Failed(f"{req['path']!r} does not exist") from None
        if stat.S_ISDIR(st.st_mode):
            try:
                os.rmdir(name, dir_fd=dir_fd)
            except OSError:
                raise Failed(f"{req['path']!r} is a directory that is not empty") from None
            kind = "directory"
        else:
            os.unlink(name, dir_fd=dir_fd)
            kind = "symlink" if stat.S_ISLNK(st.st_mode) else "file"
    finally:
        os.close(dir_fd)
    return {"path": root.shown(parts), "deleted": kind}


def _entries(dir_fd, prefix, recursive, out, depth):
    for name in sorted(os.listdir(dir_fd)):
        if len(out) >= MAX_LIST:
            return True
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        kind = (
            "dir" if stat.S_ISDIR(st.st_mode) else "symlink" if stat.S_ISLNK(st.st_mode) else "file"
        )
        path = f"{prefix}{name}"
        out.append({"path": path, "type": kind, "size": st.st_size if kind == "file" else None})
        if recursive and kind == "dir" and depth < 20 and name != ".git":
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                if _entries(sub, path + "/", recursive, out, depth + 1):
                    return True
            finally:
                os.close(sub)
    return False


def op_list(req, prefixes):
    folders = req.get("folders") or {}
    if (req.get("path") or "").rstrip("/") == HOST_ROOT:
        granted = [
            {"path": f"{HOST_ROOT}/{n}", "type": "dir", "size": None, "writable": bool(f["rw"])}
            for n, f in sorted(folders.items())
        ]
        return {"path": HOST_ROOT, "entries": granted, "count": len(granted)}
    dir_fd, name, parts, root = resolve(req.get("path") or ".", prefixes, folders=folders)
    try:
        if name is not None:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except FileNotFoundError:
                raise Failed(f"{req.get('path')!r} does not exist") from None
            except NotADirectoryError:
                raise Failed(f"{req.get('path')!r} is not a directory") from None
        else:
            fd = os.dup(dir_fd)
    finally:
        os.close(dir_fd)
    entries: list[dict[str, object]] = []
    try:
        shown = root.shown(parts)
        prefix = shown + "/" if shown else ""
        capped = _entries(fd, prefix, bool(req.get("recursive")), entries, 0)
    finally:
        os.close(fd)
    out = {"path": shown or ".", "entries": entries, "count": len(entries)}
    if capped:
        out["notice"] = f"listing stopped at {MAX_LIST} entries"
    return out


OPS = {"read": op_read, "write": op_write, "delete": op_delete, "list": op_list}


def printable(value):
    """Names from the kernel need not be UTF-8 (Python holds such bytes as lone surrogates),
    and neither need the model's: escape them, or the answer cannot be stored or shown."""
    if isinstance(value, str):
        try:
            raw = value.encode("utf-8", "surrogateescape")  # the bytes the kernel holds
        except UnicodeEncodeError:  # other lone surrogates (the model can send those too)
            raw = value.encode("utf-8", "backslashreplace")
        return raw.decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {k: printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    return value


def main():
    req = json.loads(sys.stdin.read())
    try:
        prefixes = [split(p) for p in req.get("allowed") or ["."]]
        answer = {"ok": True, **OPS[req["op"]](req, prefixes)}
    except Refused as exc:
        answer = {"ok": False, "kind": "denied", "error": str(exc)}
    except Failed as exc:
        answer = {"ok": False, "kind": "error", "error": str(exc)}
    except PermissionError as exc:
        answer = {"ok": False, "kind": "denied", "error": f"permission denied: {exc.filename}"}
    except OSError as exc:
        answer = {"ok": False, "kind": "error", "error": f"{exc.strerror}: {exc.filename}"}
    sys.stdout.write(json.dumps(printable(answer)))


if __name__ == "__main__":
    main()
