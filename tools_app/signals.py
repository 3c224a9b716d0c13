from django.dispatch import Signal

# Sent with ``call`` (a ToolCall) when a call reaches a terminal status.
toolcall_finished = Signal()

# Sent with ``call`` once a call waiting for a decision is stored (requester or approver
# mode), after the commit, with ``send_robust``: receivers notify (webhooks), never decide.
approval_requested = Signal()

# Sent with ``call`` and ``decision`` ("approved", "approved with edited arguments",
# "denied", "expired") once a decision is applied, with ``send_robust``.
approval_decided = Signal()

# Sent with ``data`` (a dict of ids, names, statuses and pins: tools_app.services.pins) after
# the commit: an imported function's definition changed on its server (held for review, or
# accepted automatically), and an admin accepted or rejected one.
definition_changed = Signal()
definition_reviewed = Signal()


def notify(signal: Signal, **kwargs: object) -> None:
    """Send ``signal`` to its receivers; one that fails is logged and changes nothing."""
    import logging

    for receiver, result in signal.send_robust(sender=None, **kwargs):
        if isinstance(result, Exception):
            logging.getLogger(__name__).error("%r failed", receiver, exc_info=result)
