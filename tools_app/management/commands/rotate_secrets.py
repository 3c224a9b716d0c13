"""Re-encrypt every stored secret with the first key of SECRETS_KEYS (key rotation)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import connection, transaction

from infra.secrets import EncryptedTextField, derived_key, new_key, rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every secret at rest with the first SECRETS_KEYS key "
        "(--new-key prints a fresh key to put first)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--new-key", action="store_true", help="Print a new key and exit.")
        parser.add_argument(
            "--derived-key",
            action="store_true",
            help="Print the key derived from the current SECRET_KEY (put it in SECRETS_KEYS "
            "before changing SECRET_KEY) and exit.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["new_key"]:
            self.stdout.write(new_key())
            return
        if options["derived_key"]:
            from django.conf import settings

            self.stdout.write(derived_key(settings.SECRET_KEY).decode("ascii"))
            return
        total = 0
        for model in apps.get_models():
            names = [f.name for f in model._meta.get_fields() if isinstance(f, EncryptedTextField)]
            if not names:
                continue
            with transaction.atomic():
                for pk, *values in _stored_values(model, names):
                    update = {n: rotate(v or "") for n, v in zip(names, values, strict=True)}
                    model._default_manager.filter(pk=pk).update(**update)
                    total += 1
        self.stdout.write(f"re-encrypted {total} row(s) with the first key")


def _stored_values(model: Any, names: list[str]) -> list[tuple[Any, ...]]:
    """(pk, *stored tokens), read with SQL: rotation needs the tokens, not the plain text."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(model._meta.get_field(n).column) for n in names)
    table = quote(model._meta.db_table)
    # Identifiers from model metadata, quoted; no values in the statement.
    sql = f"SELECT {quote(model._meta.pk.column)}, {columns} FROM {table}"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]
