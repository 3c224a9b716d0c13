"""``manage.py access export [file]`` / ``manage.py access import file``: groups, members,
grants and approval modes as YAML, so a team can keep who may use what in git."""

from __future__ import annotations

from django.core.management.base import CommandError

from infra.yaml_command import YamlFileCommand
from platform_app.people.access import AccessImportError, access_export, access_import


class Command(YamlFileCommand):
    help = "Import or export groups, members, grants and approval modes as YAML."

    def export_text(self) -> str:
        return access_export()

    def import_text(self, source: str, path: str | None) -> str:
        try:
            summary = access_import(source)
        except AccessImportError as exc:
            raise CommandError(f"{path or 'stdin'}: {exc}; nothing was imported") from exc
        return (
            f"imported {len(summary.groups)} group(s) and {len(summary.approvals)} approval "
            f"setting(s): {', '.join(summary.groups + summary.approvals) or 'nothing'}"
        )
