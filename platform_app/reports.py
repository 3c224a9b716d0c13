"""Reports of create_report: one Markdown file each in the conversation's reports folder.

The folder sits in the conversation's workspace, which sandboxed tools can write to: so a
model could replace ``reports`` by a symbolic link to somewhere else. Every step is taken
relative to an open directory with ``O_NOFOLLOW`` (as in ``safe_files``): a link there is
refused, never followed; the file is created with ``O_EXCL`` (never overwriting anything,
nor writing through a link planted under the chosen name). File names are built by us from
the title and a timestamp, and checked again (``REPORT_NAME``) wherever a name comes in.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from django.conf import settings

from chat_app.models import Conversation
from platform_app.safe_files import Missing, Refused, read_beneath
from tools_app.models import ToolCall
from tools_app.runtime import workspace_dir_for, workspace_id_for
from tools_app.selectors import group_settings

REPORT_NAME = re.compile(r"^\d{8}_\d{6}(?:_\d+)?_[A-Za-z0-9_-]{1,80}\.md$")
_CITATION = re.compile(r"\[(\d{1,4})\]")
# [1], [1, 3], [2; 5]: the numbers a report cites.
_CITATIONS = re.compile(r"\[(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\]")
# A list of sources the model wrote itself at the end, under one of these headings.
_SOURCES_HEADING = re.compile(
    r"^#{1,6}\s*(?:sources|references|bibliography|источники|список источников|ссылки|"
    r"литература)\s*:?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


def safe_title(title: str) -> str:
    """ASCII letters and digits joined by ``_``, at most 80 characters; never empty."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return _UNSAFE.sub("_", ascii_title).strip("_")[:80].strip("_") or "report"


@dataclass(frozen=True)
class Report:
    name: str
    title: str
    words: int
    sources: int
    size: int
    timestamp: str


@dataclass(frozen=True)
class Cited:
    content: str  # the report, its list of sources written from the turn's registry
    sources: list[dict[str, object]]  # the registered sources it cites, by number
    unknown: list[int]  # numbers it cites that no research tool gave this turn


def cited_numbers(content: str) -> list[int]:
    """The numbers ``content`` cites, in order of first citation."""
    seen: dict[int, None] = {}
    for group in _CITATIONS.findall(content):
        for part in re.split(r"[,;]", group):
            seen.setdefault(int(part), None)
    return list(seen)


def report_with_sources(content: str, registry: dict[int, Any]) -> Cited:
    """The report with the turn's numbered sources listed at its end (seed 004: every claim
    cited as [n], the sources listed). ``registry``: number → source (``as_dict()``) of the
    turn's research tools. A list the model wrote under a Sources heading is replaced by the
    registry's — unless it cites a number the registry lacks (then the model's list stays,
    and the unknown numbers are reported)."""
    cited = cited_numbers(content)
    sources = [registry[n].as_dict() for n in sorted(cited) if n in registry]
    unknown = [n for n in cited if n not in registry]
    if not sources:
        return Cited(content, [], unknown if registry else [])
    body = content.rstrip()
    if not unknown:
        headings = list(_SOURCES_HEADING.finditer(body))
        if headings:
            body = body[: headings[-1].start()].rstrip()
    lines = [
        f"[{s['number']}] {s['title'] or s['url']} — <{s['url']}>"
        if s["title"]
        else f"[{s['number']}] <{s['url']}>"
        for s in sources
    ]
    listing = "\n\n## Sources\n\n" + "\n".join(f"- {line}" for line in lines) + "\n"
    return Cited(body + listing, sources, unknown)


def report_stats(content: str) -> tuple[int, int]:
    """(word count, number of distinct sources cited as [n])."""
    return len(content.split()), len(set(_CITATION.findall(content)))


def _reports_fd(workspace: Path, folder: str, *, create: bool) -> int:
    root = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o755, dir_fd=root)
        try:
            st = os.stat(folder, dir_fd=root, follow_symlinks=False)
        except FileNotFoundError:
            raise Missing("this conversation has no reports yet") from None
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"{folder!r} is a symbolic link; reports are not written through links")
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{folder!r} in the workspace is not a folder")
        try:
            return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Refused(f"{folder!r} is a symbolic link") from None
            raise
    finally:
        os.close(root)


def report_write(
    *, workspace: Path, folder: str, title: str, content: str, max_bytes: int
) -> Report:
    data = content.encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        raise Refused(f"the report is {len(data):,} bytes; the limit is {max_bytes:,}")
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%d_%H%M%S")
    base = safe_title(title)
    fd = _reports_fd(workspace, folder, create=True)
    try:
        for attempt in range(1, 100):
            name = f"{stamp}_{base}.md" if attempt == 1 else f"{stamp}_{attempt}_{base}.md"
            try:
                ffd = os.open(
                    name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd
                )
            except FileExistsError:
                continue
            break
        else:  # pragma: no cover - a hundred reports with one title in one second
            raise Refused("too many reports with this title at once")
    finally:
        os.close(fd)
    with os.fdopen(ffd, "wb") as handle:
        handle.write(data)
    words, sources = report_stats(content)
    return Report(
        name=name,
        title=title,
        words=words,
        sources=sources,
        size=len(data),
        timestamp=now.isoformat(timespec="seconds"),
    )


def report_read(*, workspace: Path, folder: str, name: str, max_bytes: int) -> bytes:
    if not REPORT_NAME.match(name):
        raise Refused("not a report file name")
    return read_beneath(workspace, [folder, name], max_bytes=max_bytes, truncate=False).data


def reports_list(
    *, workspace: Path, folder: str, limit: int | None = 200
) -> list[dict[str, object]]:
    """The conversation's reports, newest first: name, size, modified (epoch seconds)."""
    try:
        fd = _reports_fd(workspace, folder, create=False)
    except (Missing, Refused, FileNotFoundError):
        return []
    out: list[dict[str, object]] = []
    try:
        for name in sorted(os.listdir(fd), reverse=True):
            if not REPORT_NAME.match(name):
                continue
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            out.append({"name": name, "size": st.st_size, "modified": int(st.st_mtime)})
            if limit is not None and len(out) >= limit:
                break
    finally:
        os.close(fd)
    return out


def report_quota_check(
    *, user_id: int, folder: str, adding: int, max_reports: int, max_bytes: int
) -> None:
    """Refused when one more report of ``adding`` bytes would take the user past a limit.
    Reports are files in the workspaces of the conversations where the user wrote one; a
    report deleted (or its conversation) no longer counts."""
    conversations = set(
        ToolCall.objects.filter(
            user_id=user_id, tool="create_report", status=ToolCall.Status.SUCCEEDED
        )
        .order_by()
        .values_list("conversation_id", flat=True)
    )
    root = Path(settings.WORKSPACES_DIR)
    count = size = 0
    for conversation_id in conversations:
        workspace = root / workspace_id_for(conversation_id=conversation_id, user_id=user_id)
        for row in reports_list(workspace=workspace, folder=folder, limit=None):
            count += 1
            size += cast(int, row["size"])
    delete = "delete old reports (or the conversations that hold them) first"
    if count >= max_reports:
        raise Refused(
            f"you have {count:,} reports; the limit is {max_reports:,} per user — {delete}"
        )
    if size + adding > max_bytes:
        raise Refused(
            f"your reports take {size:,} bytes and this one {adding:,}; the limit is "
            f"{max_bytes:,} bytes per user — {delete}"
        )


# --- the chat page's reads ----------------------------------------------------------------


def _reports_place(conversation: Conversation) -> tuple[Any, str, int]:
    agent = group_settings("agent")
    workspace = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    folder = str(getattr(agent, "reports_folder", "reports"))
    return workspace, folder, int(getattr(agent, "max_report_bytes", 1_000_000))


def conversation_reports(conversation: Conversation) -> list[dict[str, object]]:
    """The reports create_report wrote for this conversation, newest first."""
    workspace, folder, _ = _reports_place(conversation)
    return reports_list(workspace=workspace, folder=folder)


def conversation_report(conversation: Conversation, name: str) -> bytes | None:
    """One report's bytes; None when the name is not a report's or it cannot be read safely
    (a link, a hard link, too large, gone)."""
    workspace, folder, max_bytes = _reports_place(conversation)
    try:
        return report_read(workspace=workspace, folder=folder, name=name, max_bytes=max_bytes)
    except (Missing, Refused, OSError):
        return None
