"""Pinned definitions of imported functions, and the review of what a server changes.

A function an admin accepted is stored in ``ToolSource.functions`` with ``pin``: the sha256
of its canonical definition (the server's name, description, input schema, annotations, and
for an OpenAPI operation where the call goes). That stored copy is what the model is offered
and what arguments are checked against. Creating a source accepts what it lists at that moment
(an MCP server: its first listing).

Each later listing (a refresh, ``notifications/tools/list_changed``, an OpenAPI document
fetched again) is compared by pin, function by function; what differs waits in
``ToolSource.review`` for an admin:

- **new**: not registered at all, so offered nowhere; binding refuses it by name;
- **changed**: the pinned copy stays what the model sees; binding refuses it until reviewed,
  unless the source *keeps serving the pinned version* (``serve_pinned``);
- **gone**: no longer registered; binding says the server no longer offers it.

Accept re-pins (or drops a gone function); Reject keeps the pinned copy (a change), keeps a new
function out, or drops a gone one; a rejected definition is remembered by its pin and not
raised again (a different one is). ``auto_accept`` accepts at once, except a new function
whose name shadows another tool's. Every detection and decision is an audit record of kind
*tool definition* with the diff, and a webhook event (``tools_app.signals``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from tools_app.models import AuditRecord, ToolSource
from tools_app.services.audit import audit_settings_change
from tools_app.signals import definition_changed, definition_reviewed, notify

PENDING = ("new", "changed", "gone")
REJECTED = "rejected"
# What else of a function decides what a call does, per kind (an OpenAPI operation's method,
# path and parameters: a changed path sends the same arguments somewhere else).
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "openapi": ("method", "path", "params", "body"),
    "schema": ("bind", "output_schema"),
}
DIFF_CAP = 20_000  # characters of each diff kept in an audit record


class ReviewError(ValueError):
    """A decision that cannot be applied as asked (words for the admin)."""


# --- pins --------------------------------------------------------------------------------------
def definition(function: dict[str, Any], kind: str) -> dict[str, Any]:
    """The part of a stored function that is pinned (everything the model or the call uses)."""
    out: dict[str, Any] = {
        "name": function.get("remote") or function.get("name") or "",
        "description": function.get("description") or "",
        "input_schema": function.get("input_schema") or {},
    }
    if function.get("annotations"):
        out["annotations"] = function["annotations"]
    for key in KIND_FIELDS.get(kind, ()):
        if key in function:
            out[key] = function[key]
    return out


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def definition_pin(function: dict[str, Any], kind: str) -> str:
    return hashlib.sha256(canonical_json(definition(function, kind)).encode("utf-8")).hexdigest()


def pinned(functions: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``functions`` each with its pin (what ``source_create`` stores when a source is made)."""
    return [{**f, "pin": definition_pin(f, kind)} for f in functions]


# --- diffs -------------------------------------------------------------------------------------
def _text_lines(text: str) -> list[str]:
    # Descriptions are often one long line: wrapped, a changed sentence shows as itself.
    lines: list[str] = []
    for line in (text or "").splitlines() or [""]:
        lines.extend(textwrap.wrap(line, width=88, break_on_hyphens=False) or [""])
    return lines


def _rest(function: dict[str, Any] | None, kind: str) -> list[str]:
    if function is None:
        return []
    rest = {k: v for k, v in definition(function, kind).items() if k not in ("description",)}
    return json.dumps(rest, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def definition_diff(
    before: dict[str, Any] | None, after: dict[str, Any] | None, kind: str
) -> dict[str, str]:
    """Unified diffs (difflib) of the description and of the rest (schema, annotations…),
    pinned → offered; an empty string where nothing differs."""

    def unified(a: list[str], b: list[str]) -> str:
        text = "\n".join(difflib.unified_diff(a, b, "pinned", "offered", lineterm="", n=3))
        return text[:DIFF_CAP]

    before_text = _text_lines(before.get("description", "")) if before else []
    after_text = _text_lines(after.get("description", "")) if after else []
    return {
        "description": unified(before_text, after_text),
        "schema": unified(_rest(before, kind), _rest(after, kind)),
    }


# --- names and shadows -------------------------------------------------------------------------
def functions_named(
    source: ToolSource,
    offered: list[dict[str, Any]],
    review: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Our tool name for each offered function: the one it has (pinned, or pending in
    ``review``), else the remote name when free, else prefixed
    (``tools_app.imported.assign_names``)."""
    from tools_app import selectors
    from tools_app.imported import assign_names

    previous = {f.get("remote") or f["name"]: f["name"] for f in source.functions or []}
    previous.update({e["remote"]: e["name"] for e in review if e.get("name")})
    remotes = [f.get("remote") or f["name"] for f in offered]
    # Names of functions that are held (pending, gone) are kept clear too.
    names = assign_names(
        source.name, remotes, previous=previous, tools=selectors.registered_tools()
    )
    return [
        {**f, "remote": f.get("remote") or f["name"], "name": names[r]}
        for f, r in zip(offered, remotes, strict=True)
    ]


def shadowed_name(source: ToolSource, remote: str) -> str:
    """The tool a function's remote name would shadow — a built-in tool or another source's
    function, pinned or pending — or ""."""
    from tools_app import selectors
    from tools_app.imported import ImportedTool

    tool = selectors.registered_tools().get(remote)
    if tool is not None and not (
        isinstance(tool, type)
        and issubclass(tool, ImportedTool)
        and tool.source_name == source.name
    ):
        return remote
    for other in ToolSource.objects.exclude(pk=source.pk).only("functions", "review"):
        names = {f.get("name") for f in other.functions or []}
        names |= {f.get("remote") for f in other.functions or []}
        names |= {e.get("name") for e in other.review or []}
        if remote in names:
            return remote
    return ""


# --- detection ---------------------------------------------------------------------------------
@dataclass
class Listing:
    """What a listing changed: the audit records written (detections, automatic accepts)."""

    first: bool = False
    records: list[AuditRecord] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.first or bool(self.records)


def source_listing_apply(
    source: ToolSource,
    offered: list[dict[str, Any]],
    *,
    origin: str,
    config: dict[str, Any] | None = None,
) -> Listing:
    """Compare what the server lists now (``offered``, functions as discovered) with the
    pinned copies and hold what differs for review. ``origin``: what listed it (refresh,
    list_changed, document). ``config``: a new config to store with it (an OpenAPI source's
    document). Runs with the source row locked: two processes told of the same change write
    one detection."""
    listing = Listing()
    kind = source.kind
    with transaction.atomic():
        locked = ToolSource.objects.select_for_update().get(pk=source.pk)
        now = timezone.now()
        review = [dict(e) for e in locked.review or []]
        named = [
            {**f, "pin": definition_pin(f, kind)} for f in functions_named(locked, offered, review)
        ]
        if locked.pinned_at is None:  # the first listing of a new source: accepted as it is
            functions, review, listing.first = named, [], True
            listing.records.append(
                _audit(
                    locked,
                    status="pinned",
                    user=locked.created_by,
                    detail={"functions": [f["name"] for f in named], "origin": origin},
                )
            )
        else:
            functions, review = _compare(locked, named, review, origin, listing, now)
        fields: dict[str, Any] = {"refreshed_at": now}
        if config is not None and config != locked.config:
            fields["config"] = config
        if listing.changed or functions != locked.functions or review != locked.review:
            fields.update(functions=functions, review=review, revision=F("revision") + 1)
            if locked.pinned_at is None:
                fields["pinned_at"] = now
        ToolSource.objects.filter(pk=locked.pk).update(**fields)
        for record in listing.records:
            if record.status != "pinned":
                transaction.on_commit(partial(_notify_changed, record))
    source.refresh_from_db()
    return listing


def _compare(
    source: ToolSource,
    named: list[dict[str, Any]],
    review: list[dict[str, Any]],
    origin: str,
    listing: Listing,
    now: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    kind = source.kind
    functions = [dict(f) for f in source.functions or []]
    pinned_by = {f.get("remote") or f["name"]: f for f in functions}
    entries = {e["remote"]: e for e in review}
    offered_remotes = {f["remote"] for f in named}
    kept: dict[str, dict[str, Any]] = {}

    def held(status: str, fn: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        remote = (fn or old or {}).get("remote") or (fn or old or {})["name"]
        name = (old or fn or {})["name"]
        shadow = shadowed_name(source, remote) if status == "new" else ""
        diff = definition_diff(old, fn, kind)
        if source.auto_accept and not shadow:
            if status == "gone":
                functions.remove(old)  # type: ignore[arg-type]
            elif old is not None:
                functions[functions.index(old)] = fn  # type: ignore[assignment]
            else:
                functions.append(fn)  # type: ignore[arg-type]
            listing.records.append(
                _audit(
                    source,
                    status="auto-accepted",
                    name=name,
                    detail=_detail(remote, status, old, fn, diff, origin),
                )
            )
            return
        record = _audit(
            source,
            status=status,
            name=name,
            detail={**_detail(remote, status, old, fn, diff, origin), "shadows": shadow},
        )
        listing.records.append(record)
        kept[remote] = {
            "remote": remote,
            "name": name,
            "status": status,
            "offered": fn,
            "offered_pin": fn["pin"] if fn else "",
            "pinned_pin": old.get("pin", "") if old else "",
            "shadows": shadow,
            "detected_at": now.isoformat(),
            "audit_id": record.pk,
        }

    for fn in named:
        remote = fn["remote"]
        old = pinned_by.get(remote)
        if old is not None and old.get("pin") == fn["pin"]:
            continue  # in step (a pending change the server took back is dropped)
        before = entries.get(remote)
        if before is not None and before.get("offered_pin") == fn["pin"]:
            kept[remote] = before  # already held, or rejected: nothing new to say
            continue
        held("changed" if old is not None else "new", fn, old)
    for remote, old in pinned_by.items():
        if remote in offered_remotes:
            continue
        before = entries.get(remote)
        if before is not None and before.get("status") == "gone":
            kept[remote] = before
            continue
        held("gone", None, old)
    # Held functions the server no longer lists (a new one withdrawn) simply leave the review.
    return functions, [kept[r] for r in sorted(kept)]


def _detail(
    remote: str,
    status: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    diff: dict[str, str],
    origin: str,
) -> dict[str, Any]:
    return {
        "remote": remote,
        "change": status,
        "origin": origin,
        "pinned_pin": (old or {}).get("pin", ""),
        "offered_pin": (new or {}).get("pin", ""),
        "diff": diff,
    }


def _audit(
    source: ToolSource,
    *,
    status: str,
    detail: dict[str, Any],
    name: str = "",
    user: Any = None,
) -> AuditRecord:
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.DEFINITION,
        user=user if getattr(user, "pk", None) else None,
        username=getattr(user, "username", "") or "",
        group=source.group_name,
        tool=name[:64],
        status=status,
        detail={"source": f"{source.kind}:{source.name}", **detail},
    )


def _event_data(record: AuditRecord) -> dict[str, Any]:
    return {
        "source": record.detail.get("source", ""),
        "group": record.group,
        "function": record.tool,
        "remote": record.detail.get("remote", ""),
        "change": record.detail.get("change", ""),
        "status": record.status,
        "pinned_pin": record.detail.get("pinned_pin", ""),
        "offered_pin": record.detail.get("offered_pin", ""),
        "audit_record_id": record.pk,
        "user": record.username,
    }


def _notify_changed(record: AuditRecord) -> None:
    notify(definition_changed, data=_event_data(record))


def _notify_reviewed(record: AuditRecord) -> None:
    notify(definition_reviewed, data=_event_data(record))


# --- decisions ---------------------------------------------------------------------------------
def source_review_decide(
    source: ToolSource, *, remote: str, accept: bool, user: Any, pin: str | None = None
) -> AuditRecord:
    """Accept or reject one held function. ``pin``: the offered pin the admin looked at; a
    definition that changed again since is refused (review it again), never accepted unseen."""
    with transaction.atomic():
        locked = ToolSource.objects.select_for_update().get(pk=source.pk)
        review = [dict(e) for e in locked.review or []]
        entry = next((e for e in review if e["remote"] == remote and e["status"] in PENDING), None)
        if entry is None:
            raise ReviewError(_("%(name)s has nothing waiting for review") % {"name": remote})
        if pin is not None and pin != entry.get("offered_pin", ""):
            raise ReviewError(
                _(
                    "the definition of %(name)s changed again since the page was shown; "
                    "review it again"
                )
                % {"name": entry["name"]}
            )
        functions = [dict(f) for f in locked.functions or []]
        old = next((f for f in functions if (f.get("remote") or f["name"]) == remote), None)
        status = entry["status"]
        review.remove(entry)
        if status == "gone":  # accepted or rejected, a function the server dropped goes
            if old is not None:
                functions.remove(old)
        elif accept:
            if old is not None:
                functions[functions.index(old)] = entry["offered"]
            else:
                functions.append(entry["offered"])
        else:  # remembered, so the same definition is not raised again
            review.append(
                {
                    "remote": remote,
                    "name": entry["name"],
                    "status": REJECTED,
                    "was": status,
                    "offered_pin": entry.get("offered_pin", ""),
                    "decided_at": timezone.now().isoformat(),
                }
            )
        decision = "accepted" if accept else "rejected"
        record = _audit(
            locked,
            status=decision,
            name=entry["name"],
            user=user,
            detail=_detail(
                remote,
                status,
                old,
                entry.get("offered"),
                definition_diff(old, entry.get("offered"), locked.kind),
                "review",
            ),
        )
        review.sort(key=lambda e: e["remote"])
        ToolSource.objects.filter(pk=locked.pk).update(
            functions=functions, review=review, revision=F("revision") + 1
        )
        transaction.on_commit(partial(_notify_reviewed, record))
    source.refresh_from_db()
    return record


def source_review_accept_all(source: ToolSource, *, user: Any) -> list[AuditRecord]:
    """Accept every held function (one audit record each)."""
    source.refresh_from_db()
    return [
        source_review_decide(source, remote=e["remote"], accept=True, user=user)
        for e in list(source.review or [])
        if e["status"] in PENDING
    ]


def source_review_policy_set(
    source: ToolSource, *, auto_accept: bool, serve_pinned: bool, user: Any
) -> None:
    """The source's review choices (an admin's explicit ones), audited as a settings change.
    Turning auto-accept on accepts nothing already held: it applies from the next listing."""
    before = {"auto_accept": source.auto_accept, "serve_pinned": source.serve_pinned}
    after = {"auto_accept": auto_accept, "serve_pinned": serve_pinned}
    if before == after:
        return
    with transaction.atomic():
        ToolSource.objects.filter(pk=source.pk).update(
            auto_accept=auto_accept, serve_pinned=serve_pinned, revision=F("revision") + 1
        )
        audit_settings_change(user=user, group=source.group_name, before=before, after=after)
    source.refresh_from_db()


def pending(source: ToolSource) -> list[dict[str, Any]]:
    return [e for e in source.review or [] if e.get("status") in PENDING]
