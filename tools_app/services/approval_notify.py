"""Telling approvers that a call waits for them: the live queue (the Approvals page and the
top bar's badge) and, when ``EMAIL_HOST`` is set, an email to each approver."""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext

from tools_app.events import approvals_publish
from tools_app.i18n import person_language
from tools_app.models import ToolCall
from tools_app.signals import approval_requested, notify

logger = logging.getLogger(__name__)

EVERYONE = "Everyone"  # platform_app.people.services.EVERYONE: every user is in it


def approval_waiting(call: ToolCall) -> None:
    """Called once a call waiting for a decision is stored (binding, after the commit)."""
    notify(approval_requested, call=call)
    if call.approval_mode != "approver":
        return
    approvals_publish(call)
    if settings.EMAIL_HOST:
        try:
            messages = approval_emails(call)
        except Exception:  # telling approvers must never break the call
            logger.exception("call %s: could not prepare the approval emails", call.pk)
            return
        if messages:
            threading.Thread(
                target=_send, args=(call.pk, messages), name="cc-approval-mail", daemon=True
            ).start()


def approvers_of(call: ToolCall) -> list[Any]:
    """The active people who may decide this call, the requester left out."""
    users = get_user_model().objects.filter(is_active=True)
    if call.user_id is not None:
        users = users.exclude(pk=call.user_id)
    ids = call.approver_group_ids or []
    if not ids:
        return list(users.filter(is_staff=True))
    from django.contrib.auth.models import Group

    if Group.objects.filter(pk__in=ids, name=EVERYONE).exists():
        return list(users)
    return list(users.filter(Q(groups__pk__in=ids)).distinct())


def approval_emails(call: ToolCall) -> list[EmailMessage]:
    """One email per approver, each in that person's own language."""
    return [_approval_email(call, user) for user in approvers_of(call) if user.email]


def _approval_email(call: ToolCall, user: Any) -> EmailMessage:
    with translation.override(person_language(user)):
        requester = call.user.get_username() if call.user else gettext("someone")
        words = {
            "requester": requester,
            "tool": call.tool,
            "group": call.group,
            "approvers": call.approvers_label,
            "link": f"{settings.APP_URL}/approvals/",
            "minutes": settings.APPROVAL_TIMEOUT_MINUTES,
        }
        subject = gettext("Approval needed: %(tool)s for %(requester)s") % words
        body = (
            gettext(
                "%(requester)s asked to run %(tool)s (%(group)s); it waits for an approver "
                "(%(approvers)s).\n\nDecide it here: %(link)s\n\n"
                "Unless someone decides, it is denied after %(minutes)s min.\n"
            )
            % words
        )
    return EmailMessage(subject, body, None, [user.email])


def _send(call_id: int, messages: list[EmailMessage]) -> None:
    try:
        get_connection().send_messages(messages)
    except Exception as exc:
        logger.warning("call %s: approval emails not sent (%s)", call_id, exc)
