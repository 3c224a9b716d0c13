"""Re-encrypt every stored secret with the first key of SECRETS_KEYS (key rotation)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast

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
    """(pk, *stored tokens): each column read as plain text, not through its field (which
    would decrypt it): rotation needs the tokens, not the plain text."""
    stored = {f"stored_{name}": Cast(name, output_field=TextField()) for name in names}
    return list(model._base_manager.annotate(**stored).values_list("pk", *stored))
