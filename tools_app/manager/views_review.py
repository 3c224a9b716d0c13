"""The review of imported tool definitions: what a server changed, added or dropped since an
admin accepted it, with Accept / Reject per function, and the source's review choices.
Admins only (``infra.access``); thin: ``tools_app.services.pins`` decides."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from infra import access
from tools_app.manager.forms import SwitchInput
from tools_app.manager.review import rejected_items, review_history, review_items
from tools_app.models import ToolSource
from tools_app.services.pins import (
    ReviewError,
    source_review_accept_all,
    source_review_decide,
    source_review_policy_set,
)


class ReviewPolicyForm(forms.Form):
    auto_accept = forms.BooleanField(
        required=False,
        widget=SwitchInput(),
        label=gettext_lazy("Accept changes automatically"),
        help_text=gettext_lazy(
            "Changed and new definitions reach the model at once, unreviewed (each still "
            "audited with its diff). A new function named like another tool is still held."
        ),
    )
    serve_pinned = forms.BooleanField(
        required=False,
        widget=SwitchInput(),
        label=gettext_lazy("Keep serving the pinned version"),
        help_text=gettext_lazy(
            "A changed function stays callable with the definition you accepted (arguments "
            "checked against it) until you review it: for servers that accept the old "
            "arguments. Off: it is refused until reviewed."
        ),
    )


def _page(
    request: HttpRequest, source: ToolSource, form: ReviewPolicyForm | None = None
) -> HttpResponse:
    form = form or ReviewPolicyForm(
        initial={"auto_accept": source.auto_accept, "serve_pinned": source.serve_pinned}
    )
    context = {
        "source": source,
        "items": review_items(source),
        "rejected": rejected_items(source),
        "history": review_history(source),
        "form": form,
    }
    return render(request, "tools/source_review.html", context)


@access.staff
@require_GET
def source_review(request: HttpRequest, name: str) -> HttpResponse:
    return _page(request, get_object_or_404(ToolSource, name=name))


@access.staff
@require_POST
def source_review_decision(request: HttpRequest, name: str) -> HttpResponse:
    source = get_object_or_404(ToolSource, name=name)
    decision = request.POST.get("decision", "")
    try:
        if decision == "accept_all":
            done = source_review_accept_all(source, user=request.user)
            messages.success(request, _("%(count)s definition(s) accepted.") % {"count": len(done)})
        elif decision in ("accept", "reject"):
            record = source_review_decide(
                source,
                remote=request.POST.get("function", ""),
                accept=decision == "accept",
                user=request.user,
                pin=request.POST.get("pin", ""),
            )
            text = _("%(name)s: accepted.") if decision == "accept" else _("%(name)s: rejected.")
            messages.success(request, text % {"name": record.tool})
        else:
            messages.error(request, _("Choose Accept or Reject."))
    except ReviewError as exc:
        messages.error(request, str(exc))
    return redirect("tools:source_review", name=source.name)


@access.staff
@require_POST
def source_review_policy(request: HttpRequest, name: str) -> HttpResponse:
    source = get_object_or_404(ToolSource, name=name)
    form = ReviewPolicyForm(request.POST)
    if not form.is_valid():  # two checkboxes: nothing a browser sends is invalid
        return _page(request, source, form)
    source_review_policy_set(
        source,
        auto_accept=form.cleaned_data["auto_accept"],
        serve_pinned=form.cleaned_data["serve_pinned"],
        user=request.user,
    )
    messages.success(request, _("%(name)s: review choices saved.") % {"name": source.name})
    return redirect("tools:source_review", name=source.name)
