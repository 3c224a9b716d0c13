"""Personal API tokens (for /mcp/, /v1 and /api/).

manage.py api_tokens create USERNAME [--name N] [--agent AGENT] [--scope S ...]
                                     [--rate-limit N]              (prints the token once)
manage.py api_tokens list USERNAME
manage.py api_tokens revoke ID

Without --scope a token gets every scope the person may hold (SCOPES; the admin ones only
for staff).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_app.api_tokens import SCOPES, TokenError, api_token_create, api_token_revoke
from tools_app.models import ApiToken


class Command(BaseCommand):
    help = "Create, list and revoke API tokens for /mcp/, /v1 and the REST API."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print it (once)")
        create.add_argument("username")
        create.add_argument("--name", default="API client")
        create.add_argument("--agent", default="", help="agent profile whose tools it may use")
        create.add_argument(
            "--scope",
            action="append",
            choices=list(SCOPES),
            help="a scope the token gets (repeat it; default: every scope the person may hold)",
        )
        create.add_argument(
            "--rate-limit", type=int, default=None, help="requests a minute (default: the setting)"
        )
        listing = sub.add_parser("list", help="a user's tokens (never the tokens themselves)")
        listing.add_argument("username")
        revoke = sub.add_parser("revoke", help="revoke a token by id")
        revoke.add_argument("id", type=int)

    def _user(self, username: str) -> Any:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        return user

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "create":
                agent = None
                if options["agent"]:
                    from chat_app.models import Agent

                    agent = Agent.objects.filter(name=options["agent"]).first()
                    if agent is None:
                        raise CommandError(f"no agent profile named {options['agent']!r}")
                token, raw = api_token_create(
                    user=self._user(options["username"]),
                    name=options["name"],
                    agent=agent,
                    scopes=options["scope"],
                    rate_limit_per_minute=options["rate_limit"],
                )
                scopes = " ".join(token.scopes)
                self.stderr.write(f"token {token.pk} ({token.name}, scopes: {scopes}); shown once:")
                self.stdout.write(raw)
            elif options["action"] == "list":
                for token in ApiToken.objects.filter(user=self._user(options["username"])):
                    state = "revoked" if token.revoked_at else "active"
                    if token.agent_deleted and not token.revoked_at:
                        state = "unusable: its agent profile was deleted"
                    used = token.last_used_at.isoformat() if token.last_used_at else "never used"
                    scopes = ",".join(token.scopes) or "-"
                    self.stdout.write(
                        f"{token.pk}\t{token.name}\t{token.prefix}…\t{scopes}\t{state}\t{used}"
                    )
            else:
                token = api_token_revoke(token_id=options["id"])
                self.stdout.write(f"revoked token {token.pk} ({token.name})")
        except TokenError as exc:
            raise CommandError(str(exc)) from None
