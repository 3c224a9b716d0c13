"""A scripted agent for scenario tests: it reads the tool results in each request, the way a
model would, checks them against what its plan expects, and only then takes the next step.

A plan is a list of ``Step``\\ s. Step *n* looks at the results of step *n-1*'s calls (the
``expect`` checks) and answers with its own calls, or with plain text when it has none. The
replies are written in one of three dialects:

* ``openai``: native ``tool_calls``; results come back as ``tool`` messages;
* ``anthropic``: ``tool_use`` blocks; results come back as ``tool_result`` blocks;
* ``text``: the text fallback - ``shell_exec`` calls as ``>>> RUN COMMAND`` blocks, every
  other tool as a fenced JSON call; results come back as one user message of fenced JSON.

A check that does not hold raises ``AssertionError``; the scripted server answers that
request with a 500 and keeps the exception in ``ScriptedLLM.errors``, so the turn fails and
``assert_no_surprises`` names the step and the result that broke the plan.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.helpers import data_of
from tests.llm_server import Call, Reply, ScriptedLLM

SHELL = "shell_exec"
GATE_TIMEOUT = 60.0


@dataclass
class Seen:
    """One tool result as the model receives it."""

    tool: str
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.get("success") is True


Check = Callable[[list[Seen]], None]


@dataclass
class Step:
    name: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str = ""
    expect: list[Check] = field(default_factory=list)  # on the previous step's results
    # Set by the test when it may go on (e.g. once the page showed the previous results): the
    # reply waits for it, as a slow model would.
    gate: threading.Event | None = None


@dataclass
class Transcript:
    """What the agent saw at each step, for assertions after the turn."""

    seen: list[list[Seen]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


# --- reading results out of a request ----------------------------------------------------


def _json(text: Any) -> dict[str, Any]:
    if isinstance(text, str) and text.startswith("<<untrusted-data "):
        text = data_of(text)
    value = json.loads(text if isinstance(text, str) else json.dumps(text))
    assert isinstance(value, dict), f"a tool result is not a JSON object: {text!r}"
    return value


def _openai_results(body: dict[str, Any]) -> list[Seen]:
    messages = body["messages"]
    tail: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        tail.insert(0, message)
    if not tail:
        return []
    assistant = messages[-len(tail) - 1]
    names = {c["id"]: c["function"]["name"] for c in assistant.get("tool_calls") or []}
    return [Seen(names.get(m["tool_call_id"], "?"), _json(m["content"])) for m in tail]


def _anthropic_results(body: dict[str, Any]) -> list[Seen]:
    messages = body["messages"]
    last = messages[-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if not results:
        return []
    names = {
        b["id"]: b["name"]
        for b in (messages[-2]["content"] if len(messages) > 1 else [])
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    seen = []
    for block in results:
        content = block["content"]
        if isinstance(content, list):  # [{"type": "text", "text": ...}]
            content = "".join(part.get("text", "") for part in content)
        seen.append(Seen(names.get(block["tool_use_id"], "?"), _json(content)))
    return seen


_RESULT = re.compile(
    r"^(\d+)\. (\S+)\n(?P<fence>`{3,})json\n(?P<body>.*?)\n(?P=fence)$", re.M | re.S
)


def _text_results(body: dict[str, Any]) -> list[Seen]:
    last = body["messages"][-1]
    content = last["content"] if last["role"] == "user" else ""
    if not isinstance(content, str) or "Results of your tool calls" not in content:
        return []
    return [Seen(m.group(2), _json(m.group("body"))) for m in _RESULT.finditer(content)]


READERS = {"openai": _openai_results, "anthropic": _anthropic_results, "text": _text_results}


# --- writing a step as a reply --------------------------------------------------------------


def _as_text(step: Step) -> str:
    parts = [step.text] if step.text else []
    for tool, arguments in step.calls:
        if tool == SHELL:
            parts.append(f">>> RUN COMMAND\n{arguments['command']}\n<<<")
        else:
            call = json.dumps({"tool": tool, "arguments": arguments}, indent=1)
            parts.append(f"```json\n{call}\n```")
    return "\n\n".join(parts)


def _reply(step: Step, dialect: str) -> Reply:
    if dialect == "text":
        return Reply(text=_as_text(step))
    return Reply(text=step.text, calls=[Call(tool, args) for tool, args in step.calls])


def scripted_agent(
    llm: ScriptedLLM, plan: list[Step], *, dialect: str, task: str = ""
) -> Transcript:
    """Queue the plan on ``llm`` as callables that check what they see before they answer."""
    read = READERS[dialect]
    transcript = Transcript()

    def responder(number: int) -> Callable[[dict[str, Any]], Reply]:
        step = plan[number]
        before = plan[number - 1] if number else None

        def respond(body: dict[str, Any]) -> Reply:
            where = f"step {number + 1} ({step.name})"
            transcript.requests.append(body)
            seen = read(body)
            transcript.seen.append(seen)
            if before is None:
                last = body["messages"][-1]
                assert seen == [], f"{where}: results before any call: {seen}"
                if task:
                    assert task in json.dumps(last["content"]), f"{where}: task missing: {last}"
            else:
                expected = [tool for tool, _ in before.calls]
                got = [s.tool for s in seen]
                assert got == expected, f"{where}: expected results of {expected}, got {seen}"
            for check in step.expect:
                try:
                    check(seen)
                except AssertionError as exc:
                    raise AssertionError(f"{where}: {exc}; the results were {seen}") from None
            if step.gate is not None:
                assert step.gate.wait(GATE_TIMEOUT), f"{where}: the test never opened the gate"
            return _reply(step, dialect)

        return respond

    llm.script(*(responder(n) for n in range(len(plan))))
    return transcript


def assert_no_surprises(llm: ScriptedLLM) -> None:
    if llm.errors:
        raise AssertionError(f"the scripted agent met a result it did not expect: {llm.errors[0]}")


# --- checks ---------------------------------------------------------------------------------


def succeeded(seen: list[Seen]) -> None:
    bad = [s for s in seen if not s.ok]
    assert not bad, f"calls failed: {bad}"


def failed_with(*words: str) -> Check:
    """Every result failed, and its error or output mentions each of ``words``."""

    def check(seen: list[Seen]) -> None:
        for s in seen:
            assert not s.ok, f"{s.tool} was expected to fail"
            text = json.dumps(s.result)
            missing = [w for w in words if w not in text]
            assert not missing, f"{s.tool} result lacks {missing}"

    return check


def output_has(*words: str) -> Check:
    def check(seen: list[Seen]) -> None:
        text = json.dumps([s.result for s in seen])
        missing = [w for w in words if w not in text]
        assert not missing, f"results lack {missing}"

    return check
