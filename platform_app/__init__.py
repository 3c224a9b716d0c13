"""The platform: what needs both the tools and the chat (label ``platform``).

The top of the three layers (``tools_app`` below ``chat_app`` below this app): tools that
remember and organise, which drive chat turns or read conversations, and the ways in for
outside clients. Layout:

- ``executors/``      the platform's tool groups, shaped like every executor package
                      (``memory``, ``docs``, ``skills``, ``messaging``, ``schedules``,
                      ``subagents``, and ``agent``: reasoning, plan, clarification, report)
- ``models.py``       per-user state (memory chunks, core memory, schedules, subagents)
- ``memory/``         chunking, embedders, full-text and vector search, core memory
- ``docs.py``         documentation folders: list, search (an in-memory FTS5 index), read
- ``skills.py``       SKILL.md discovery (data directory + the conversation's workspace)
- ``messaging.py``    send_message: another conversation of the user, or an admin's webhook
- ``safe_files.py``   reading files below a root without following links (untrusted trees)
- ``prompt.py``       the blocks every system prompt gets (core memory, skill index)
- ``reports.py``      the reports create_report writes, listed and read for the chat page
- ``schedules.py``    cron schedules: validation (cronsim), claiming a due one, firing a turn
- ``subagents.py``    subagent_spawn and the receivers that end or stop helpers with turns
- ``api_tokens.py``   personal API tokens (hashed, scoped, rate-limited)
- ``mcp_gateway.py``  our governed tools for outside MCP clients at ``/mcp/``
- ``views.py``        the Tokens page, the chat page's schedules and reports
- ``tasks.py``        ``schedules_tick``, which Celery beat sends
"""
