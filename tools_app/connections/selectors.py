"""Reads for the Connections page: a person's connections and the per-person sources they may
connect (those granted to them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools_app.connections.models import SourceConnection
from tools_app.connections.services import source_is_personal, source_person_kind
from tools_app.models import ToolSource
from tools_app.services.source_env import person_env_names


@dataclass
class Row:
    source: ToolSource
    kind: str  # oauth | api_key
    connection: SourceConnection | None
    key_name: str = ""  # an API key's header or parameter (for the form's label)
    variables: tuple[str, ...] = ()  # a stdio server's per-person variables (env)

    @property
    def connected(self) -> bool:
        return (
            self.connection is not None and self.connection.state == SourceConnection.State.ACTIVE
        )


def _granted(user: Any, source: ToolSource) -> bool:
    from tools_app.services.grants import may_use

    if user.is_staff:
        return True
    return any(may_use(user.pk, f["name"]) for f in source.functions or [])


def connection_rows(user: Any) -> list[Row]:
    """Every per-person source the person may use, with their connection (or none), and any
    connection of theirs to a source no longer granted (to disconnect it)."""
    mine = {
        c.source_id: c for c in SourceConnection.objects.filter(user=user).select_related("source")
    }
    rows: list[Row] = []
    for source in ToolSource.objects.order_by("label", "name"):
        connection = mine.get(source.pk)
        if not source_is_personal(source) and connection is None:
            continue
        if connection is None and not _granted(user, source):
            continue
        auth = (source.config or {}).get("auth") or {}
        rows.append(
            Row(
                source=source,
                kind=source_person_kind(source),
                connection=connection,
                key_name=str(auth.get("name") or ""),
                variables=tuple(person_env_names(source.config or {})),
            )
        )
    return rows


def connection_row(user: Any, name: str) -> Row | None:
    return next((r for r in connection_rows(user) if r.source.name == name), None)
