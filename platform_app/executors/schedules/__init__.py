"""Schedules: schedule_add / schedule_list / schedule_remove. A schedule is a cron expression
and a message; when it is due, the message runs as an agent turn of its owner, posted into a
conversation of theirs or a new one (state and firing: ``platform_app/schedules.py``).
Touches only the caller's own schedules and conversations."""
