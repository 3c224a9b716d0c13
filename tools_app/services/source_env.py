"""Environment variables of a stdio MCP server: which names, and where their values live.

``ToolSource.config["env"]`` lists the variables in order, ``{"name": ..., "secret": bool}``
(a plain one carries its ``"value"``: it may be shown); the values of secret ones are in the
encrypted ``ToolSource.secrets["env"]`` (``{name: value}``) and are never rendered back: pages
say "set", the command line lists names, the audit says "env NAME: set / changed / removed".
A variable marked ``"per_person": true`` (always secret) has no value here: each person
enters their own on My connections, kept in their ``SourceConnection`` (``tools_app.
connections``), and a call's server process gets the value of the call's person.

Names are POSIX names (letters, digits, underscore; not starting with a digit). Names that
change what runs or how it loads are refused, whoever types them: an admin's typo or an
attacker with an admin session must not be able to swap the interpreter, preload a library or
run a command through them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_NAME = 128
MAX_VALUE = 16_384  # characters; a PEM key fits, the kernel's 128 KiB per string is far off
MAX_VARS = 50

_LOADER = gettext_noop("the dynamic loader reads it: it would load other code into the server")
_INTERPRETER = gettext_noop("the interpreter reads it: it would change which code the server runs")
_SHELL = gettext_noop("the shell reads it: it would run commands before the server starts")
_RUNS_COMMANDS = gettext_noop("it makes a program run another command")
_HOSTS = gettext_noop("it redirects host names")

# Exact names; values: why, in words for the admin.
REFUSED: dict[str, str] = {
    "PATH": gettext_noop(
        "it decides which program runs; the sandbox sets it (the servers' venv first)"
    ),
    "HOSTALIASES": _HOSTS,
    "RESOLV_HOST_CONF": _HOSTS,
    "GCONV_PATH": _LOADER,
    "LOCPATH": _LOADER,
    "NLSPATH": _LOADER,
    "GLIBC_TUNABLES": _LOADER,
    "MALLOC_CHECK_": _LOADER,
    "ENV": _SHELL,
    "BASH_ENV": _SHELL,
    "SHELLOPTS": _SHELL,
    "BASHOPTS": _SHELL,
    "IFS": _SHELL,
    "PS4": _SHELL,
    "CDPATH": _SHELL,
    "PERL5LIB": _INTERPRETER,
    "PERL5OPT": _INTERPRETER,
    "PERLLIB": _INTERPRETER,
    "RUBYLIB": _INTERPRETER,
    "RUBYOPT": _INTERPRETER,
    "NODE_OPTIONS": _INTERPRETER,
    "NODE_PATH": _INTERPRETER,
    "CLASSPATH": _INTERPRETER,
    "JAVA_TOOL_OPTIONS": _INTERPRETER,
    "_JAVA_OPTIONS": _INTERPRETER,
    "JDK_JAVA_OPTIONS": _INTERPRETER,
    "GIT_EXEC_PATH": _RUNS_COMMANDS,
    "GIT_SSH": _RUNS_COMMANDS,
    "GIT_SSH_COMMAND": _RUNS_COMMANDS,
    "GIT_ASKPASS": _RUNS_COMMANDS,
    "GIT_PROXY_COMMAND": _RUNS_COMMANDS,
    "SSH_ASKPASS": _RUNS_COMMANDS,
    "EDITOR": _RUNS_COMMANDS,
    "VISUAL": _RUNS_COMMANDS,
    "PAGER": _RUNS_COMMANDS,
}
REFUSED_PREFIXES: dict[str, str] = {
    "LD_": _LOADER,  # LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT …
    "DYLD_": _LOADER,
    "MALLOC_": _LOADER,
    "PYTHON": _INTERPRETER,  # PYTHONPATH, PYTHONHOME, PYTHONSTARTUP …; we set two ourselves
    "BASH_FUNC_": _SHELL,
    "GIT_CONFIG": _RUNS_COMMANDS,  # GIT_CONFIG_COUNT/KEY_n/VALUE_n set any git option
    "NPM_CONFIG_": _INTERPRETER,
}


class EnvError(ValueError):
    """A variable cannot be stored as asked (words for the admin)."""


def refusal(name: str) -> str | None:
    """Why ``name`` may not be set, or None."""
    if name in REFUSED:
        return REFUSED[name]
    for prefix, why in REFUSED_PREFIXES.items():
        if name.startswith(prefix):
            return why
    return None


def check_env_name(name: str) -> str:
    name = (name or "").strip()
    if not NAME_RE.match(name) or len(name) > MAX_NAME:
        raise EnvError(
            _(
                "%(name)s is not an environment variable name: letters, digits and _, not "
                "starting with a digit (e.g. API_KEY)"
            )
            % {"name": repr(name[:MAX_NAME])}
        )
    why = refusal(name)
    if why is not None:
        raise EnvError(_("%(name)s cannot be set: %(why)s") % {"name": name, "why": _(why)})
    return name


def check_env_value(name: str, value: str) -> str:
    if "\0" in value:
        raise EnvError(_("the value of %(name)s must not contain NUL bytes") % {"name": name})
    if len(value) > MAX_VALUE:
        raise EnvError(
            _("the value of %(name)s is longer than %(max)s characters")
            % {"name": name, "max": MAX_VALUE}
        )
    return value


@dataclass(frozen=True)
class EnvVar:
    """One variable as it may be shown: a secret one says only whether it is set."""

    name: str
    secret: bool
    value: str = ""  # plain variables only
    is_set: bool = True
    per_person: bool = False  # each person's own value (My connections); never the admin's


@dataclass
class EnvChange:
    """What an admin asked for: secret values (new or replacing), plain values, names each
    person sets for themselves, removals."""

    secret: dict[str, str] = field(default_factory=dict, repr=False)
    plain: dict[str, str] = field(default_factory=dict)
    person: set[str] = field(default_factory=set)
    remove: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.secret or self.plain or self.person or self.remove)


def _entries(config: dict[str, Any]) -> list[dict[str, Any]]:
    raw = config.get("env") or []
    return [dict(e) for e in raw if isinstance(e, dict) and isinstance(e.get("name"), str)]


def _secret_values(secrets: dict[str, Any]) -> dict[str, str]:
    raw = secrets.get("env") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def env_vars(config: dict[str, Any], secrets: dict[str, Any]) -> list[EnvVar]:
    values = _secret_values(secrets)
    return [
        EnvVar(e["name"], True, is_set=False, per_person=True)
        if e.get("per_person")
        else EnvVar(e["name"], True, is_set=e["name"] in values)
        if e.get("secret", True)
        else EnvVar(e["name"], False, value=str(e.get("value", "")))
        for e in _entries(config)
    ]


def person_env_names(config: dict[str, Any]) -> list[str]:
    """The variables each person sets for themselves, in order (checked names only)."""
    return [
        e["name"]
        for e in _entries(config)
        if e.get("per_person") and NAME_RE.match(e["name"]) and refusal(e["name"]) is None
    ]


def env_for_process(
    config: dict[str, Any], secrets: dict[str, Any], person: dict[str, str] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """(plain, secret) values to start the server with; ``person``: the call's person's own
    values of the per-person variables (a missing one is left out). Names are checked again:
    a row written by hand in the database gets no further than a form would."""
    plain: dict[str, str] = {}
    secret: dict[str, str] = {}
    values = _secret_values(secrets)
    for var in env_vars(config, secrets):
        if not NAME_RE.match(var.name) or refusal(var.name) is not None:
            continue
        if var.per_person:
            if person and var.name in person:
                secret[var.name] = person[var.name]
        elif var.secret and var.name in values:
            secret[var.name] = values[var.name]
        elif not var.secret:
            plain[var.name] = var.value
    return plain, secret


def env_apply(
    config: dict[str, Any], secrets: dict[str, Any], change: EnvChange
) -> tuple[dict[str, Any], dict[str, Any]]:
    """New (config, secrets) with ``change`` applied; ``EnvError`` when it asks for a refused
    or malformed name or value. Inputs are not modified."""
    entries = {e["name"]: e for e in _entries(config)}
    values = _secret_values(secrets)
    for name in change.remove:
        entries.pop(name, None)
        values.pop(name, None)
    both = (
        (set(change.secret) & set(change.plain))
        | (change.person & set(change.secret))
        | (change.person & set(change.plain))
    )
    if both:
        raise EnvError(
            _("%(name)s is given twice (secret, plain or per person: one of them)")
            % {"name": sorted(both)[0]}
        )
    for name, value in change.secret.items():
        name = check_env_name(name)
        values[name] = check_env_value(name, value)
        entries[name] = {"name": name, "secret": True}
    for name, value in change.plain.items():
        name = check_env_name(name)
        entries[name] = {"name": name, "secret": False, "value": check_env_value(name, value)}
        values.pop(name, None)
    for name in change.person:
        name = check_env_name(name)
        # No value of the admin's: each person's own (a shared one must not stand in).
        entries[name] = {"name": name, "secret": True, "per_person": True}
        values.pop(name, None)
    if len(entries) > MAX_VARS:
        raise EnvError(_("a server may have at most %(max)s variables") % {"max": MAX_VARS})
    new_config = {**config, "env": list(entries.values())}
    if not new_config["env"]:
        new_config.pop("env")
    new_secrets = {**secrets, "env": {k: v for k, v in values.items() if k in entries}}
    if not new_secrets["env"]:
        new_secrets.pop("env")
    return new_config, new_secrets


def env_audit(
    before: tuple[dict[str, Any], dict[str, Any]], after: tuple[dict[str, Any], dict[str, Any]]
) -> tuple[dict[str, str], dict[str, str]]:
    """The audit's view of a change, one key per variable ("env API_KEY"): a plain value as
    it is, a secret as a state - "set", "changed", "removed" - never its value."""
    old = {v.name: v for v in env_vars(*before)}
    new = {v.name: v for v in env_vars(*after)}
    old_values, new_values = _secret_values(before[1]), _secret_values(after[1])
    shown_before: dict[str, str] = {}
    shown_after: dict[str, str] = {}
    for name in [*old, *(n for n in new if n not in old)]:
        key = f"env {name}"
        was, now = old.get(name), new.get(name)
        if was is not None:
            shown_before[key] = (
                "per person" if was.per_person else "set" if was.secret else was.value
            )
        if now is None:
            shown_after[key] = "removed"
        elif now.per_person:
            shown_after[key] = "per person"
        elif not now.secret:
            shown_after[key] = now.value
        elif was is None or not was.secret:
            shown_after[key] = "set"
        elif old_values.get(name) != new_values.get(name):
            shown_after[key] = "changed"
        else:
            shown_after[key] = "set"
    return shown_before, shown_after
