"""The audit export pages (staff only): list and add exporters with how far behind each is,
edit or turn one off, send a test event, and the dead letters with Retry / Discard."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from infra import access
from platform_app.audit_export import services
from platform_app.audit_export.forms import ExporterForm
from platform_app.audit_export.selectors import exporters_lag, head_seq
from platform_app.models import AuditExportDeadLetter, AuditExporter


def _exporter(exporter_id: int) -> AuditExporter:
    exporter = AuditExporter.objects.filter(pk=exporter_id).first()
    if exporter is None:
        raise Http404("no such exporter")
    return exporter


@access.staff
@require_http_methods(["GET", "POST"])
def exporter_list(request: HttpRequest) -> HttpResponse:
    form = ExporterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        exporter = services.exporter_save(
            actor=request.user,
            exporter=form.save(commit=False),
            before=None,
            secrets_changed=form.secrets_changed(),
        )
        messages.success(request, _("Exporter “%(name)s” added.") % {"name": exporter.name})
        return redirect("platform:audit-exporter", exporter_id=exporter.pk)
    context = {"lags": exporters_lag(), "form": form, "head": head_seq()}
    status = 400 if request.method == "POST" else 200
    return render(request, "platform/audit_exporters.html", context, status=status)


@access.staff
@require_http_methods(["GET", "POST"])
def exporter_detail(request: HttpRequest, exporter_id: int) -> HttpResponse:
    exporter = _exporter(exporter_id)
    before = services.exporter_state(exporter)
    form = ExporterForm(request.POST or None, instance=exporter)
    if request.method == "POST" and form.is_valid():
        services.exporter_save(
            actor=request.user,
            exporter=form.save(commit=False),
            before=before,
            secrets_changed=form.secrets_changed(),
        )
        messages.success(request, _("Saved."))
        return redirect("platform:audit-exporter", exporter_id=exporter.pk)
    exporter.refresh_from_db()
    lag = next(lag for lag in exporters_lag() if lag.exporter.pk == exporter.pk)
    context = {
        "exporter": exporter,
        "lag": lag,
        "form": form,
        "letters": exporter.dead_letters.all()[:200],
        "has_token": bool(exporter.token),
        "has_headers": bool(exporter.headers),
        "has_secret_key": bool(exporter.secret_access_key),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "platform/audit_exporter.html", context, status=status)


@access.staff
@require_POST
def exporter_action(request: HttpRequest, exporter_id: int, action: str) -> HttpResponse:
    exporter = _exporter(exporter_id)
    if action == "test":
        error = services.exporter_test(exporter, actor=request.user)
        if error:
            messages.error(
                request, _("The test event was not delivered: %(error)s") % {"error": error}
            )
        else:
            messages.success(request, _("The test event was delivered."))
    elif action == "delete":
        name = exporter.name
        services.exporter_delete(actor=request.user, exporter=exporter)
        messages.success(request, _("Exporter “%(name)s” removed.") % {"name": name})
        return redirect("platform:audit-exporters")
    else:
        raise Http404("unknown action")
    return redirect("platform:audit-exporter", exporter_id=exporter.pk)


@access.staff
@require_POST
def dead_letter_action(
    request: HttpRequest, exporter_id: int, letter_id: int, action: str
) -> HttpResponse:
    # Looked up under its exporter: an id from another exporter's page is not found.
    letter = (
        AuditExportDeadLetter.objects.select_related("exporter")
        .filter(pk=letter_id, exporter_id=exporter_id)
        .first()
    )
    if letter is None:
        raise Http404("no such dead letter")
    if action == "retry":
        error = services.dead_letter_retry(letter)
        if error:
            messages.error(
                request,
                _("Record %(seq)s was not delivered: %(error)s")
                % {"seq": letter.seq, "error": error},
            )
        else:
            messages.success(request, _("Record %(seq)s was delivered.") % {"seq": letter.seq})
    elif action == "discard":
        services.dead_letter_discard(letter, actor=request.user)
        messages.success(
            request, _("Record %(seq)s discarded: it will not be sent.") % {"seq": letter.seq}
        )
    else:
        raise Http404("unknown action")
    return redirect("platform:audit-exporter", exporter_id=exporter_id)
