"""What every process of a distributed deployment must share with the others, and how it tells.

A fleet runs its processes on several hosts. They must hold the same keys (``SECRET_KEY`` signs
sessions, the secrets keys encrypt what is stored) and see the same shared directories (the
workspaces, the skills, the MCP servers' environment). Each process registers itself in the
database (``chat_app.models.ProcessBeat``) with fingerprints of its keys, never the keys, and
writes a marker file named after itself into each shared directory; readiness compares this
process with the live others: their key fingerprints, and whether their markers are in *its*
directories.

One misconfigured host must not take a working fleet down with it, so a process is refused
only when it disagrees with the larger part of the fleet (``with_the_larger_part``). This module
reads settings and files only; the registrations come from the caller.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from infra import secrets

MARKERS = ".cc-hosts"  # the directory of markers inside each shared directory
# Markers of processes gone this long are removed by the next process that starts.
MARKER_FORGET_SECONDS = 3600.0


def process_name(kind: str) -> str:
    """``kind@host:pid:random``: unique in the fleet, and says where the process runs."""
    host = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
    return f"{kind}@{host}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def this_host() -> str:
    return socket.gethostname()


# --- keys -------------------------------------------------------------------------------------
def _fingerprint(key: bytes, purpose: bytes) -> str:
    # An HMAC with the key, not a hash of it: a fingerprint in the database says nothing of it.
    return hmac.new(key, b"controlcenter.fleet." + purpose, hashlib.sha256).hexdigest()[:16]


def secret_key_id() -> str:
    return _fingerprint(settings.SECRET_KEY.encode(), b"secret-key")


def secrets_key_ids() -> list[str]:
    """Fingerprints of the keys of secrets at rest, the first (the one that encrypts) first."""
    keys = [k.encode() for k in settings.SECRETS_KEYS] or [secrets.derived_key(settings.SECRET_KEY)]
    return [_fingerprint(key, b"secrets-key") for key in keys]


@dataclass(frozen=True)
class Member:
    """Another live process, as it registered itself."""

    name: str
    started_at: float  # a timestamp: the longest-running process breaks a tie
    secret_key_id: str
    secrets_key_ids: tuple[str, ...]


def with_the_larger_part(agrees: Sequence[bool], *, oldest_agrees: bool) -> bool:
    """Whether this process is with the larger part of the fleet: ``agrees`` holds one entry
    per other live process. This one counts for itself; a tie goes to the side of the
    longest-running process (two hosts that disagree: the newcomer is the odd one)."""
    total = len(agrees) + 1
    together = sum(agrees) + 1
    return 2 * together > total or (2 * together == total and oldest_agrees)


def _oldest(members: Sequence[Member], me_started: float) -> Member | None:
    oldest = min(members, key=lambda m: (m.started_at, m.name), default=None)
    return oldest if oldest is not None and oldest.started_at < me_started else None


def keys_check(others: Sequence[Member], *, me_started: float) -> dict[str, Any]:
    """Does this process hold the keys the others hold? It must sign with the same
    ``SECRET_KEY`` and be able to decrypt what each of them encrypts (their first secrets key
    is one of ours: during a rotation the old key and the new one are both held)."""
    mine_secret, mine_secrets = secret_key_id(), set(secrets_key_ids())

    def agrees(member: Member) -> bool:
        return member.secret_key_id == mine_secret and bool(
            member.secrets_key_ids and member.secrets_key_ids[0] in mine_secrets
        )

    verdicts = [agrees(m) for m in others]
    odd = [m.name for m, ok in zip(others, verdicts, strict=True) if not ok]
    oldest = _oldest(others, me_started)
    if with_the_larger_part(verdicts, oldest_agrees=oldest is None or agrees(oldest)):
        return {"ok": True, "differ": odd[:5]} if odd else {"ok": True}
    secret_differs = [m.name for m in others if m.secret_key_id != mine_secret]
    what = "SECRET_KEY" if secret_differs else "SECRETS_KEYS"
    return {
        "ok": False,
        "error": (
            f"this process's {what} differs from that of {len(odd)} of the {len(others)} other "
            f"live processes (e.g. {odd[0]}): every process of a deployment needs the same "
            "SECRET_KEY and SECRETS_KEYS"
        ),
    }


def stored_secrets_check() -> dict[str, Any]:
    """Decrypt one stored value of each encrypted column: a process whose key cannot read
    what is stored is not ready, rather than failing the calls that need it."""
    from django.apps import apps

    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if not isinstance(field, secrets.EncryptedTextField):
                continue
            rows = model._default_manager.exclude(**{field.name: ""}).order_by("-pk")
            try:
                rows.values_list(field.name, flat=True).first()
            except secrets.SecretDecryptionError as exc:
                return {"ok": False, "error": f"{model._meta.label}.{field.name}: {exc}"}
    return {"ok": True}


# --- shared directories ------------------------------------------------------------------------
# Made by whoever first needs them (the app writes workspaces and skills); the stdio servers'
# venv exists only once an operator installed servers (``mcp_servers install``) or linked one
# in: a process never makes it, and checks it only where it exists.
OPTIONAL_DIRS = {"MCP_SERVERS_VENV"}


def shared_dirs() -> list[tuple[str, Path]]:
    """The directories every process must see alike, by the setting that names them."""
    return [
        ("WORKSPACES_DIR", Path(settings.WORKSPACES_DIR)),
        ("SKILLS_DIR", Path(settings.SKILLS_DIR)),
        ("MCP_SERVERS_VENV", Path(settings.MCP_SERVERS_VENV)),
    ]


def _marker(directory: Path, name: str) -> Path:
    # Named by a digest: sandboxes may see these directories, and a listing says nothing of
    # the fleet's hosts.
    return directory / MARKERS / hashlib.sha256(name.encode()).hexdigest()[:24]


def markers_write(name: str) -> None:
    """This process's marker in each shared directory (again if someone removed it)."""
    for setting, directory in shared_dirs():
        marker = _marker(directory, name)
        if marker.exists():
            continue
        if not directory.is_dir():
            if setting in OPTIONAL_DIRS:
                continue
            directory.mkdir(parents=True, exist_ok=True)
            # As the workspaces' root is made where it is first written: whatever the umask,
            # the sandbox uid must be able to pass through it (search, not list).
            directory.chmod(directory.stat().st_mode | 0o111)
        marker.parent.mkdir(exist_ok=True)
        marker.touch()


def markers_remove(name: str) -> None:
    for _setting, directory in shared_dirs():
        _marker(directory, name).unlink(missing_ok=True)


def markers_forget(keep: Sequence[str]) -> None:
    """Remove the markers of processes long gone (a killed process leaves its own)."""
    kept = {_marker(Path(), name).name for name in keep}
    limit = time.time() - MARKER_FORGET_SECONDS
    for _setting, directory in shared_dirs():
        try:
            entries = list((directory / MARKERS).iterdir())
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.name not in kept and entry.stat().st_mtime < limit:
                    entry.unlink()
            except OSError:
                continue


def dirs_check(others: Sequence[Member], *, me: str, me_started: float) -> dict[str, Any]:
    """Does this process see the same shared directories as the others? In each, the markers
    of the live processes (its own too, when it registered) must be there; a directory that
    holds too few of them is named."""
    oldest = _oldest(others, me_started)
    errors: list[str] = []
    for setting, directory in shared_dirs():
        if setting in OPTIONAL_DIRS and not directory.is_dir():
            continue
        if not os.access(directory, os.W_OK | os.X_OK):
            errors.append(f"{setting} {directory} is not a directory this process can write")
            continue
        if me and not _marker(directory, me).exists() and setting not in OPTIONAL_DIRS:
            errors.append(
                f"{setting} {directory} lost this process's own marker: the directory was "
                "replaced or unmounted after the process started"
            )
            continue
        seen = [_marker(directory, m.name).exists() for m in others]
        oldest_seen = oldest is None or _marker(directory, oldest.name).exists()
        if not with_the_larger_part(seen, oldest_agrees=oldest_seen):
            missing = [m.name for m, ok in zip(others, seen, strict=True) if not ok]
            errors.append(
                f"{setting} {directory} is not the directory the other processes see: it "
                f"lacks the markers of {len(missing)} of the {len(others)} other live "
                f"processes (e.g. {missing[0]}); every process must mount the same shared "
                f"{setting}"
            )
    return {"ok": False, "error": "; ".join(errors)} if errors else {"ok": True}
