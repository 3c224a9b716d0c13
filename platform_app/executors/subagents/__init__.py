"""Subagents: subagent_spawn hands a task to a helper that runs as its own turn in a child
conversation of the same user; the call returns at once, and the helper's answer is posted
into the parent conversation when its turn ends (``platform_app/subagents.py``).
Bounded by depth (at most 2), subagents running at once per user and rounds per subagent."""
