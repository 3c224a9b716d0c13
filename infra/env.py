"""Typed helpers that read settings from the environment and fail loudly.

Every helper raises ``ImproperlyConfigured`` naming the variable when a value cannot be
parsed, so a typo in a deployment shows up at start-up rather than as odd behaviour later.
A ``<NAME>_FILE`` variable, when set, is read instead of ``<NAME>`` (for Docker secrets).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envstr(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def envbool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def envfloat(name: str, default: float, *, positive: bool = False) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc
    if positive and not value > 0:
        raise ImproperlyConfigured(f"{name}={raw!r} must be positive")
    return value


def envpath(name: str, default: Path) -> Path:
    """A directory (absolute once resolved). Set but empty is an error, not "here": an empty
    ``CC_VAR_DIR=`` once put the generated secret key into the current directory."""
    raw = envstr(name) if os.environ.get(f"{name}_FILE") else os.environ.get(name)
    if raw is None:
        return default.resolve()
    if not raw.strip():
        raise ImproperlyConfigured(
            f"{name} is set but empty: it must name a directory (unset it for the default, "
            f"{default})"
        )
    return Path(raw.strip()).resolve()


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(value: str | int) -> int:
    """Docker-style sizes ("512m", "1g", "65536") to bytes."""
    if isinstance(value, int):
        return value
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"not a size: {value!r} (use e.g. 512m or 1g)")
    number, unit = match.groups()
    return int(float(number) * 1024 ** "_kmgt".index(unit.lower() or "_"))


def envsize(name: str, default: str) -> int:
    """A Docker-style size ("512m", "1g") in bytes; empty means the default."""
    raw = os.environ.get(name, "").strip() or default
    try:
        return parse_size(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a size (use e.g. 512m or 1g)") from None


def envlist(name: str, default: list[str] | None = None) -> list[str]:
    """Comma-separated; from ``<NAME>_FILE`` (one item per line or comma-separated) if set."""
    raw = envstr(name) if os.environ.get(f"{name}_FILE") else os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in re.split(r"[,\n]", raw) if item.strip()]


def envchoice(name: str, choices: tuple[str, ...], default: str) -> str:
    value = os.environ.get(name, default).strip().lower()
    if value not in choices:
        shown = ", ".join(choice for choice in choices if choice)
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {shown}")
    return value


def envmap(name: str) -> dict[str, list[str]]:
    """``key=value`` pairs, comma-separated, or one a line (always so in ``<NAME>_FILE``),
    which lets a key hold commas as an LDAP distinguished name does. The split is at the last
    ``=``, so a key may hold ``=`` too; a key may repeat to map to several values."""
    raw = envstr(name)
    by_line = bool(os.environ.get(f"{name}_FILE")) or "\n" in raw.strip()
    items = raw.splitlines() if by_line else raw.split(",")
    mapping: dict[str, list[str]] = {}
    for item in items:
        if not item.strip():
            continue
        key, sep, value = item.rpartition("=")
        if not sep or not key.strip() or not value.strip():
            raise ImproperlyConfigured(f"{name}: {item.strip()!r} is not of the form key=value")
        targets = mapping.setdefault(key.strip(), [])
        if value.strip() not in targets:
            targets.append(value.strip())
    return mapping
