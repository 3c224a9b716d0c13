"""What shell_exec would run: the programs of the command line as the shell tool's own checker
reads them (bashlex, the parser binding's allow- and blocklists use), what it could not read,
and where and how long it runs."""

from __future__ import annotations

import posixpath
from typing import Any

from django.utils.translation import gettext as _

from tools_app.executors.shell.activity import effective_timeout
from tools_app.executors.shell.policy import command_programs
from tools_app.executors.shell.settings import ShellSettings
from tools_app.previews import Preview, PreviewContext, shortened
from tools_app.registry import preview


@preview("shell_exec")
def shell_exec_preview(args: Any, ctx: PreviewContext) -> Preview:
    settings: ShellSettings = ctx.settings
    programs, unread = command_programs(args.command)
    fields = [
        (_("command line"), shortened(args.command)),
        (_("programs"), ", ".join(dict.fromkeys(programs)) or _("none found")),
    ]
    if unread:
        fields.append((_("could not be read"), "\n".join(unread)))
    fields += [
        (_("working directory"), posixpath.normpath(posixpath.join("/workspace", args.cwd))),
        (
            _("runs in"),
            _("bash, in the sandbox (%(backend)s)") % {"backend": settings.sandbox_backend},
        ),
        (_("network"), _("allowed") if settings.allow_network else _("none")),
        (_("timeout"), f"{effective_timeout(args.timeout, settings)} s"),
    ]
    return Preview(title=_("Shell command"), fields=fields)
