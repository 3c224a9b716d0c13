from django.dispatch import Signal

# Sent with ``turn`` (a Turn, refreshed) once, after a running turn reached its final status
# (``turns.turn_finish``). The platform tools listen: a subagent's answer goes back to its
# parent conversation, a schedule records how its run ended.
turn_finished = Signal()
