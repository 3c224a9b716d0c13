"""What binding decides, as a value: the verdict, its reason and who approves.

Binding (``tools_app.services.binding``) decides every call through two questions it asks an
``AccessView``: what may this person use, and who must approve this function. The live view
answers from the database (grants, approval modes: ``LIVE``); a candidate policy answers from
its own rules (``tools_app.services.policy``): the shadow at binding, ``manage.py policy
test`` and ``policy replay``. The rest of the decision — the tool exists and is enabled, the
caller's scope, the arguments, allow-lists, guards — is the same code for both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from tools_app import selectors
from tools_app.registry import BaseTool
from tools_app.runtime import Caller
from tools_app.services.grants import granted_tools, grants_narrow

ALLOWED, APPROVAL, DENIED, FAILED = "allowed", "approval", "denied", "failed"
VERDICTS = (ALLOWED, APPROVAL, DENIED, FAILED)


@dataclass(frozen=True)
class Approval:
    """Who must approve a function's calls: ``mode`` none | requester | approver."""

    mode: str = "none"
    group_ids: tuple[int, ...] = ()
    group_names: tuple[str, ...] = ()  # a candidate names them; the live view gives ids
    needed: int = 1


class AccessView(Protocol):
    """Who may use what, and who approves: the live policy or a candidate."""

    name: str

    def granted(
        self, user_id: int | None, snapshot: selectors.ConfigSnapshot
    ) -> frozenset[str] | None: ...

    def approval(self, tool: str, snapshot: selectors.ConfigSnapshot) -> Approval: ...


class LiveAccess:
    """The policy in force: grants and approval modes as stored (cached under the token)."""

    name = "live"

    def granted(
        self, user_id: int | None, snapshot: selectors.ConfigSnapshot
    ) -> frozenset[str] | None:
        return granted_tools(user_id, snapshot)

    def approval(self, tool: str, snapshot: selectors.ConfigSnapshot) -> Approval:
        function = snapshot.function(tool)
        return Approval(
            function.approval_mode, function.approver_group_ids, (), function.approvals_needed
        )


LIVE = LiveAccess()


@dataclass(frozen=True)
class Decision:
    """``verdict``: allowed, approval (waits for a person), denied (a policy refused it) or
    failed (it could not be checked: unknown tool, invalid arguments). ``policy_verdict``:
    the call's own word for it (not_granted, guard, rate_limited…)."""

    verdict: str
    reason: str = ""
    policy_verdict: str = ""
    approval: Approval | None = None

    def shadow_detail(self, *, policy: str, name: str, live: str) -> dict[str, Any]:
        """What a call's audit record keeps of a shadow's verdict."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "policy": policy,
            "name": name,
            "live": live,
        }


@dataclass(frozen=True)
class Checks:
    """How the steps that do not depend on who may use what (arguments, schema, allow-lists,
    the person's connection, guards, limits) came out: ``refusal`` (None: passed) and, when
    passed, the reason a guard asks a person to approve ("" none)."""

    refusal: Decision | None = None
    escalated: str = ""


def usable_tools(user_id: int | None, names: Iterable[str] | None) -> list[type[BaseTool]]:
    """The tools out of ``names`` (None: every tool) this person could call now: granted,
    enabled, and not refused to them by their group's settings whatever the arguments (the
    Docker tools while they are for admins only, an operation an admin has not allowed).
    What a person or a client is offered (the model's rounds, tool search, ``/mcp/``, the
    slash help) comes from here, and each step is the one binding takes, so an offer never
    holds a function binding must refuse."""
    snapshot = selectors.config_snapshot()
    caller = Caller(user_id)
    settings: dict[str, Any] = {}
    usable = []
    for tool in selectors.enabled_tools(grants_narrow(user_id, names)):
        if tool.tool_group not in settings:
            settings[tool.tool_group] = snapshot.settings(tool.tool_group)
        if tool.caller_refusal(settings[tool.tool_group], caller) is None:
            usable.append(tool)
    return usable


def refused_to_members(tools: Iterable[type[BaseTool]]) -> list[str]:
    """The functions out of ``tools`` a member (anyone but an admin) could not call now, even
    granted them: switched off, or refused by their group's settings whatever the arguments.
    The grants editor warns with it; binding and ``usable_tools`` take the same steps."""
    snapshot = selectors.config_snapshot()
    member = Caller(None)  # no user: not an admin, which is all these checks ask
    refused = []
    for tool in tools:
        state = selectors.tool_state(tool, snapshot)
        if state.disabled_reason or tool.caller_refusal(state.settings, member) is not None:
            refused.append(tool.tool_name)
    return refused
