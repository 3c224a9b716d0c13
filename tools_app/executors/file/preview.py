"""What a file write would change: a unified diff against the file as it is now.

The path goes through the executor's own policy first (binding's ``check_allowed``, run again
by the preview service), then is read beneath its root — the call's workspace, or the granted
host folder — with ``infra.safe_files``: no ``..``, no absolute path, and no symbolic link
anywhere on the way (the sandbox resolves a link inside itself; read from this host it could
lead anywhere, so it is refused rather than followed)."""

from __future__ import annotations

import mimetypes
import posixpath
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _

from infra.safe_files import Missing, Refused, read_beneath, split_relative
from tools_app.executors.file.paths import check_allowed, host_folder_of
from tools_app.executors.file.settings import FileSettings, host_folders
from tools_app.previews import Preview, PreviewContext, PreviewUnavailable, unified_diff
from tools_app.registry import preview


def _where(path: str, settings: FileSettings, workspace: Path) -> tuple[Path, list[str]]:
    """The root and the parts below it that the executor would write."""
    folders = host_folders(settings)
    folder = host_folder_of(path, folders)
    if folder is None:
        return workspace, check_allowed(path, settings.allowed_paths, folders, write=True)
    inside = posixpath.normpath("/" + path[len(folder.target) :]).lstrip("/")
    try:
        return folder.path, split_relative(inside)
    except Refused as exc:
        raise PreviewUnavailable(str(exc)) from None


def _binary(data: bytes) -> bool:
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@preview("file_write")
def file_write_preview(args: Any, ctx: PreviewContext) -> Preview:
    settings: FileSettings = ctx.settings
    path = str(args.path)
    mode = getattr(args, "mode", "overwrite")
    content = str(args.content)
    if ctx.own_arguments is not None and path != str(ctx.own_arguments.get("path", "")):
        raise PreviewUnavailable(
            _(
                "the edit names another path: for anyone but the requester the preview reads "
                "only the file the call names"
            )
        )
    root, parts = _where(path, settings, ctx.workspace_dir)
    if not parts:
        raise PreviewUnavailable(_("the path names a folder, not a file"))
    shown = "/".join(parts)
    try:
        found = read_beneath(root, parts, max_bytes=settings.max_file_bytes, truncate=False)
    except Refused as exc:
        raise PreviewUnavailable(str(exc)) from None
    except Missing as exc:
        if "does not exist" not in str(exc):
            raise PreviewUnavailable(str(exc)) from None
        lines, cut = unified_diff("", content, path=shown, new_file=True)
        return Preview(
            title=_("New file %(path)s") % {"path": path},
            lines=lines,
            note=_("a new file of %(size)s bytes") % {"size": f"{len(content.encode('utf-8')):,}"}
            + (_(" (diff cut)") if cut else ""),
        )
    if _binary(found.data):
        kind = mimetypes.guess_type(shown)[0] or _("binary data")
        verb = _("appended to") if mode == "append" else _("replaced by")
        return Preview(
            title=_("Changes to %(path)s") % {"path": path},
            note=_(
                "the file is binary (%(kind)s, %(size)s bytes): no diff; it would be %(verb)s "
                "%(new)s bytes of text"
            )
            % {
                "kind": kind,
                "size": f"{found.size:,}",
                "verb": verb,
                "new": f"{len(content.encode('utf-8')):,}",
            },
        )
    old = found.data.decode("utf-8")
    new = old + content if mode == "append" else content
    lines, cut = unified_diff(old, new, path=shown)
    if old == new:
        note = _("no change: the file already has this content")
    elif not lines:
        note = _("only the line break at the end of the file changes")
    else:
        note = _("diff cut") if cut else ""
    return Preview(title=_("Changes to %(path)s") % {"path": path}, lines=lines, note=note)
