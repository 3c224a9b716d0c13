"""Metrics and traces of a real distributed deployment: a web process, an agent runner, a
prefork tools worker and beat, each its own process on a private Redis (tests/stack.py).

One turn with a sandboxed tool call is one connected trace whose spans come from the web
process, the runner and the worker (received by a real OTLP/HTTP receiver and decoded with
the official protobuf classes), and every process kind serves its metrics: the web process on
/metrics, the others on their METRICS_PORT."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from chat_app.models import Turn
from tests.conftest import ROOT, child_env, shared_processes_paused, stop_process
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tests.otlp_receiver import OTLPReceiver
from tests.scenarios.workspace import isolated_conversation
from tests.stack import ChatSocket, Stack, free_port
from tools_app.models import ToolCall

pytestmark = [pytest.mark.distributed_only, pytest.mark.slow]


def scrape(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except urllib.error.URLError:  # not listening (yet)
        return 0, ""


def value(text: str, prefix: str) -> float:
    """The sum of the samples whose line starts with ``prefix`` (name and some labels)."""
    found = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)]
    return sum(found)


async def test_a_turn_is_one_trace_across_processes_and_each_process_kind_serves_metrics(
    transactional_db: None, user: Any, llm: Any, provider: Any
) -> None:
    ports = {kind: free_port() for kind in ("runner", "worker", "beat")}
    tracing = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "controlcenter-test",
    }
    with OTLPReceiver() as receiver, shared_processes_paused():
        tracing["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        stack = Stack(
            per_process={
                "runner": {"METRICS_PORT": str(ports["runner"])},
                "worker": {"METRICS_PORT": str(ports["worker"])},
            },
            **tracing,
        )
        beat = None
        try:
            stack.start()
            log = open(ROOT / "var" / "test-beat-metrics.log", "ab")  # noqa: SIM115
            beat = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "controlcenter", "beat", "-l", "WARNING"],
                cwd=ROOT,
                env=child_env(
                    REDIS_URL=stack.redis.url,
                    METRICS_PORT=str(ports["beat"]),
                    SCHEDULES_TICK_SECONDS="0.5",
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            with isolated_conversation(user, title="traced") as conversation:
                llm.script(
                    Reply(
                        text="Checking.",
                        calls=[Call("shell_exec", {"command": "printenv TRACEPARENT"})],
                    ),
                    Reply(text="Done."),
                )
                socket = ChatSocket(stack, conversation.pk, user)
                await socket.connect()
                await socket.send({"action": "send", "text": "where am I traced?"})
                await socket.until_turn_ends(timeout=90)
                await socket.close()
                turn = Turn.objects.get(conversation=conversation)
            assert turn.status == Turn.Status.SUCCEEDED, turn.error
            await _assert_one_trace(receiver, turn)
            _assert_metrics(stack, ports)
        finally:
            if beat is not None:
                stop_process(beat)
            stack.stop()


async def _assert_one_trace(receiver: OTLPReceiver, turn: Turn) -> None:
    trace_id = turn.trace_context.split("-")[1]
    wanted = {"turn", "turn start", "model round", "tool shell_exec", "sandbox exec"}

    def complete() -> list[dict[str, Any]] | None:
        spans = receiver.trace(trace_id)
        rounds = [s for s in spans if s["name"] == "model round"]
        return spans if wanted <= {s["name"] for s in spans} and len(rounds) == 2 else None

    spans = wait_for(complete, timeout=20, message="the turn's spans from every process")
    ids = {s["span_id"] for s in spans}
    roots = [s for s in spans if not s["parent_id"]]
    assert [r["name"] for r in roots] == ["turn"], roots
    assert all(s["parent_id"] in ids for s in spans if s["parent_id"]), "a span hangs loose"
    kinds = {s["resource"]["cc.process.kind"] for s in spans}
    assert {"web", "runner", "worker"} <= kinds, kinds
    assert {s["resource"]["service.name"] for s in spans} == {"controlcenter-test"}
    by_name = {s["name"]: s for s in spans}
    assert by_name["turn"]["resource"]["cc.process.kind"] == "runner"  # it ended the turn
    assert by_name["turn"]["attributes"]["cc.turn.status"] == "succeeded"
    assert by_name["turn start"]["resource"]["cc.process.kind"] == "web"
    tool = by_name["tool shell_exec"]
    assert tool["resource"]["cc.process.kind"] == "worker"
    assert tool["attributes"]["cc.policy.verdict"] == "allowed"
    assert tool["attributes"]["cc.tool.status"] == "succeeded"
    assert tool["attributes"]["cc.sandbox.backend"] in ("docker", "bubblewrap")
    rounds = {s["span_id"] for s in spans if s["name"] == "model round"}
    assert tool["parent_id"] in rounds  # bound by the first round
    assert by_name["sandbox exec"]["parent_id"] == tool["span_id"]
    first = min((s for s in spans if s["name"] == "model round"), key=lambda s: s["start"])
    assert first["attributes"]["gen_ai.usage.input_tokens"] > 0
    assert first["attributes"]["gen_ai.request.model"] == "scripted-model"
    # The command in the sandbox got the context too (TRACEPARENT).
    call = ToolCall.objects.get(turn=turn)
    assert trace_id in call.output


def _assert_metrics(stack: Stack, ports: dict[str, int]) -> None:
    status, web = scrape(f"{stack.url}/metrics")
    assert status == 200
    assert 'cc_process{kind="web"} 1.0' in web
    assert 'cc_queue_depth{queue="agent"}' in web and "cc_approvals_pending 0.0" in web
    status, _ = scrape(f"{stack.url}/metrics", {"X-Forwarded-For": "127.0.0.1"})
    assert status == 403  # proxied: its real address is unknown

    status, runner = scrape(f"http://127.0.0.1:{ports['runner']}/metrics")
    assert status == 200 and 'cc_process{kind="runner"} 1.0' in runner
    assert value(runner, "cc_model_round_seconds_count{") == 2
    assert value(runner, "cc_model_first_token_seconds_count{") == 2
    assert value(runner, 'cc_turns_total{source="chat",status="succeeded"}') == 1
    assert value(runner, 'cc_model_tokens_total{kind="input",model="scripted-model"}') > 0
    assert value(runner, "cc_runner_capacity ") == 1000

    status, worker = scrape(f"http://127.0.0.1:{ports['worker']}/metrics")
    assert status == 200 and 'cc_process{kind="worker"} 1.0' in worker
    shell = 'cc_tool_calls_total{source="chat",status="succeeded",tool="shell_exec"}'
    assert value(worker, shell) == 1  # counted in a prefork child, served by the parent
    assert value(worker, 'cc_tool_call_seconds_count{status="succeeded",tool="shell_exec"}') == 1

    def ticked() -> bool:
        status, beat = scrape(f"http://127.0.0.1:{ports['beat']}/metrics")
        return (
            status == 200
            and 'cc_process{kind="beat"} 1.0' in beat
            and value(beat, "cc_beat_ticks_total") >= 1
        )

    wait_for(ticked, timeout=20, message="beat's metrics to count a tick")
