"""``manage.py agents export [file]`` / ``manage.py agents import file``: agent profiles as YAML,
so a team can keep them in git."""

from __future__ import annotations

from django.core.management.base import CommandError

from chat_app.services.agents import AgentImportError, agents_export, agents_import
from infra.yaml_command import YamlFileCommand


class Command(YamlFileCommand):
    help = "Import or export agent profiles as YAML."

    def export_text(self) -> str:
        return agents_export()

    def import_text(self, source: str, path: str | None) -> str:
        notes: list[str] = []
        try:
            saved = agents_import(source, notes=notes)
        except AgentImportError as exc:
            raise CommandError(str(exc)) from exc
        for note in notes:
            self.stdout.write(f"note: {note}")
        return f"imported {len(saved)} agent(s): {', '.join(a.name for a in saved)}"
