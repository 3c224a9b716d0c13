"""``manage.py policy``: policy as code (docs/SECURITY_TEAMS.md).

- ``policy test CASES.yaml``: decide each case as binding would (under the file's candidate
  policy, or the live one); one line per case; exits 1 on any mismatch.
- ``policy replay CANDIDATE.yaml --since 7d [--json]``: the recorded calls of the period
  whose verdict the candidate would change, counted and listed.
- ``policy shadow CANDIDATE.yaml [--name N]`` / ``policy shadow --stop`` / ``policy status``:
  run a candidate beside the live policy (recorded and counted, never enforced).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from platform_app.people.policy import (
    PolicyError,
    policy_test,
    replay_text,
    shadow_start,
    shadow_status,
    shadow_stop,
    since_parse,
)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from exc


class Command(BaseCommand):
    help = "Test, replay or shadow a candidate access policy."

    def add_arguments(self, parser: Any) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        test = actions.add_parser("test", help="decide the cases of a YAML file")
        test.add_argument("path")
        replay = actions.add_parser("replay", help="re-decide recorded calls under a candidate")
        replay.add_argument("path")
        replay.add_argument("--since", default="7d", help="7d, 24h, 30m or a date (default 7d)")
        replay.add_argument("--json", action="store_true", help="the whole result as JSON")
        shadow = actions.add_parser("shadow", help="run a candidate as the shadow policy")
        shadow.add_argument("path", nargs="?")
        shadow.add_argument("--name", default="")
        shadow.add_argument("--stop", action="store_true", help="stop the running shadow")
        actions.add_parser("status", help="the running shadow and its counts")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            getattr(self, f"_{action}")(**options)
        except PolicyError as exc:
            raise CommandError(str(exc)) from exc

    def _test(self, *, path: str, **options: Any) -> None:
        results = policy_test(_read(path), base=Path(path).resolve().parent)
        for result in results:
            self.stdout.write(result.line())
        failed = [r for r in results if not r.ok]
        self.stdout.write(f"{len(results) - len(failed)} passed, {len(failed)} failed")
        if failed:
            raise CommandError(
                f"{len(failed)} case(s) do not match: "
                + ", ".join(f"#{r.number} {r.label}" for r in failed),
                returncode=1,
            )

    def _replay(self, *, path: str, since: str, json: bool, **options: Any) -> None:
        replay = replay_text(_read(path), since=since_parse(since), listed=10**9)
        if json:
            self.stdout.write(_json(replay.as_json()))
            return
        self.stdout.write(
            f"{replay.total} call(s) since {replay.since:%Y-%m-%d %H:%M}; "
            f"{replay.changed_count} would change"
        )
        for transition, count in replay.transitions.items():
            self.stdout.write(f"  {transition}: {count}")
        for title, table in (
            ("by person", replay.by_person),
            ("by group", replay.by_group),
            ("by function", replay.by_function),
        ):
            if table:
                self.stdout.write(title + ":")
                for key, counts in sorted(table.items()):
                    shown = ", ".join(f"{t} {n}" for t, n in sorted(counts.items()))
                    self.stdout.write(f"  {key}: {shown}")
        for call in replay.changed:
            self.stdout.write(
                f"  {call.at[:19]} {call.person} {call.tool} #{call.call_id}: "
                f"{call.transition}" + (f" ({call.reason})" if call.reason else "")
            )

    def _shadow(self, *, path: str | None, name: str, stop: bool, **options: Any) -> None:
        if stop:
            stopped = shadow_stop(actor=None)
            self.stdout.write(f"stopped {stopped.name}" if stopped else "no shadow was running")
            return
        if not path:
            raise CommandError("name the candidate's file, or --stop")
        shadow = shadow_start(text=_read(path), name=name or Path(path).name, actor=None)
        self.stdout.write(f"shadow {shadow.name} ({shadow.label}) runs beside the live policy")

    def _status(self, **options: Any) -> None:
        shadow, counts = shadow_status()
        if shadow is None:
            self.stdout.write("no shadow policy is running")
            return
        self.stdout.write(f"shadow {shadow.name} ({shadow.label}) since {shadow.started_at:%c}")
        for transition, count in counts.items():
            self.stdout.write(f"  live→shadow {transition}: {count}")


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
