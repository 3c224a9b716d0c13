"""The Policy page (staff only), under /people/policy/: paste or upload a candidate access
YAML, see the replay of the last days' calls under it before anything changes, then apply it
or run it as the shadow policy. Services in ``platform_app.people.policy``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from infra import access
from platform_app.people import policy
from platform_app.people.access import access_export

DAYS_DEFAULT, DAYS_MAX = 7, 90
LISTED = 200  # changed calls shown on the page


def _days(request: HttpRequest) -> int:
    try:
        days = int(request.POST.get("days") or request.GET.get("days") or DAYS_DEFAULT)
    except ValueError:
        return DAYS_DEFAULT
    return min(max(days, 1), DAYS_MAX)


def _posted_text(request: HttpRequest) -> str:
    """The candidate: an uploaded file wins over the text box."""
    upload = request.FILES.get("file")
    if upload is not None:
        if upload.size and upload.size > policy.MAX_POLICY_CHARS * 4:
            raise policy.PolicyError(_("the file is too large"))
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise policy.PolicyError(_("the file is not UTF-8 text")) from exc
    return request.POST.get("policy", "")


def _verdict_words() -> dict[str, str]:
    return {
        "allowed": _("allowed"),
        "approval": _("approval"),
        "denied": _("denied"),
        "failed": _("failed"),
    }


def _rows(counts: dict[str, int]) -> list[dict[str, Any]]:
    """ "live→candidate" → n as rows: both verdicts (word and key) and the count."""
    words = _verdict_words()
    rows = []
    for transition, count in counts.items():
        before, _sep, after = transition.partition("→")
        rows.append(
            {
                "before": before,
                "after": after,
                "before_word": words.get(before, before),
                "after_word": words.get(after, after),
                "count": count,
                "same": before == after,
            }
        )
    return rows


def _groupings(replay: Any) -> list[dict[str, Any]]:
    return [
        {"title": title, "rows": [(key, _rows(counts)) for key, counts in sorted(table.items())]}
        for title, table in (
            (_("By person"), replay.by_person),
            (_("By group"), replay.by_group),
            (_("By function"), replay.by_function),
        )
    ]


def _page(
    request: HttpRequest,
    *,
    text: str,
    days: int,
    replay: Any = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    shadow, counts = policy.shadow_status()
    context = {
        "text": text,
        "days": days,
        "replay": replay,
        "changed": replay.changed if replay else [],
        "transitions": _rows(replay.transitions) if replay else [],
        "groupings": _groupings(replay) if replay else [],
        "words": _verdict_words(),
        "error": error,
        "shadow": shadow,
        "shadow_counts": _rows(counts),
        "shadow_total": sum(counts.values()),
        "shadow_differs": sum(n for t, n in counts.items() if t.split("→")[0] != t.split("→")[1]),
        "listed": LISTED,
    }
    return render(request, "people/policy.html", context, status=status)


@access.staff
@require_http_methods(["GET", "POST"])
def policy_page(request: HttpRequest) -> HttpResponse:
    """GET: the live policy in the box. POST: the replay of the candidate (nothing changes)."""
    days = _days(request)
    if request.method == "GET":
        return _page(request, text=access_export(), days=days)
    try:
        text = _posted_text(request)
        replay = policy.replay_text(
            text, since=timezone.now() - timedelta(days=days), listed=LISTED
        )
    except policy.PolicyError as exc:
        return _page(
            request, text=request.POST.get("policy", ""), days=days, error=str(exc), status=400
        )
    return _page(request, text=text, days=days, replay=replay)


@access.staff
@require_POST
def policy_apply(request: HttpRequest) -> HttpResponse:
    text = request.POST.get("policy", "")
    try:
        summary = policy.policy_apply(text=text, actor=request.user)
    except policy.PolicyError as exc:
        return _page(request, text=text, days=_days(request), error=str(exc), status=400)
    messages.success(
        request,
        _("Applied: %(groups)d group(s) and %(approvals)d approval rule(s).")
        % {"groups": len(summary.groups), "approvals": len(summary.approvals)},
    )
    if summary.shadow:
        messages.info(
            request,
            _("Left out, marked shadow: %(names)s.") % {"names": ", ".join(summary.shadow)},
        )
    return redirect("people:policy")


@access.staff
@require_POST
def policy_shadow(request: HttpRequest) -> HttpResponse:
    text = request.POST.get("policy", "")
    try:
        shadow = policy.shadow_start(
            text=text, name=request.POST.get("name", ""), actor=request.user
        )
    except policy.PolicyError as exc:
        return _page(request, text=text, days=_days(request), error=str(exc), status=400)
    messages.success(
        request,
        _("“%(name)s” runs as the shadow policy: decided beside the live one, never enforced.")
        % {"name": shadow.name},
    )
    return redirect("people:policy")


@access.staff
@require_POST
def policy_shadow_stop(request: HttpRequest) -> HttpResponse:
    stopped = policy.shadow_stop(actor=request.user)
    if stopped is not None:
        messages.success(
            request, _("The shadow policy “%(name)s” stopped.") % {"name": stopped.name}
        )
    return redirect("people:policy")
