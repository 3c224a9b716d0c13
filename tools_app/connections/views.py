"""The Connections page (a person's own accounts at per-person sources), the connect flow's two
ends, and the admin's credentials form of a source. Thin: services decide."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from infra import access
from tools_app.connections import selectors, services
from tools_app.connections.forms import ApiKeyForm, SourceCredentialsForm
from tools_app.models import ToolSource


def _safe_next(request: HttpRequest, value: str) -> str:
    if value and url_has_allowed_host_and_scheme(
        value, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return value
    return ""


def callback_uri(request: HttpRequest) -> str:
    """Our own callback, built from the request (the proxy settings decide scheme and host)."""
    return request.build_absolute_uri(reverse("connections:callback"))


@access.signed_in
@never_cache
@require_GET
def connections_page(request: HttpRequest) -> HttpResponse:
    rows = selectors.connection_rows(request.user)
    return render(
        request,
        "connections/connections.html",
        {"rows": rows, "key_form": ApiKeyForm(), "callback": callback_uri(request)},
    )


@access.signed_in
@require_GET
def connect(request: HttpRequest, name: str) -> HttpResponse:
    """Start connecting: to the authorization server (OAuth), or to the key form (API key)."""
    row = selectors.connection_row(request.user, name)
    if row is None or not services.source_is_personal(row.source):
        raise Http404("no such source to connect")
    next_url = _safe_next(request, request.GET.get("next", ""))
    if row.kind != "oauth":
        return redirect(f"{reverse('connections:page')}#source-{name}")
    try:
        url = services.connect_start(
            user=request.user,
            session_key=request.session.session_key or "",
            source=row.source,
            redirect_uri=callback_uri(request),
            next_url=next_url,
        )
    except services.ConnectError as exc:
        messages.error(
            request,
            _("Cannot connect %(label)s: %(error)s") % {"label": row.source.label, "error": exc},
        )
        return redirect("connections:page")
    return redirect(url)


@access.signed_in
@never_cache
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    """The authorization server sends the person back here."""
    names = ("state", "code", "error", "error_description", "iss")
    params = {k: request.GET[k] for k in names if k in request.GET}
    try:
        finished = services.connect_finish(
            user=request.user, session_key=request.session.session_key or "", params=params
        )
    except services.ConnectError as exc:
        messages.error(request, str(exc))
        return redirect("connections:page")
    connection = finished.connection
    assert connection is not None
    back = _safe_next(request, finished.next_url)
    if back:  # the conversation: its card's Retry runs the call
        return redirect(back)
    messages.success(
        request,
        _("%(label)s connected as %(account)s.")
        % {"label": connection.source.label, "account": connection.account},
    )
    return redirect("connections:page")


@access.signed_in
@require_POST
def api_key(request: HttpRequest, name: str) -> HttpResponse:
    row = selectors.connection_row(request.user, name)
    if row is None or row.kind != "api_key" or not services.source_is_personal(row.source):
        raise Http404("no such source to connect")
    form = ApiKeyForm(request.POST)
    if form.is_valid():
        try:
            services.api_key_set(
                user=request.user,
                source=row.source,
                value=form.cleaned_data["api_key"],
                account=form.cleaned_data["account"],
            )
        except services.ConnectError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, _("%(label)s: your key is saved.") % {"label": row.source.label}
            )
    else:
        messages.error(request, _("Enter your key."))
    return redirect("connections:page")


@access.signed_in
@require_POST
def person_env(request: HttpRequest, name: str) -> HttpResponse:
    """A person's own values of a stdio server's per-person variables (write-only)."""
    row = selectors.connection_row(request.user, name)
    if row is None or row.kind != "env" or not services.source_is_personal(row.source):
        raise Http404("no such source to connect")
    values = {n: request.POST.get(f"env__{n}", "") for n in row.variables}
    try:
        services.person_env_set(user=request.user, source=row.source, values=values)
    except services.ConnectError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, _("%(label)s: your values are saved.") % {"label": row.source.label}
        )
    return redirect("connections:page")


@access.signed_in
@require_POST
def disconnect(request: HttpRequest, connection_id: int) -> HttpResponse:
    try:
        connection = services.connection_disconnect(user=request.user, connection_id=connection_id)
    except services.ConnectError as exc:
        raise Http404(str(exc)) from None
    messages.success(
        request,
        _("%(label)s disconnected (%(account)s).")
        % {"label": connection.source.label, "account": connection.account},
    )
    return redirect("connections:page")


@access.staff
@require_http_methods(["GET", "POST"])
def source_credentials(request: HttpRequest, name: str) -> HttpResponse:
    """An admin's choice: how the source authenticates (none, shared, per person)."""
    from tools_app.services.sources import SourceError

    source = get_object_or_404(ToolSource, name=name)
    oauth = dict((source.config or {}).get("oauth") or {})
    initial = {"credentials": services.source_credentials(source), **oauth}
    form = SourceCredentialsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.source_credentials_set(
                source=source,
                mode=data["credentials"],
                user=request.user,
                client_id=data["client_id"],
                client_secret=data["client_secret"],
                scopes=data["scopes"],
                issuer=data["issuer"] or "",
                client_auth_method=data.get("client_auth_method") or "",
            )
        except SourceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("%(name)s: credentials saved.") % {"name": source.label})
            return redirect("connections:source-credentials", name=source.name)
    context = {
        "source": source,
        "credentials_form": form,
        "callback": callback_uri(request),
        "people": source.connections.count(),
    }
    return render(request, "connections/source_credentials.html", context)
