"""The preview of a call waiting for approval (``tools_app.previews``), for whoever may decide it.

It is made in the web process each time a card or the Approvals page shows it, and again for
edited arguments, so it shows the workspace as it is when the approver looks — and says when
it was taken. Arguments are validated and checked against policy first, exactly as binding
and a decision check them: a path the tool could not write is never read for a preview. A
preview that fails says "no preview: <reason>" and changes nothing; the decision stays open.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.utils import timezone
from django.utils.translation import gettext as _
from pydantic import ValidationError

from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolError
from tools_app.models import ToolCall
from tools_app.previews import Preview, PreviewContext, PreviewUnavailable
from tools_app.registry import activity_name, get_tool, resolve_preview
from tools_app.runtime import BindContext, workspace_id_for
from tools_app.services.binding import format_validation_error

logger = logging.getLogger(__name__)


def _unavailable(reason: str) -> Preview:
    return Preview(unavailable=reason, taken_at=timezone.now())


def toolcall_preview(
    *, call: ToolCall, arguments: dict[str, Any] | None = None, viewer_id: int | None = None
) -> Preview | None:
    """What ``call`` would do with ``arguments`` (its own when None), or None when its tool has
    no preview. The caller has checked that the viewer (``viewer_id``; None: the requester)
    may decide the call; a viewer other than the requester previewing an edit reads only what
    the call's own arguments name (``PreviewContext.own_arguments``)."""
    tool = selectors.tool_named(call.tool)
    hook = resolve_preview(tool) if tool is not None else None
    if tool is None or hook is None:
        return None
    given = call.arguments if arguments is None else arguments
    if not isinstance(given, dict):
        return _unavailable(_("the arguments are not a JSON object"))
    try:
        validated = tool.model_validate(given)
    except ValidationError as exc:
        return _unavailable(format_validation_error(call.tool, exc))
    bind = BindContext(
        user_id=call.user_id,
        conversation_id=call.conversation_id,
        source=call.source,
        scope=call.scope,
    )
    try:
        validated.check_policy(selectors.group_settings(tool.tool_group), bind)
    except PolicyDenied as exc:
        return _unavailable(_("policy: %(reason)s") % {"reason": exc.reason})
    except ToolError as exc:
        return _unavailable(exc.message)
    # The activity's group's settings, as the executor gets them (dev's write_file runs
    # file_write under the File group's paths and limits).
    owner = get_tool(activity_name(tool))
    group = owner.tool_group if owner is not None else tool.tool_group
    workspace = Path(django_settings.WORKSPACES_DIR) / workspace_id_for(
        conversation_id=call.conversation_id, user_id=call.user_id
    )
    ctx = PreviewContext(
        settings=selectors.group_settings(group),
        workspace_dir=workspace,
        call_id=call.pk,
        conversation_id=call.conversation_id,
        user_id=call.user_id,
        own_arguments=(
            call.arguments
            if arguments is not None and viewer_id is not None and viewer_id != call.user_id
            else None
        ),
    )
    try:
        made = hook(validated, ctx)
    except PreviewUnavailable as exc:
        return _unavailable(exc.reason)
    except PolicyDenied as exc:
        return _unavailable(_("policy: %(reason)s") % {"reason": exc.reason})
    except ToolError as exc:
        return _unavailable(exc.message)
    except Exception:
        logger.exception("preview of call %s (%s) failed", call.pk, call.tool)
        return _unavailable(_("the preview failed; the arguments above are what would run"))
    made.taken_at = timezone.now()
    return made
