"""Register, list, refresh and remove MCP servers; install stdio servers into their venv.

manage.py mcp_servers add NAME (--command "..." | --url URL) [--header K=V]...
    [--env NAME]... [--env-file FILE] [--plain-env NAME=VALUE]... [--person-env NAME]...
manage.py mcp_servers env NAME [--env NAME]... [--env-file FILE] [--plain-env NAME=VALUE]...
    [--person-env NAME]...
    [--unset NAME]...
manage.py mcp_servers list
manage.py mcp_servers refresh NAME
manage.py mcp_servers remove NAME
manage.py mcp_servers install PACKAGE...

A secret variable's value never comes from the command line, where ``ps`` and the shell's
history show it: ``--env NAME`` asks for it (no echo), or reads one line per ``--env`` from
stdin when stdin is not a terminal; ``--env-file`` reads ``NAME=value`` lines (a .env file;
``-``: stdin). Lists show the names only.
"""

from __future__ import annotations

import getpass
import io
import os
import sys
from pathlib import Path
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
        _env_arguments(add)
        env = sub.add_parser(
            "env", help="a stdio server's environment variables: list, set, replace, remove"
        )
        env.add_argument("name")
        _env_arguments(env)
        env.add_argument(
            "--unset", action="append", default=[], metavar="NAME", help="remove a variable"
        )
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
        env = _env_change(options)
        source = mcp_server_add(
            env=env,
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

    def _env(self, options: dict[str, Any]) -> None:
        from tools_app.executors.mcp.services import mcp_server_env, mcp_server_env_set

        source = self._source(options["name"])
        change = _env_change(options)
        change.remove = set(options["unset"])
        if change:
            source = mcp_server_env_set(source, change=change, user=None)
            self.stdout.write(f"{source.name}: environment saved; its sessions restart")
        shown = [_shown(var) for var in mcp_server_env(source)]
        self.stdout.write(f"{source.name}: " + (", ".join(shown) or "no environment variables"))

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
        from tools_app.executors.mcp.services import mcp_server_env

        for source in sources:
            config = source.config or {}
            where = " ".join(config.get("command") or []) or config.get("url", "")
            secrets = secret_summary(source)
            env = [_shown(var) for var in mcp_server_env(source)]
            self.stdout.write(
                f"{source.name}\t{config.get('transport')}\t{where}\t{source.state}"
                f"\t{source.tool_count} tool(s)"
                + (f"\tenv: {', '.join(env)}" if env else "")
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


# --- environment variables ------------------------------------------------------------------
def _env_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="stdio: a secret environment variable; its value is asked for (no echo), or read "
        "from stdin, one line per --env, never given here",
    )
    parser.add_argument(
        "--env-file",
        metavar="FILE",
        help="stdio: secret variables from a file of NAME=value lines (a .env file; - for stdin)",
    )
    parser.add_argument(
        "--plain-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="stdio: a variable that is not secret (shown in lists and in the audit log)",
    )
    parser.add_argument(
        "--person-env",
        action="append",
        default=[],
        metavar="NAME",
        help="stdio: a secret variable each person sets to their own value on My connections "
        "(no value here); the server then runs one process per person",
    )


def _env_change(options: dict[str, Any]) -> Any:
    from tools_app.services.source_env import EnvChange

    change = EnvChange()
    names: list[str] = options["env"]
    for name in names:
        if "=" in name:
            raise CommandError(
                f"--env takes a name only ({name.partition('=')[0]}): the value is asked for, "
                "so it never shows in ps or the shell's history; use --env-file for many"
            )
    from_file = options["env_file"]
    if from_file == "-" and names:
        raise CommandError("--env-file - reads stdin: give the --env values in the file too")
    if from_file:
        change.secret.update(_env_file(from_file))
    for name in names:
        change.secret[name] = _ask(name)
    for name in options.get("person_env") or []:
        if "=" in name:
            raise CommandError(
                f"--person-env takes a name only ({name.partition('=')[0]}): each person "
                "enters their own value on My connections"
            )
        change.person.add(name.strip())
    for pair in options["plain_env"]:
        name, sep, value = pair.partition("=")
        if not sep:
            raise CommandError(f"--plain-env takes NAME=VALUE, not {pair!r}")
        change.plain[name] = value
    return change


def _env_file(path: str) -> dict[str, str]:
    # python-dotenv: the .env format people already write (quotes, export, comments).
    from dotenv import dotenv_values

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    empty = [name for name, value in values.items() if not value]
    if empty:
        raise CommandError(f"{path}: {empty[0]} has no value (write {empty[0]}=value)")
    return {name: str(value) for name, value in values.items()}


def _ask(name: str) -> str:
    if sys.stdin.isatty():
        value = getpass.getpass(f"{name} (not shown): ")
    else:
        line = sys.stdin.readline()
        if not line:
            raise CommandError(f"no value for {name} on stdin (one line per --env)")
        value = line.removesuffix("\n").removesuffix("\r")
    if not value:
        raise CommandError(f"the value of {name} is empty")
    return value


def _shown(var: Any) -> str:
    if var.per_person:
        return f"{var.name} (secret, per person)"
    if var.secret:
        return f"{var.name} (secret, {'set' if var.is_set else 'not set'})"
    return f"{var.name}={var.value}"
