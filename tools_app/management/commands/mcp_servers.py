"""Register, list, refresh and remove MCP servers; install stdio servers into their venv.

manage.py mcp_servers add NAME (--command "..." | --url URL) [--header K=V]...
manage.py mcp_servers list
manage.py mcp_servers refresh NAME
manage.py mcp_servers remove NAME
manage.py mcp_servers install PACKAGE...
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.models import ToolSource
from tools_app.services.sources import SourceError, source_delete


class Command(BaseCommand):
    help = "Manage MCP servers (tool groups whose tools come from an MCP server)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="register a server and list its tools")
        add.add_argument("name")
        where = add.add_mutually_exclusive_group(required=True)
        where.add_argument("--command", help='stdio: the command, e.g. "mcp-server-time"')
        where.add_argument("--url", help="streamable HTTP (or --transport sse) URL")
        add.add_argument("--transport", choices=["stdio", "http", "sse"], default="")
        add.add_argument(
            "--header", action="append", default=[], metavar="K=V", help="HTTP header (secret)"
        )
        add.add_argument("--bearer-env", metavar="VAR", help="read a bearer token from $VAR")
        add.add_argument("--label", default="")
        add.add_argument("--allow-private", action="store_true", help="loopback/private URL")
        add.add_argument("--sandbox", choices=["auto", "docker", "bubblewrap", "none"])
        add.add_argument("--workspace", choices=["shared", "conversation"])
        add.add_argument("--network", action="store_true", help="stdio: network access")
        add.add_argument("--no-refresh", action="store_true", help="do not list tools now")
        sub.add_parser("list", help="registered servers, their state and tools")
        refresh = sub.add_parser("refresh", help="list a server's tools again")
        refresh.add_argument("name")
        remove = sub.add_parser("remove", help="remove a server and its functions")
        remove.add_argument("name")
        install = sub.add_parser("install", help="pip install stdio servers into MCP_SERVERS_VENV")
        install.add_argument("packages", nargs="+")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except SourceError as exc:
            raise CommandError(str(exc)) from None

    def _source(self, name: str) -> ToolSource:
        source = ToolSource.objects.filter(name=name, kind=ToolSource.Kind.MCP).first()
        if source is None:
            raise CommandError(f"no MCP server named {name!r}")
        return source

    def _add(self, options: dict[str, Any]) -> None:
        from tools_app.executors.mcp.services import mcp_server_add, parse_headers

        bearer = ""
        if options["bearer_env"]:
            bearer = os.environ.get(options["bearer_env"], "")
            if not bearer:
                raise CommandError(f"${options['bearer_env']} is empty")
        settings: dict[str, Any] = {}
        if options["sandbox"]:
            settings["sandbox_backend"] = options["sandbox"]
        if options["workspace"]:
            settings["workspace"] = options["workspace"]
        if options["network"]:
            settings["network"] = True
        source = mcp_server_add(
            name=options["name"],
            command=options["command"],
            url=options["url"] or "",
            transport=options["transport"],
            headers=parse_headers(options["header"]),
            bearer=bearer,
            label=options["label"],
            allow_private=options["allow_private"],
            settings=settings,
        )
        self.stdout.write(f"registered MCP server {source.name} (group {source.group_name})")
        if not options["no_refresh"]:
            self._refresh({"name": source.name})

    def _refresh(self, options: dict[str, Any]) -> None:
        from tools_app.executors.mcp.services import mcp_refresh

        source = self._source(options["name"])
        names = mcp_refresh(source)
        self.stdout.write(f"{source.name}: {len(names)} tool(s): {', '.join(names)}")

    def _list(self, options: dict[str, Any]) -> None:
        from tools_app.services.sources import secret_summary

        sources = ToolSource.objects.filter(kind=ToolSource.Kind.MCP)
        if not sources:
            self.stdout.write("no MCP servers registered")
        for source in sources:
            config = source.config or {}
            where = " ".join(config.get("command") or []) or config.get("url", "")
            secrets = secret_summary(source)
            self.stdout.write(
                f"{source.name}\t{config.get('transport')}\t{where}\t{source.state}"
                f"\t{source.tool_count} tool(s)"
                + (f"\tsecrets: {', '.join(secrets)}" if secrets else "")
                + (f"\tlast error: {source.last_error}" if source.state == "down" else "")
            )
            for function in source.functions:
                self.stdout.write(f"  {function['name']}")

    def _remove(self, options: dict[str, Any]) -> None:
        source = self._source(options["name"])
        source_delete(source, user=None)
        self.stdout.write(f"removed MCP server {source.name}")

    def _install(self, options: dict[str, Any]) -> None:
        from tools_app.executors.mcp.launch import servers_venv
        from tools_app.executors.mcp.services import mcp_install

        mcp_install(options["packages"])
        self.stdout.write(f"installed {' '.join(options['packages'])} into {servers_venv()}")
