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
    operations,
    validate_document,
)
from tools_app.models import ToolSource
from tools_app.services.sources import SourceError, host_of, source_create

AUTH_TYPES = ("none", "api_key", "bearer", "basic")
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
    config = {
        "document_url": document_url,
        "document": text if len(text) <= 1_000_000 else "",
        "title": preview.title,
        "openapi": preview.version,
        "auth": {k: v for k, v in auth.items() if k in ("type", "in", "name", "username")},
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
