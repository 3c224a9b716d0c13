"""What enters a turn from outside with its messages rather than through a tool: the files a
person uploaded with the turn's message, and a subagent's answer delivered into the
conversation since the turn before began (the model reads both in this turn's rounds). The
escalation of sinks (``tools_app.guards.untrusted``) asks here, for sink calls only."""

from __future__ import annotations

from django.utils.translation import gettext as _

from chat_app.models import Message, Turn


def turn_untrusted_entry(turn_id: int) -> str:
    """The first such content of turn ``turn_id``, named for the card ("" when none)."""
    turn = Turn.objects.filter(pk=turn_id).values("conversation_id", "parent_id", "kind").first()
    if turn is None or turn["kind"] == Turn.Kind.SLASH:
        return ""  # a person's own command: no model read anything before choosing it
    for files in Message.objects.filter(turn_id=turn_id, role=Message.Role.USER).values_list(
        "attachments", flat=True
    ):
        names = [f.get("name", "") for f in files or () if isinstance(f, dict)]
        if any(names):
            return _("the uploaded file %(name)s") % {"name": next(n for n in names if n)}
    answers = Message.objects.filter(
        conversation_id=turn["conversation_id"], origin=Message.Origin.SUBAGENT
    )
    if turn["parent_id"] is not None:
        # Delivered while the turn before ran or since: earlier ones entered an earlier turn.
        began = Turn.objects.filter(pk=turn["parent_id"]).values_list("started_at", flat=True)
        answers = answers.filter(created_at__gte=began[:1])
    if answers.exists():
        return _("a subagent's answer")
    return ""
