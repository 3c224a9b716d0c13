"""Lexical path checks made at binding, before anything reaches the sandbox.

Paths are the workspace's (relative, or below ``/workspace``) or, for host folders an admin
granted (File → host folders), ``/mnt/<name>/...``."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from tools_app.errors import PolicyDenied

HOST_ROOT = "/mnt"
_FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class HostFolder:
    """A host directory an admin granted, seen in the sandbox at ``/mnt/<name>``."""

    name: str
    path: Path
    writable: bool

    @property
    def target(self) -> str:
        return f"{HOST_ROOT}/{self.name}"

    def entry(self) -> str:
        return f"{self.name}={self.path}{' rw' if self.writable else ''}"


def parse_host_folder(entry: str, *, forbidden: tuple[Path, ...] = ()) -> HostFolder:
    """``name=/absolute/path`` (read-only) or ``name=/absolute/path rw``; ValueError saying
    what is wrong. ``forbidden``: directories a folder may be neither inside nor above (the
    app's own state)."""
    text = entry.strip()
    writable = False
    for suffix in (" rw", " ro"):
        if text.endswith(suffix):
            writable = suffix == " rw"
            text = text[: -len(suffix)].rstrip()
    name, sep, path = text.partition("=")
    name, path = name.strip(), path.strip()
    if not sep or not _FOLDER_NAME.match(name):
        raise ValueError(
            f"{entry!r}: write name=/absolute/path (add ' rw' to allow writing); the name may "
            "use letters, digits, _ . -"
        )
    if not path.startswith("/") or posixpath.normpath(path) != path.rstrip("/") or "\0" in path:
        raise ValueError(f"{entry!r}: the folder must be an absolute, normalised path")
    folder = Path(path)
    system = ("proc", "sys", "dev", "boot", "run")
    if folder == Path("/") or folder.parts[1] in system or path.startswith("/var/run"):
        raise ValueError(f"{entry!r}: {path} cannot be granted")
    for inner in forbidden:
        if folder == inner or inner in folder.parents or folder in inner.parents:
            raise ValueError(f"{entry!r}: {path} holds or is inside the app's own state ({inner})")
    return HostFolder(name, folder, writable)


MAX_PATH = 4096
MAX_COMPONENT = 255


def workspace_parts(path: str) -> list[str]:
    """Normalised components of a workspace-relative path, or PolicyDenied with the reason."""
    if "\0" in path:
        raise PolicyDenied("the path contains a NUL byte")
    if len(path) > MAX_PATH:
        raise PolicyDenied(f"the path is longer than {MAX_PATH} characters")
    if path.startswith("~"):
        raise PolicyDenied("'~' paths are not allowed; use a path relative to the workspace")
    if path.startswith("/"):
        if path == "/workspace" or path.startswith("/workspace/"):
            path = path[len("/workspace") :]
        else:
            raise PolicyDenied(
                f"absolute path {path!r} is outside the workspace; use a relative path"
            )
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if len(part) > MAX_COMPONENT:
            raise PolicyDenied(f"a path component is longer than {MAX_COMPONENT} characters")
        if part == "..":
            if not parts:
                raise PolicyDenied(f"{path!r} leaves the workspace")
            parts.pop()
        else:
            parts.append(part)
    return parts


def host_folder_of(path: str, folders: list[HostFolder]) -> HostFolder | None:
    """The granted host folder ``path`` is in (``/mnt/<name>/...``), None for the workspace;
    PolicyDenied for a ``/mnt`` path no admin granted, or one that leaves its folder."""
    if "\0" in path:
        raise PolicyDenied("the path contains a NUL byte")
    if path != HOST_ROOT and not path.startswith(HOST_ROOT + "/"):
        return None
    name, _, inside = path[len(HOST_ROOT) :].lstrip("/").partition("/")
    by_name = {f.name: f for f in folders}
    folder = by_name.get(name)
    if folder is None:
        granted = ", ".join(f.target for f in folders) or "none"
        raise PolicyDenied(
            f"{path!r} is not in a host folder an admin granted (granted: {granted})"
        )
    depth = 0
    for part in inside.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                raise PolicyDenied(f"{path!r} leaves the host folder {folder.target}")
        elif part not in ("", "."):
            depth += 1
    return folder


def check_allowed(
    path: str, allowed: list[str], folders: list[HostFolder] | None = None, *, write: bool = False
) -> list[str]:
    """The workspace path's parts (``[]`` for a host folder's, which the sandbox resolves);
    PolicyDenied for what the File settings do not allow."""
    if path == HOST_ROOT and not write:
        return []  # the list of granted folders
    folder = host_folder_of(path, folders or [])
    if folder is not None:
        if write and not folder.writable:
            raise PolicyDenied(f"host folder {folder.target} is read-only")
        return []
    parts = workspace_parts(path)
    prefixes = [workspace_parts(a) for a in allowed]
    if not any(parts[: len(p)] == p for p in prefixes):
        raise PolicyDenied(f"{path!r} is not inside an allowed path ({', '.join(allowed)})")
    return parts


def normalise_allowed(values: list[str]) -> list[str]:
    out = []
    for raw in values:
        value = raw.strip()
        if not value:
            continue
        try:
            parts = workspace_parts(value)
        except PolicyDenied as exc:
            raise ValueError(f"{value!r}: {exc.reason}") from None
        out.append("/".join(parts) or ".")
    return out or ["."]
