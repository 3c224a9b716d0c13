"""Importing an OpenAPI document as a tool group: fetch (behind the SSRF guard), preview,
create the source with the chosen operations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from tools_app.errors import ToolError
from tools_app.executors.openapi.settings import OpenApiSettings
from tools_app.executors.openapi.spec import (
    Operation,
    SpecError,
    base_url,
    load_document,
    oauth2_code_flow,
    operations,
    validate_document,
)
from tools_app.models import ToolSource
from tools_app.services.sources import SourceError, host_of, source_create

AUTH_TYPES = ("none", "api_key", "bearer", "basic", "oauth2")
# What an oauth2 source keeps of its document's authorizationCode flow (config["auth"]).
OAUTH2_KEYS = (
    "scheme",
    "authorization_url",
    "token_url",
    "refresh_url",
    "revocation_url",
    "scopes",
)
MAX_DOCUMENT_BYTES = 5_000_000


@dataclass
class Preview:
    title: str
    version: str
    base_url: str
    operations: list[Operation]
    text: str


def openapi_fetch(url: str, *, document_private: bool = False) -> str:
    """The document at ``url``; a private or loopback host only when the admin allows it
    (``document_private``: for this host, not for the API the document names)."""
    from tools_app.executors.http.client import fetch

    host = host_of(url)
    try:
        result = fetch(
            "GET",
            url,
            headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.1"},
            timeout=20.0,
            max_bytes=MAX_DOCUMENT_BYTES,
            private_allowed=[host] if document_private and host else [],
        )
    except ToolError as exc:
        raise SourceError(
            _("cannot fetch the document: %(message)s") % {"message": exc.message}
        ) from None
    if result.status >= 400:
        raise SourceError(
            _("cannot fetch the document: %(url)s answered %(status)s")
            % {"url": url, "status": result.status}
        )
    if result.text is None or result.truncated:
        raise SourceError(_("the document is not text or is larger than 5 MB"))
    return result.text


def openapi_document_preview(
    *, upload: Any = None, document_url: str = "", document_private: bool = False
) -> Preview:
    """The preview of the document an admin gave: an uploaded file (``upload``, up to 5 MB),
    else the one at ``document_url`` (fetched as ``openapi_fetch`` does)."""
    if upload:
        text = upload.read(MAX_DOCUMENT_BYTES + 1).decode("utf-8", errors="replace")
        if len(text) > MAX_DOCUMENT_BYTES:
            raise SourceError(_("the document is larger than 5 MB"))
    else:
        text = openapi_fetch(document_url, document_private=document_private)
    return openapi_preview(text, document_url=document_url)


def openapi_preview(text: str, *, document_url: str = "") -> Preview:
    try:
        doc = load_document(text)
        version = validate_document(doc)
        ops = operations(doc)
    except SpecError as exc:
        raise SourceError(str(exc)) from None
    info = doc.get("info") or {}
    return Preview(
        title=str(info.get("title") or ""),
        version=version,
        base_url=base_url(doc, document_url),
        operations=ops,
        text=text,
    )


def openapi_import(
    *,
    name: str,
    text: str,
    document_url: str = "",
    label: str = "",
    selected: list[str] | None = None,
    auth: dict[str, Any] | None = None,
    secret: str = "",
    api_private: bool = False,
    base: str = "",
    user: Any = None,
) -> ToolSource:
    """Create the source. ``selected``: operation names to import (None: every importable).
    ``api_private``: the API's host (the base URL's) may be private or loopback; whether the
    document's host was is another decision (``openapi_fetch``)."""
    preview = openapi_preview(text, document_url=document_url)
    known = {op.name: op for op in preview.operations}
    if selected is not None:
        unknown = [s for s in selected if s not in known]
        if unknown:
            raise SourceError(
                _("no such operation: %(join)s (known: %(join2)s)")
                % {"join": ", ".join(unknown), "join2": ", ".join(known)}
            )
    chosen = [
        op
        for op in preview.operations
        if (selected is None or op.name in selected) and not op.skipped
    ]
    bad = [op for op in preview.operations if selected and op.name in selected and op.skipped]
    if bad:
        raise SourceError("; ".join(f"{op.name}: {op.skipped}" for op in bad))
    if not chosen:
        raise SourceError(_("no operation selected"))
    auth = dict(auth or {"type": "none"})
    if auth.get("type", "none") not in AUTH_TYPES:
        raise SourceError(_("auth type must be one of %(join)s") % {"join": ", ".join(AUTH_TYPES)})
    if auth.get("type") == "api_key" and not str(auth.get("name") or "").strip():
        raise SourceError(_("an API key needs the header or query parameter name it goes in"))
    url = (base or preview.base_url).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise SourceError(
            _("the document names no absolute server URL; give the base URL (e.g. https://api…)")
        )
    host = host_of(url)
    settings = OpenApiSettings(
        base_url=url,
        allowed_hosts=[host],
        private_allowed=[host] if api_private else [],
    ).model_dump(mode="json")
    kept = {k: v for k, v in auth.items() if k in ("type", "in", "name", "username")}
    if auth.get("type") == "oauth2":
        kept.update(_oauth2_auth(text, document_url, chosen))
    config = {
        "document_url": document_url,
        "document": text if len(text) <= 1_000_000 else "",
        "title": preview.title,
        "openapi": preview.version,
        "auth": kept,
    }
    return source_create(
        kind=ToolSource.Kind.OPENAPI,
        name=name,
        label=label or preview.title or name,
        description=f"Operations of {preview.title or 'an API'} at {url} "
        f"(OpenAPI {preview.version}).",
        config=config,
        secrets={"value": secret} if secret else {},
        settings=settings,
        functions=[op.function() for op in chosen],
        user=user,
    )


def _oauth2_auth(text: str, document_url: str, chosen: list[Operation]) -> dict[str, Any]:
    """OAuth 2.0 for a source: the document's authorization-code flow (an OpenAPI document
    offers no discovery and no registration: its endpoints are named in it, the client is
    the admin's) and the scopes the chosen operations need (all the flow's when they name
    none)."""
    flow = oauth2_code_flow(load_document(text), document_url)
    if flow is None:
        raise SourceError(
            _(
                "OAuth 2.0 needs the document to declare an oauth2 security scheme with an "
                "authorizationCode flow (authorizationUrl, tokenUrl)"
            )
        )
    needed: list[str] = []
    for op in chosen:
        needed += [s for s in op.scopes.get(flow["scheme"], []) if s not in needed]
    return {**flow, "scopes": needed or flow["scopes"]}


def openapi_refresh(source: ToolSource, *, text: str | None = None) -> list[str]:
    """Fetch the source's document again (or read ``text``) and compare the operations with
    the pinned ones: a changed or dropped operation, and one the document did not have
    before, wait for an admin's review (tools_app.services.pins). Operations the admin left
    out at import stay out. The names of the functions offered."""
    from tools_app.models import ToolGroupConfig
    from tools_app.services.pins import source_listing_apply

    config = dict(source.config or {})
    url = str(config.get("document_url") or "")
    if text is None:
        if not url:
            raise SourceError(
                _("this document was uploaded: import it again to compare it with this one")
            )
        stored = ToolGroupConfig.objects.filter(name=source.group_name).first()
        private = (stored.settings if stored else {}).get("private_allowed") or []
        text = openapi_fetch(url, document_private=host_of(url) in private)
    preview = openapi_preview(text, document_url=url)
    before: set[str] | None = None
    if config.get("document"):
        try:
            before = {op.name for op in openapi_preview(config["document"]).operations}
        except SourceError:
            before = None
    known = {f.get("remote") or f["name"] for f in source.functions or []}
    known |= {e["remote"] for e in source.review or []}
    offered = [
        op.function()
        for op in preview.operations
        if not op.skipped and (op.name in known or (before is not None and op.name not in before))
    ]
    config.update(
        document=text if len(text) <= 1_000_000 else "",
        title=preview.title,
        openapi=preview.version,
    )
    source_listing_apply(source, offered, origin="document", config=config)
    return [f["name"] for f in source.functions]
