"""What container_create / container_run would start: the resolved run spec, made by the same
function the executor calls (``managed.container_spec``), with the admin's limits."""

from __future__ import annotations

import shlex
from typing import Any

from django.utils.translation import gettext as _

from tools_app.executors.docker.engine import engine_url
from tools_app.executors.docker.managed import container_spec
from tools_app.executors.docker.settings import DockerSettings
from tools_app.previews import Preview, PreviewContext, masked_value, shortened
from tools_app.registry import preview


def _spec_preview(args: Any, ctx: PreviewContext, *, starts: bool) -> Preview:
    settings: DockerSettings = ctx.settings
    spec = container_spec(args, settings, labels={})
    command = spec["command"]
    env = []
    for entry in spec["environment"]:
        name, _sep, value = entry.partition("=")
        env.append(f"{name}={masked_value(name, value)}")
    ports = ", ".join(
        f"{address}:{host} → {inner}"
        for inner, (address, host) in (spec.get("ports") or {}).items()
    )
    fields = [
        (_("image"), spec["image"]),
        (_("command"), shlex.join(command) if command else _("the image's default")),
        (_("name"), spec.get("name") or _("chosen by the engine")),
        (_("environment"), shortened("\n".join(env)) if env else _("none")),
        (_("mounts"), _("none: no host files or devices")),
        (_("network"), spec["network_mode"]),
        (_("published ports"), ports or _("none")),
        (_("memory"), f"{spec['mem_limit']:,} bytes"),
        (_("CPUs"), f"{spec['nano_cpus'] / 1e9:g}"),
        (_("processes"), str(spec["pids_limit"])),
        (
            _("privileges"),
            _("not privileged, all capabilities dropped%(added)s, no-new-privileges")
            % {"added": f" (+{', '.join(spec['cap_add'])})" if spec["cap_add"] else ""},
        ),
        (_("engine"), engine_url(settings) or _("default engine")),
    ]
    if starts:
        run = (
            _("started, left running")
            if getattr(args, "detach", True)
            else _("started; the call waits for its end, returns its logs and removes it")
        )
    else:
        run = _("created, not started")
    fields.append((_("then"), run))
    return Preview(title=_("Container from %(image)s") % {"image": spec["image"]}, fields=fields)


@preview("container_create")
def container_create_preview(args: Any, ctx: PreviewContext) -> Preview:
    return _spec_preview(args, ctx, starts=False)


@preview("container_run")
def container_run_preview(args: Any, ctx: PreviewContext) -> Preview:
    return _spec_preview(args, ctx, starts=True)
