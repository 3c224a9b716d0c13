"""Lexical path checks made at binding, before anything reaches the sandbox."""

from __future__ import annotations

from tools_app.errors import PolicyDenied

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


def check_allowed(path: str, allowed: list[str]) -> list[str]:
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
