from django.dispatch import Signal

# Sent with ``call`` (a ToolCall) when a call reaches a terminal status.
toolcall_finished = Signal()
