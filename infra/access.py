"""Access: every "may this person see or do this" that is not a tool call.

Tool calls are decided in one place, binding (``tools_app.services.binding``). Everything
else — pages, the websocket, ``/v1``, the REST API, management commands — asks the named
checks here, so a rule is written once and every way in applies the same words:

- **who is asking** (a view's or a socket's rule): ``public``, ``signed_in``, ``staff``,
  ``token`` (REST, ``/v1`` and ``/mcp/`` authenticate a bearer token through
  ``platform_app.api_tokens``; the REST operations name their scope). Each view carries its rule
  as ``view.access`` (``Rule``), each websocket consumer as a class attribute, and
  ``tests/security/test_access_routes.py`` walks every route to hold it so.
- **what they may touch**: ``principal_current`` (is the account and the session still good —
  asked again on every websocket frame), ``conversation_readable`` / ``conversation_read``
  (the owner, or an auditor, whose read is recorded), ``conversation_changeable`` (the owner
  only), ``owner`` (schedules, tokens, memory, reports, uploads: the person's own),
  ``auditor``, ``staff_member``, ``personal_changeable`` / ``personal_visible`` (a member's
  own agent profiles and prompts: the owner changes them, the groups they are shared with see
  them).
- **one 403 shape**: ``forbidden`` — the styled page for a browser, the API's JSON error
  (``{"error": {"message", "type": "permission_error", "code": "forbidden"}}``) for scripts.

A refused object read answers 404, as if the object did not exist (ids reveal nothing); a
refused page answers 403 through ``forbidden``. docs/ACCESS.md maps each way in to its check.

This module sits in ``infra``, below every app: it reads users through Django's auth only, and
is told the one thing it needs from above — how to record an auditor's read — at ``ready()``
(``conversation_read_recorder_set``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from types import SimpleNamespace
from typing import Any, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.translation import gettext as _

V = TypeVar("V", bound=Callable[..., HttpResponseBase])

# The permission of auditors: they may read anyone's conversation, and each read is recorded.
AUDIT_CONVERSATIONS_PERMISSION = "chat_app.audit_conversations"


@dataclass(frozen=True)
class Rule:
    """Who may reach a view or socket: ``name`` is one of the rules above; ``why`` says why a
    public one is public."""

    name: str
    why: str = ""


PUBLIC, SIGNED_IN, STAFF, TOKEN = "public", "signed_in", "staff", "token"
RULES = (PUBLIC, SIGNED_IN, STAFF, TOKEN)


# --- the principal ---------------------------------------------------------------------------
def active(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_active", False))


def staff_member(user: Any) -> bool:
    return active(user) and bool(user.is_staff)


def auditor(user: Any) -> bool:
    """Holds the auditor permission (through a group, or as a superuser). Being staff is not
    enough: a conversation is its owner's."""
    return active(user) and bool(user.has_perm(AUDIT_CONVERSATIONS_PERMISSION))


def owner(user: Any, owner_id: int | None) -> bool:
    """The object is the person's own (and the account is active)."""
    return owner_id is not None and active(user) and owner_id == user.pk


@dataclass(frozen=True)
class Principal:
    """Who holds a session now: ``user`` (None: nobody, and ``reason`` says why)."""

    user: Any
    reason: str = ""


def principal_current(*, session_key: str | None, user_id: int | None) -> Principal:
    """Is the session a socket was opened with still the same person's, signed in and active?
    Read afresh from the session store and the database, as a request would be: a signed-out
    or expired session, a changed password (the session's hash), a deactivated or deleted
    account each end it. Asked on every websocket frame (``infra.websocket``)."""
    from django.contrib import auth
    from django.contrib.sessions.backends.base import SessionBase
    from django.utils.module_loading import import_string

    if not session_key or user_id is None:
        return Principal(None, _("your session has ended: sign in again"))
    store_class = import_string(f"{settings.SESSION_ENGINE}.SessionStore")
    session: SessionBase = store_class(session_key)
    user = auth.get_user(SimpleNamespace(session=session))  # type: ignore[arg-type]
    if getattr(user, "pk", None) == user_id and active(user):
        return Principal(user)
    deactivated = (
        auth.get_user_model().objects.filter(pk=user_id, is_active=False).order_by().exists()
    )
    if deactivated:
        return Principal(None, _("your account has been deactivated"))
    return Principal(None, _("your session has ended: sign in again"))


# --- conversations ---------------------------------------------------------------------------
OWNER_READ, AUDITED_READ = "owner", "auditor"

_read_recorder: Callable[..., object] | None = None


def conversation_read_recorder_set(recorder: Callable[..., object]) -> None:
    """How an auditor's read is recorded (``tools_app.services.audit.audit_conversation_read``,
    set at ``ready()``)."""
    global _read_recorder
    _read_recorder = recorder


def conversation_readable(user: Any, *, owner_id: int | None) -> str | None:
    """``"owner"``, ``"auditor"`` (someone else's, read under the auditor permission: the read
    must be recorded) or None (not to be read: the caller answers as if it did not exist)."""
    if owner(user, owner_id):
        return OWNER_READ
    if owner_id is not None and auditor(user):
        return AUDITED_READ
    return None


def conversation_read(user: Any, conversation: Any, *, via: str) -> bool:
    """May ``user`` read ``conversation`` (an object with ``pk``, ``owner_id``, ``title`` and
    ``owner``)? An auditor's read of someone else's is recorded, saying ``via`` what."""
    how = conversation_readable(user, owner_id=conversation.owner_id)
    if how == AUDITED_READ and _read_recorder is not None:
        _read_recorder(
            reader=user,
            conversation_id=conversation.pk,
            conversation_title=conversation.title,
            owner_id=conversation.owner_id,
            owner_username=conversation.owner.get_username(),
            via=via,
        )
    return how is not None


def conversation_changeable(user: Any, *, owner_id: int | None) -> bool:
    """Sending, editing, stopping, sharing, deleting, uploading: the owner only (an auditor
    reads, never acts)."""
    return owner(user, owner_id)


def history_import_into(user: Any, *, owner_id: int | None) -> bool:
    """Importing another product's history (chat_app.services.history_import) into an
    account: one's own, or anyone's for an admin (taking over a team's history); the
    ``manage.py conversations import`` command is the operator's and needs no check."""
    return owner(user, owner_id) or staff_member(user)


# --- standing approvals ---------------------------------------------------------------------
def standing_visible(user: Any, grant: Any) -> bool:
    """A standing approval (``granted_by_id``, ``user_id``) is seen by an admin, by whoever
    granted it and (read-only) by the person it is for."""
    if not active(user):
        return False
    return staff_member(user) or user.pk in (grant.granted_by_id, grant.user_id)


def standing_revocable(user: Any, grant: Any) -> bool:
    """Revoked by an admin or by whoever granted it — not by the person it is for."""
    return staff_member(user) or (active(user) and grant.granted_by_id == user.pk)


# --- schedules ---------------------------------------------------------------------------
def schedule_preapprovable(
    user: Any, *, owner_id: int | None, approves_something: Callable[[], bool]
) -> bool:
    """A schedule someone may open to pre-approve its calls: an admin and an approver of some
    function (``approves_something``, asked last) any person's; the owner their own. Whether
    they may pre-approve a given function is decided per function by the approval rules."""
    if not active(user):
        return False
    return staff_member(user) or owner(user, owner_id) or approves_something()


# --- a member's agent profiles and prompts ----------------------------------------------------
def personal_changeable(user: Any, *, owner_id: int | None) -> bool:
    """Editing, sharing or deleting a member's own agent profile or prompt: its owner only (an
    admin changes agent profiles on the Agents pages, never through the member's)."""
    return owner(user, owner_id)


def personal_visible(
    user: Any,
    *,
    owner_id: int | None,
    shared_with: set[int],
    member_of: set[int],
    staff_sees_all: bool,
) -> bool:
    """May ``user`` see (and pick) a member's agent profile or prompt: its owner; a member of
    a group it is shared with (``shared_with``: those groups whose sharing an admin has not
    switched off; ``member_of``: the person's groups, Everyone included); an admin when
    ``staff_sees_all`` (agent profiles). Unshared, it is its owner's alone."""
    if not active(user):
        return False
    if owner(user, owner_id) or (staff_sees_all and staff_member(user)):
        return True
    return bool(shared_with & member_of)


# --- the one 403 shape -----------------------------------------------------------------------
def wants_json(request: HttpRequest) -> bool:
    accept = request.headers.get("Accept", "")
    return request.path.startswith(("/api/", "/v1/")) or (
        "application/json" in accept and "text/html" not in accept
    )


def forbidden(request: HttpRequest, message: str = "") -> HttpResponse:
    """The one answer to "you may not": the styled page for a browser (an htmx swap shows it
    too), the API's error JSON for scripts."""
    message = message or _("This page is for admins only.")
    if wants_json(request):
        body = {
            "error": {
                "message": message,
                "type": "permission_error",
                "code": "forbidden",
                "param": None,
            }
        }
        return JsonResponse(body, status=403)
    return render(request, "403.html", {"message": message}, status=403)


# --- view rules ------------------------------------------------------------------------------
def _marked(view: Any, rule: Rule) -> Any:
    view.access = rule
    return view


def public(why: str) -> Callable[[V], V]:
    """A view anyone may reach, with the reason (a login page, a one-time link whose token is
    the credential, a health probe, a check of its own)."""

    def mark(view: V) -> V:
        return _marked(view, Rule(PUBLIC, why))  # type: ignore[no-any-return]

    return mark


def token(why: str) -> Callable[[V], V]:
    """A view that authenticates a bearer token itself (``platform_app.api_tokens``)."""

    def mark(view: V) -> V:
        return _marked(view, Rule(TOKEN, why))  # type: ignore[no-any-return]

    return mark


def _to_login(request: HttpRequest) -> HttpResponseBase:
    # Imported here: this module is loaded before the apps (infra.metrics at settings time).
    from django.contrib.auth.views import redirect_to_login

    return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)


def signed_in(view: V) -> V:
    """Anyone signed in with an active account; others go to the login page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not active(request.user):
            return _to_login(request)
        return view(request, *args, **kwargs)

    return _marked(wrapped, Rule(SIGNED_IN))  # type: ignore[no-any-return]


def staff(view: V) -> V:
    """Admins (staff). Anonymous users go to the login page; signed-in others get the 403
    page, not a login loop."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not active(request.user):
            return _to_login(request)
        if not request.user.is_staff:
            return forbidden(request)
        return view(request, *args, **kwargs)

    return _marked(wrapped, Rule(STAFF))  # type: ignore[no-any-return]


def socket(rule: str) -> Callable[[type], type]:
    """The rule of a websocket consumer class (every frame is checked again:
    ``infra.websocket.SafeJsonConsumer``)."""
    if rule not in RULES:
        raise ValueError(f"unknown access rule {rule!r}")

    def mark(consumer: type) -> type:
        consumer.access = Rule(rule)  # type: ignore[attr-defined]
        return consumer

    return mark
