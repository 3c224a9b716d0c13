from django.dispatch import Signal

# Sent with ``call`` (a ToolCall) when a call reaches a terminal status.
toolcall_finished = Signal()

# Sent with ``call`` (a ToolCall) when an approved call is queued again, before it is sent to a
# worker. A receiver that returns True has taken the call over and it is not sent: a chat
# turn's clarification waits for the person's answer instead of running (chat_app).
toolcall_approved = Signal()
