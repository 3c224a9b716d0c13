"""What binding decides, as a value: the verdict, its reason and who approves.

Binding (``tools_app.services.binding``) decides every call through two questions it asks an
``AccessView``: what may this person use, and who must approve this function. The live view
answers from the database (grants, approval modes: ``LIVE``); a candidate policy answers from
its own rules (``tools_app.services.policy``): the shadow at binding, ``manage.py policy
test`` and ``policy replay``. The rest of the decision — the tool exists and is enabled, the
caller's scope, the arguments, allow-lists, guards — is the same code for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from tools_app import selectors
from tools_app.services.grants import granted_tools

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
