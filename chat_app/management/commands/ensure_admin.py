"""Create the first admin once: from DJANGO_SUPERUSER_USERNAME/PASSWORD when set, otherwise
with a generated password printed once."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from infra.env import envstr


class Command(BaseCommand):
    help = "Create the first admin user if there is none."

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username = envstr("DJANGO_SUPERUSER_USERNAME", "admin")
        password = envstr("DJANGO_SUPERUSER_PASSWORD")
        existing = User.objects.filter(username=username).first()
        if existing is not None:
            if password and not existing.check_password(password):
                existing.set_password(password)
                existing.save(update_fields=["password"])
                self.stdout.write(
                    f"Updated the password of admin {username!r} from the environment."
                )
            return
        if User.objects.filter(is_superuser=True).exists() and not password:
            return
        generated = not password
        password = password or secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"\n  Created admin user {username!r} with password: {password}\n"
                    "  (shown once — change it under /admin/)\n"
                )
            )
        else:
            self.stdout.write(f"Created admin user {username!r} from the environment.")
