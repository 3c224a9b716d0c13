"""MCP: the tools of any MCP server, under the same governance as ours.

One tool group per registered server. A **stdio** server runs inside the sandbox (a hardened
Docker container or bubblewrap, with a shared or the conversation's workspace at /workspace,
network only when its settings say so); an **HTTP** (streamable HTTP or SSE) server is reached
through the SSRF guard, its host allowlisted per group, its headers and bearer token encrypted
at rest. Each worker process keeps one live session per server (and workspace): started on
first use, restarted with backoff after a crash or a hang, closed when idle (runtime.py).
"""
