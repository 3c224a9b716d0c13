"""Personal API tokens for MCP clients.

manage.py api_tokens create USERNAME [--name N] [--agent AGENT]   (prints the token once)
manage.py api_tokens list USERNAME
manage.py api_tokens revoke ID
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_app.api_tokens import TokenError, api_token_create, api_token_revoke
from tools_app.models import ApiToken


class Command(BaseCommand):
    help = "Create, list and revoke API tokens for the /mcp/ endpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print it (once)")
        create.add_argument("username")
        create.add_argument("--name", default="MCP client")
        create.add_argument("--agent", default="", help="agent profile whose tools it may use")
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
                    user=self._user(options["username"]), name=options["name"], agent=agent
                )
                self.stderr.write(f"token {token.pk} ({token.name}); shown once:")
                self.stdout.write(raw)
            elif options["action"] == "list":
                for token in ApiToken.objects.filter(user=self._user(options["username"])):
                    state = "revoked" if token.revoked_at else "active"
                    if token.agent_deleted and not token.revoked_at:
                        state = "unusable: its agent profile was deleted"
                    used = token.last_used_at.isoformat() if token.last_used_at else "never used"
                    self.stdout.write(f"{token.pk}\t{token.name}\t{token.prefix}…\t{state}\t{used}")
            else:
                token = api_token_revoke(token_id=options["id"])
                self.stdout.write(f"revoked token {token.pk} ({token.name})")
        except TokenError as exc:
            raise CommandError(str(exc)) from None
