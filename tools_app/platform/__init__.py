"""Platform tools: what lets the agent remember and organise (issue 10).

A small Django app inside ``tools_app`` (label ``platform``) holding the state and the
services of the platform tool groups; their schemas, settings and activities live in the
executor packages like every other tool (``tools_app/executors/memory``, ``docs``, ``skills``,
``messaging``, ``schedules``, ``subagents``). Layout:

- ``models.py``       per-user state (archival memory chunks, core memory entries)
- ``memory/``         chunking, embedders, full-text and vector search, core memory
- ``docs.py``         documentation folders: list, search (an in-memory FTS5 index), read
- ``skills.py``       SKILL.md discovery (data directory + the conversation's workspace)
- ``messaging.py``    send_message: another conversation of the user, or an admin's webhook
- ``safe_files.py``   reading files below a root without following links (untrusted trees)
- ``prompt.py``       the blocks every system prompt gets (core memory, skill index)
- ``schedules.py``    cron schedules: validation (cronsim), claiming a due one, firing a turn
- ``subagents.py``    subagent_spawn and the turn_finished receiver that posts the answer back
- ``tasks.py``        ``schedules_tick``, which Celery beat sends
"""
