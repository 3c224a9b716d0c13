"""``manage.py audit verify|export|public-key|seal|checkpoint|prune``: the audit chain from the
command line (docs/SECURITY_TEAMS.md). ``verify --file F --public-key K`` reads no database:
it checks an exported file anywhere a checkout of the project is."""

from __future__ import annotations

import sys
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime


def _when(text: str) -> Any:
    """``7d``, ``12h``, ``30m`` ago, or an ISO date/time."""
    text = text.strip()
    units = {"d": "days", "h": "hours", "m": "minutes"}
    if text[-1:] in units and text[:-1].isdigit():
        return timezone.now() - timedelta(**{units[text[-1]]: int(text[:-1])})
    value = parse_datetime(text) or parse_datetime(f"{text}T00:00:00")
    if value is None:
        raise CommandError(f"not a time: {text!r} (7d, 12h, 30m, or 2026-11-01[T10:00:00])")
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


class Command(BaseCommand):
    help = "Verify, export, seal and prune the hash-chained audit log."

    def add_arguments(self, parser: Any) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        verify = sub.add_parser("verify", help="Check the chain and its signed checkpoints.")
        verify.add_argument("--file", help="An exported JSONL file instead of the database.")
        verify.add_argument(
            "--public-key",
            action="append",
            default=[],
            help="PEM file of a public key the checkpoints may be signed with (repeatable); "
            "with --file it is required, from the database the deployment's own key is used.",
        )
        export = sub.add_parser("export", help="Write the chain as JSONL that verifies alone.")
        export.add_argument("file", help="Where to write ('-': standard output).")
        export.add_argument("--since", help="Start at the checkpoint before this time (7d, ISO).")
        sub.add_parser("public-key", help="Print the audit signing key's public half (PEM).")
        sub.add_parser("seal", help="Link finished records into the chain now.")
        sub.add_parser("checkpoint", help="Seal, then sign the chain's head now.")
        prune = sub.add_parser("prune", help="Delete records older than a time, signed cut.")
        prune.add_argument("--before", required=True, help="7d, 90d, or an ISO date.")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, "_" + options["action"].replace("-", "_"))(options)

    def _verify(self, options: dict[str, Any]) -> None:
        from infra.audit_chain import load_public_keys, verify_lines

        keys = load_public_keys(Path(p).read_bytes() for p in options["public_key"])
        if options["file"]:
            if not keys:
                raise CommandError("--public-key is required with --file")
            with open(options["file"], encoding="utf-8") as lines:
                try:
                    report = verify_lines(lines, keys)
                except ValueError as exc:
                    raise CommandError(str(exc)) from exc
        else:
            from tools_app.services.audit_chain import verify_database

            report = verify_database(extra_keys=keys)
        for note in report.notes:
            self.stdout.write(f"note: {note}")
        if not report.ok:
            self.stderr.write(f"FAILED: {report.problems[0]}")
            for problem in report.problems[1:20]:
                self.stderr.write(f"  also: {problem}")
            if len(report.problems) > 20:
                self.stderr.write(f"  … and {len(report.problems) - 20} more")
            sys.exit(1)
        span = f"seq {report.first_seq}–{report.last_seq}" if report.records else "no records"
        self.stdout.write(
            f"OK: {report.records} records ({span}), {report.checkpoints} signed checkpoints; "
            f"signed through seq {report.signed_through or 0}"
        )

    def _export(self, options: dict[str, Any]) -> None:
        from tools_app.services.audit_chain import export_lines

        since = _when(options["since"]) if options["since"] else None
        out = sys.stdout if options["file"] == "-" else open(options["file"], "w", encoding="utf-8")  # noqa: SIM115
        count = 0
        try:
            for line in export_lines(since=since):
                out.write(line + "\n")
                count += 1
        finally:
            if out is not sys.stdout:
                out.close()
        if out is not sys.stdout:
            self.stdout.write(f"wrote {count} lines to {options['file']}")

    def _public_key(self, options: dict[str, Any]) -> None:
        from tools_app.services.audit_chain import public_key_pem

        self.stdout.write(public_key_pem().decode().rstrip())

    def _seal(self, options: dict[str, Any]) -> None:
        from tools_app.services.audit_chain import seal

        self.stdout.write(f"sealed {seal()} records")

    def _checkpoint(self, options: dict[str, Any]) -> None:
        from tools_app.services.audit_chain import checkpoint_now

        cp = checkpoint_now()
        self.stdout.write(f"signed checkpoint at seq {cp.seq}" if cp else "the chain is empty")

    def _prune(self, options: dict[str, Any]) -> None:
        from tools_app.services.audit_chain import retention_cut

        cut = retention_cut(before=_when(options["before"]))
        self.stdout.write(
            f"deleted {cut.deleted} records through seq {cut.seq} behind a signed retention "
            "checkpoint"
            if cut.seq
            else "nothing to delete"
        )
