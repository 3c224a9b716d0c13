"""A stdio MCP server built with the official SDK, for the secret-environment tests: it says
whether a variable is in its environment and whether its value has a given SHA-256, or that
SHA-256 (never the value), whether a path exists (the launcher's file must be gone), and the
files of its /workspace (per-person sessions must not share one).

The tests copy it into the stdio servers' venv as a console script (``env_server_installed``
in conftest), where it runs inside the sandbox with the venv's Python and SDK.
"""

import hashlib
import os

try:  # the SDK's 2.x name, then 1.x's
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # pragma: no cover - depends on the venv's SDK
    from mcp.server.fastmcp import FastMCP as Server

server = Server("env-probe")


@server.tool(description="Whether NAME is in the environment and its value has SHA256.")
def secret_check(name: str, sha256: str) -> dict:
    value = os.environ.get(name)
    digest = hashlib.sha256(value.encode()).hexdigest() if value is not None else ""
    return {"present": value is not None, "matches": digest == sha256}


@server.tool(description="The SHA-256 of NAME's value (never the value), or empty.")
def secret_sha256(name: str) -> dict:
    value = os.environ.get(name)
    return {"sha256": hashlib.sha256(value.encode()).hexdigest() if value is not None else ""}


@server.tool(description="Write a file NAME into /workspace, then list the workspace.")
def workspace_note(name: str) -> dict:
    if name:
        with open(os.path.join("/workspace", os.path.basename(name)), "w") as f:
            f.write("note")
    return {"files": sorted(os.listdir("/workspace"))}


@server.tool(description="The names (not values) of the environment variables.")
def env_names() -> dict:
    return {"names": sorted(os.environ)}


@server.tool(description="Whether a path exists.")
def path_exists(path: str) -> dict:
    return {"exists": os.path.exists(path)}


if __name__ == "__main__":
    server.run()
