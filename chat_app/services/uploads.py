"""Files people put into a conversation's workspace (button, drag and drop, paste), the Files
panel's listing and its downloads, and the uploaded images a model with image input sees.

The workspace is the one the conversation's tools use (``tools_app.runtime``), so the agent's
file tools see an upload at once. A name can never leave it: one component, no separators
(nor look-alikes once Unicode is folded), no NUL or control or invisible characters, no
reserved or hidden names, at most 255 bytes. The file is created relative to the open
workspace directory with ``O_CREAT | O_EXCL | O_NOFOLLOW``: a link or an existing file of that
name (the sandbox can plant either) is never written through; a free name is chosen instead.
The body is copied in chunks, counted as it goes, and removed when it passes the limit.
Reads go through ``infra.safe_files`` (no link followed anywhere on the way).
"""

from __future__ import annotations

import contextlib
import logging
import os
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from django.conf import settings
from django.utils.translation import gettext as _

from chat_app.models import Conversation
from infra.safe_files import Missing, Refused, open_beneath, split_relative, walk_beneath
from tools_app.executors.file.settings import FileSettings
from tools_app.registry import GROUPS
from tools_app.runtime import workspace_dir_for, workspace_id_for
from tools_app.selectors import group_settings

logger = logging.getLogger(__name__)

MAX_NAME_BYTES = 255
CHUNK = 1024 * 1024
LIST_LIMIT = 500
IMAGE_TYPES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
# Images a model sees per request (the newest); older ones stay names in the text.
MAX_IMAGES_TO_MODEL = 4
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {
    f"{p}{i}" for p in ("COM", "LPT") for i in range(10)
}
# Separators, characters other systems refuse, and slashes' look-alikes (fraction, division,
# fullwidth, small and mathematical solidus): shown, they pass for a folder path.
_FORBIDDEN = set('/\\<>:"|?*') | set("\u2044\u2215\u29f5\u29f8\u29f9\ufe68\uff0f\uff3c")


class UploadError(Exception):
    """The upload is refused; ``status`` is the HTTP answer (400 name, 413 size, 415 type)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


@dataclass(frozen=True)
class Stored:
    name: str
    size: int
    mime: str  # image/* when the content is an image a model can take, else ""

    def as_attachment(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "mime": self.mime}


def _file_settings() -> FileSettings | None:
    return group_settings("file", FileSettings) if "file" in GROUPS else None


def upload_max_bytes() -> int:
    """The File group's setting in the Tools Manager, else ``UPLOAD_MAX_MB``; never above
    what a request body may be."""
    chosen = _file_settings()
    limit = (
        chosen.upload_max_mb * 1024 * 1024
        if chosen and chosen.upload_max_mb
        else int(settings.UPLOAD_MAX_BYTES)
    )
    return min(limit, int(settings.MAX_REQUEST_BODY_BYTES) - 64 * 1024)


def upload_allowed_types() -> list[str]:
    """Allowed extensions, lower-case without the dot; ``["*"]``: any. The File group's
    setting in the Tools Manager, else ``UPLOAD_ALLOWED_TYPES``."""
    chosen = _file_settings()
    if chosen and chosen.upload_allowed_types:
        return list(chosen.upload_allowed_types)
    return list(settings.UPLOAD_ALLOWED_TYPES)


def upload_name(raw: str) -> str:
    """The name an upload is stored under, or UploadError saying why it cannot be."""
    if "\0" in raw:
        raise UploadError(_("the file name contains a NUL byte"))
    name = unicodedata.normalize("NFC", raw.strip())
    if not name:
        raise UploadError(_("the file has no name"))
    folded = unicodedata.normalize("NFKC", name)
    if any(c in _FORBIDDEN for c in name + folded):
        raise UploadError(
            _(
                '%(name)s: a file name may not contain / \\ < > : " | ? * (uploads go straight '
                "into the workspace, never into a folder path)"
            )
            % {"name": f"{name!r}"}
        )
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for c in name):
        raise UploadError(
            _("%(name)s: the file name contains control or invisible characters")
            % {"name": f"{name!r}"}
        )
    if name in (".", "..") or folded in (".", ".."):
        raise UploadError(_("%(name)s is not a file name") % {"name": f"{name!r}"})
    if name.startswith((".", "-", "~")):
        raise UploadError(
            _("%(name)s: a file name may not start with '.', '-' or '~'") % {"name": f"{name!r}"}
        )
    if name.endswith((".", " ")):
        raise UploadError(
            _("%(name)s: a file name may not end with a dot or a space") % {"name": f"{name!r}"}
        )
    if name.split(".")[0].upper().strip() in _WINDOWS_RESERVED:
        raise UploadError(_("%(name)s is a reserved device name") % {"name": f"{name!r}"})
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise UploadError(
            _("the file name is longer than %(MAX_NAME_BYTES)s bytes")
            % {"MAX_NAME_BYTES": MAX_NAME_BYTES}
        )
    allowed = upload_allowed_types()
    if "*" not in allowed:
        ext = name.rsplit(".", 1)[1].lower() if "." in name else ""
        if ext not in allowed:
            shown = f".{ext} files" if ext else "files without an extension"
            listed = ", ".join("." + a for a in allowed[:12])
            more = f" and {len(allowed) - 12} more" if len(allowed) > 12 else ""
            raise UploadError(
                _("%(shown)s are not accepted here; allowed: %(listed)s%(more)s")
                % {"shown": shown, "listed": listed, "more": more},
                status=415,
            )
    return name


def workspace_for(conversation: Conversation) -> Path:
    return workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))


def _numbered(name: str, n: int) -> str:
    if n == 1:
        return name
    stem, dot, ext = name.rpartition(".")
    candidate = f"{stem} ({n}).{ext}" if dot and stem else f"{name} ({n})"
    if len(candidate.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise UploadError(_("the file name is too long to make unique; rename the file"))
    return candidate


def _create(dir_fd: int, name: str) -> tuple[str, int]:
    for n in range(1, 100):
        candidate = _numbered(name, n)
        try:
            fd = os.open(
                candidate,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=dir_fd,
            )
        except FileExistsError:  # a file, a folder or a link of that name: never touched
            continue
        return candidate, fd
    raise UploadError(
        _("too many files named like %(name)s in the workspace; rename the file")
        % {"name": f"{name!r}"}
    )


def _sniff(head: bytes) -> str:
    for magic, mime in IMAGE_TYPES.items():
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return ""


def upload_store(
    *, conversation: Conversation, name: str, body: Readable, declared_size: int | None = None
) -> Stored:
    """Copy ``body`` into the workspace as ``name`` (or a numbered variant when taken)."""
    limit = upload_max_bytes()
    too_large = f"the file is larger than the upload limit of {limit // (1024 * 1024)} MB"
    if declared_size is not None and declared_size > limit:
        raise UploadError(too_large, status=413)
    name = upload_name(name)
    workspace = workspace_for(conversation)
    try:
        dir_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:  # replaced by a link (or gone): never written through
        logger.error("the workspace of conversation %s is not a folder", conversation.pk)
        raise UploadError(_("the conversation's workspace cannot be opened"), status=409) from None
    try:
        try:
            stored, fd = _create(dir_fd, name)
        except PermissionError:
            # A deployment whose sandbox user is not this process's user, and which cannot
            # share one folder's permissions between them (docs/DEPLOYMENT.md "Workspaces").
            logger.error(
                "upload into conversation %s refused: its workspace %s is not writable by uid"
                " %s (SANDBOX_UID is %s: the sandbox and the web processes need the same uid)",
                conversation.pk,
                workspace,
                os.geteuid(),
                settings.SANDBOX_UID,
            )
            raise UploadError(
                _("the conversation's folder cannot be written by the server: ask an admin"),
                status=503,
            ) from None
        size = 0
        head = b""
        try:
            with os.fdopen(fd, "wb", buffering=0) as out:
                while chunk := body.read(CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise UploadError(too_large, status=413)
                    if len(head) < 16:
                        head += chunk[:16]
                    out.write(chunk)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(stored, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)
    logger.info("upload into conversation %s: %s (%s bytes)", conversation.pk, stored, size)
    return Stored(name=stored, size=size, mime=_sniff(head))


def workspace_listing(conversation: Conversation) -> list[dict[str, Any]]:
    """The workspace's files (links and hidden names left out), newest first."""
    entries = sorted(
        walk_beneath(
            workspace_for(conversation), suffixes=("",), max_entries=LIST_LIMIT, max_depth=6
        ),
        key=lambda e: e.mtime_ns,
        reverse=True,
    )
    return [
        {
            "path": "/".join(entry.parts),
            "name": entry.parts[-1],
            "size": entry.size,
            "modified": datetime.fromtimestamp(entry.mtime_ns / 1e9, tz=UTC),
        }
        for entry in entries
    ]


def workspace_file_open(conversation: Conversation, path: str) -> tuple[BinaryIO, int]:
    """An open workspace file and its size; Missing or Refused as ``infra.safe_files`` says."""
    parts = split_relative(path)
    if any(p.startswith(".") for p in parts):
        raise Missing("hidden files are not offered")
    handle, st = open_beneath(workspace_for(conversation), parts)
    return handle, st.st_size


def clean_attachments(conversation: Conversation, raw: Any) -> list[dict[str, Any]]:
    """What the browser says it just uploaded, checked against the workspace: names that are
    not there (or are not plain files) are dropped."""
    if not isinstance(raw, list):
        return []
    out: list[dict[str, Any]] = []
    for item in raw[:20]:
        if not isinstance(item, str):
            continue
        try:
            handle, size = workspace_file_open(conversation, item)
        except (Missing, Refused, OSError, ValueError):
            continue
        with handle:
            mime = _sniff(handle.read(16))
        out.append({"name": item, "size": size, "mime": mime})
    return out


def attachment_note(attachments: list[dict[str, Any]]) -> str:
    """The text a model reads about a message's files (with or without image input)."""
    if not attachments:
        return ""
    names = ", ".join(f"{a['name']} ({a.get('size', 0):,} bytes)" for a in attachments)
    return f"\n\n[Files uploaded into the workspace with this message: {names}]"


def attachment_image(conversation: Conversation, attachment: dict[str, Any]) -> tuple[str, bytes]:
    """(mime, bytes) of an uploaded image, or ("", b"") when it is gone, changed or too big."""
    name = attachment.get("name")
    if not isinstance(name, str) or not str(attachment.get("mime", "")).startswith("image/"):
        return "", b""
    try:
        handle, size = workspace_file_open(conversation, name)
    except (Missing, Refused, OSError, ValueError):
        return "", b""
    with handle:
        if size > settings.UPLOAD_MAX_IMAGE_TO_MODEL_BYTES:
            return "", b""
        data = handle.read()
    mime = _sniff(data[:16])
    return (mime, data) if mime else ("", b"")
