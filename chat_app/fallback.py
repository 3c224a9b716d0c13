"""Text-fallback tool calling, for models served without native ``tools`` support.

The system prompt gains ``fallback_prompt_block(tools)``; the model then writes its calls in
the reply text and ``parse_tool_calls`` finds them. Two formats are recognised:

1. A RUN block, always a call of ``shell_exec``::

       >>> RUN COMMAND
       pytest -x tests/
       <<<

   The marker line must be alone on its line (case-insensitive, surrounding spaces allowed).
   The command is every line up to the first ``<<<`` line - blank lines included - but the
   search for ``<<<`` stops at the next RUN marker. With no ``<<<`` the command ends at the
   first blank line or the end of the text. ``>>> RUN COMMAND: ls -la`` puts a one-line
   command on the marker line itself (a ``<<<`` right after it is consumed); following lines
   are not part of it, so prose written straight after is never run. A command wrapped in a
   code fence inside the block is unwrapped. An empty command is a malformed call.

2. A fenced JSON object, in a fence tagged ``json``, ``tool``, ``tool_call`` or untagged::

       ```json
       {"tool": "file_read", "arguments": {"path": "a.txt"}}
       ```

   The object must have exactly the keys ``tool`` (+ optional ``arguments``) or ``name`` +
   ``arguments``; any other JSON is an ordinary code sample. ``arguments`` must be an object
   (a string holding a JSON object is accepted, as OpenAI encodes it that way). Broken JSON
   that clearly tries to be a call (it has a ``"tool":`` key, or ``"name":`` and
   ``"arguments":``) is a malformed call, reported back to the model.

3. Seed 003's envelope, in such a fence: ``{"type": "tool_call", "tool": "browser", "action":
   "open", "params": {"url": ...}, "id": "call_123"}`` (``params`` may also be written
   inline, next to ``tool``), or several at once: ``{"type": "tool_use", "tools": [{...},
   ...]}``. A family and an action name one of our tools (``browser`` + ``open`` →
   ``browser_open``, ``shell`` → ``shell_exec``, ``http`` + ``POST`` → ``http_request`` with
   that method), among the tools this round offers; an unknown one goes to binding, which
   answers with the list of tools. ``{"tool": ..., "action": ..., "params": ...}`` without
   ``type`` is read the same way.

What is not a call: ``>>>`` Python prompts and any other ``>>>`` line; a RUN marker inside a
fenced block that also holds anything else (someone illustrating a session) - a fence that
holds nothing but one RUN block *is* a call, whatever its tag, because models like to fence
their commands; anything inside a longer enclosing fence (CommonMark fence rules: a fence is
closed only by a bare fence of the same character at least as long, so examples nested in a
longer ```` fence stay examples). An unclosed fence runs to the end of the text, as in
CommonMark.

Nor is a block the model copied from data: a page that says ``>>> RUN COMMAND: … ; id``,
quoted back by the model, would otherwise run. ``repeats_data`` finds a call whose block
stands in the turn's tool results (whitespace aside); the loop leaves such blocks as text.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from chat_app.fallback_envelope import envelope_calls
from chat_app.providers.base import ToolSpec
from tools_app.untrusted import untrusted

SHELL_TOOL = "shell_exec"

_RUN_MARKER = re.compile(r"^\s*>>>\s*RUN COMMAND\s*(?::(?P<inline>.*))?$", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*?)\s*$")
_FENCE_CLOSE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*$")
_JSON_TAGS = frozenset({"", "json", "tool", "tool_call"})
_TOOL_KEY = re.compile(r'"tool"\s*:\s*(?:"(?P<name>[^"\\]*)")?')
_NAME_KEY = re.compile(r'"name"\s*:\s*(?:"(?P<name>[^"\\]*)")?')
_ARGUMENTS_KEY = re.compile(r'"arguments"\s*:')


@dataclass
class ParsedCall:
    name: str
    arguments: dict[str, Any] | None
    raw: str  # the text of the whole block, for the trace
    error: str | None  # recognised as a call but malformed; reported back to the model


def parse_tool_calls(text: str, tools: Collection[str] = ()) -> list[ParsedCall]:
    """Every tool call written in ``text``, in text order. ``tools``: the names this round
    offers, which seed 003's envelopes (a tool family and an action) are resolved against."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    calls: list[ParsedCall] = []
    i = 0
    while i < len(lines):
        fence = _FENCE_OPEN.match(lines[i])
        if fence:
            end = _fence_end(lines, i, fence.group("fence"))
            calls.extend(
                _calls_in_fence(
                    fence.group("info"), lines[i + 1 : end], "\n".join(lines[i : end + 1]), tools
                )
            )
            i = end + 1
            continue
        marker = _RUN_MARKER.match(lines[i])
        if marker:
            call, i = _run_block(lines, i, marker)
            calls.append(call)
            continue
        i += 1
    return calls


def repeats_data(call: ParsedCall, data: str) -> bool:
    """Whether ``call``'s block (its fences aside) stands in ``data`` (``data_text``)."""
    lines = [
        line
        for line in call.raw.split("\n")
        if not (_FENCE_OPEN.match(line) or _FENCE_CLOSE.match(line))
    ]
    key = _squash("\n".join(lines))
    return bool(key) and key in data


def data_text(values: Iterable[object]) -> str:
    """Every string inside ``values`` (tool results, as stored), whitespace squeezed out, for
    ``repeats_data``."""
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.append(_squash(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    for value in values:
        walk(value)
    return "\n".join(out)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _fence_end(lines: list[str], start: int, opener: str) -> int:
    """Index of the line closing the fence opened at ``start`` (``len(lines)`` if unclosed)."""
    for j in range(start + 1, len(lines)):
        close = _FENCE_CLOSE.match(lines[j])
        if close:
            fence = close.group("fence")
            if fence[0] == opener[0] and len(fence) >= len(opener):
                return j
    return len(lines)


def _run_block(lines: list[str], start: int, marker: re.Match[str]) -> tuple[ParsedCall, int]:
    """Parse the RUN block whose marker is ``lines[start]``; return it and the next index."""
    inline = (marker.group("inline") or "").strip()
    if inline:
        end = start + 1
        if end < len(lines) and lines[end].strip() == "<<<":
            end += 1
        return _shell_call(inline, "\n".join(lines[start:end])), end

    terminator = None
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == "<<<":
            terminator = j
            break
        if _RUN_MARKER.match(lines[j]):
            break  # an unterminated block must not swallow the next one
    if terminator is not None:
        body, end = lines[start + 1 : terminator], terminator + 1
    else:
        stop = start + 1
        while stop < len(lines) and lines[stop].strip() and not _RUN_MARKER.match(lines[stop]):
            stop += 1
        body, end = lines[start + 1 : stop], stop
    return _shell_call(_unfence("\n".join(body)), "\n".join(lines[start:end])), end


def _unfence(command: str) -> str:
    command = textwrap.dedent(command).strip()
    lines = command.split("\n")
    if len(lines) >= 2 and _FENCE_OPEN.match(lines[0]) and _FENCE_CLOSE.match(lines[-1]):
        command = textwrap.dedent("\n".join(lines[1:-1])).strip()
    return command


def _shell_call(command: str, raw: str) -> ParsedCall:
    if not command:
        return ParsedCall(
            name=SHELL_TOOL,
            arguments=None,
            raw=raw,
            error="empty command: write the command on the lines after >>> RUN COMMAND "
            "and end it with a line holding only <<<",
        )
    return ParsedCall(name=SHELL_TOOL, arguments={"command": command}, raw=raw, error=None)


def _calls_in_fence(
    info: str, body: list[str], raw: str, tools: Collection[str]
) -> list[ParsedCall]:
    content = "\n".join(body).strip()
    if not content:
        return []

    first = next(i for i, line in enumerate(body) if line.strip())
    marker = _RUN_MARKER.match(body[first])
    if marker:
        call, end = _run_block(body, first, marker)
        if any(line.strip() for line in body[end:]):
            return []  # the RUN block is part of a larger illustration
        call.raw = raw
        return [call]

    tag = info.split()[0].lower() if info.split() else ""
    if tag not in _JSON_TAGS or not content.startswith("{"):
        return []
    try:
        value = json.loads(content)
    except json.JSONDecodeError as exc:
        name = _attempted_call_name(content)
        if name is None:
            return []
        detail = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        return [ParsedCall(name, None, raw, f"arguments are not valid JSON: {detail}")]
    envelope = envelope_calls(value, tools)
    if envelope is not None:
        return [ParsedCall(tool, arguments, raw, error) for tool, arguments, error in envelope]
    found = _call_from_object(value, raw)
    return [found] if found is not None else []


def _attempted_call_name(content: str) -> str | None:
    """The tool name of broken JSON that clearly meant to be a call, else None."""
    tool = _TOOL_KEY.search(content)
    if tool:
        return tool.group("name") or ""
    name = _NAME_KEY.search(content)
    if name and _ARGUMENTS_KEY.search(content):
        return name.group("name") or ""
    return None


def _call_from_object(value: object, raw: str) -> ParsedCall | None:
    if not isinstance(value, dict):
        return None
    keys = set(value)
    if "tool" in keys and keys <= {"tool", "arguments"}:
        name, arguments = value["tool"], value.get("arguments", {})
    elif keys == {"name", "arguments"}:
        name, arguments = value["name"], value["arguments"]
    else:
        return None
    if not isinstance(name, str) or not name.strip():
        return ParsedCall(str(name or ""), None, raw, "the call does not name a tool")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ParsedCall(name, None, raw, f"arguments are not valid JSON: {exc.msg}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        return ParsedCall(name, None, raw, f"arguments must be a JSON object, got {kind}")
    return ParsedCall(name, arguments, raw, None)


# --- what the model is told ----------------------------------------------------------------


def fallback_prompt_block(tools: list[ToolSpec]) -> str:
    """The system-prompt section that teaches the call formats (empty without tools)."""
    if not tools:
        return ""
    first = next((t for t in tools if t.name != SHELL_TOOL), tools[0])
    example = json.dumps(
        {"tool": first.name, "arguments": _example_arguments(first.parameters)},
        ensure_ascii=False,
    )
    has_shell = any(t.name == SHELL_TOOL for t in tools)
    parts = [
        "# Calling tools",
        "You call tools by writing the call in your reply. To call a tool, write a fenced JSON "
        'block with the tool\'s name under "tool" and its arguments under "arguments":',
        f"```json\n{example}\n```",
    ]
    if has_shell:
        parts += [
            f"To run a shell command (the {SHELL_TOOL} tool) you may also write:",
            ">>> RUN COMMAND\nls -la\n<<<",
        ]
    parts += [
        "Rules:\n"
        "- One call per block. Write several blocks to make several calls; they may run in "
        "parallel.\n"
        + (
            "- `>>> RUN COMMAND` and `<<<` each stand alone on their line; always close the "
            "command with `<<<`.\n"
            if has_shell
            else ""
        )
        + "- After your calls, stop writing. The results come back in the next message; never "
        "invent them.\n"
        "- Write these formats only for calls you want to run right now.\n"
        "- When you need no more tools, answer the user in plain text.",
        "# Available tools",
        *(_describe(tool) for tool in tools),
    ]
    return "\n\n".join(parts)


def _describe(tool: ToolSpec) -> str:
    schema = json.dumps(_compact_schema(tool.parameters), ensure_ascii=False, separators=(",", ":"))
    return f"## {tool.name}\n{tool.description.strip()}\nArguments (JSON Schema): {schema}"


_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def _compact_schema(schema: Any) -> Any:
    """Drop Pydantic's ``title`` annotations (tokens the model does not need), but never a
    property that happens to be named "title"."""
    if isinstance(schema, list):
        return [_compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = _compact_schema(value)
    return out


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)[:1]
    placeholders = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    example: dict[str, Any] = {}
    for name in required:
        prop = properties.get(name) or {}
        kind = prop.get("type") if isinstance(prop, dict) else None
        example[name] = placeholders.get(kind, "...") if isinstance(kind, str) else "..."
    return example


def format_tool_results(results: list[tuple[str, dict[str, Any]]], *, marker: str) -> str:
    """The user message that carries tool results back to the model, in call order, between
    untrusted-data markers (``marker``: ``tools_app.untrusted.marker_id``)."""
    if not results:
        return "No tool call was recognised in your reply."
    blocks = []
    for number, (name, result) in enumerate(results, start=1):
        body = json.dumps(result, ensure_ascii=False, indent=2, default=str)
        fence = _fence_for(body)
        blocks.append(f"{number}. {name}\n{fence}json\n{body}\n{fence}")
    return "\n\n".join(
        [
            "Results of your tool calls, in the order you made them:",
            untrusted("\n\n".join(blocks), source="tool results", marker=marker),
            "Continue with the task: call more tools if needed, otherwise answer the user.",
        ]
    )


def _fence_for(body: str) -> str:
    # A result may itself contain ``` (a README, a diff); a longer fence keeps it intact.
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)
