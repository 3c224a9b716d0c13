from django.dispatch import Signal

# Sent with ``turn`` (a Turn, refreshed) once, after a running turn reached its final status
# (``turns.turn_finish``, with ``send_robust``). The platform tools listen: a subagent's answer
# goes back to its parent conversation (``platform_app.subagents``).
turn_finished = Signal()

# Sent with ``turn`` when Stop is asked for a running turn (``turns.turn_stop``), after its own
# tool calls were cancelled, with ``send_robust``. The platform tools listen: the subagents the
# turn started are stopped with it (``platform_app.subagents``).
turn_stopping = Signal()
