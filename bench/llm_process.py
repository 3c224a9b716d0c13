"""The scripted LLM server as its own process, for load benchmarks.

Every request is answered like a model that thinks for ``--delay`` seconds: a user's message
gets a ``current_time`` tool call, a tool result gets a short answer (``--plain``: a user's
message gets the answer at once, a turn of one model reply; ``--mixed``: only a message
asking for the time gets the tool call). ``--log FILE``: one JSON line per request, the
tokens it carries before the person's words (system message and tools, 4 characters a
token, as the usage records estimate). Run by ``bench/concurrency.py`` and
``bench/turn_cost.py``; prints ``ready <port>`` once it listens.

    python -m bench.llm_process --delay 2
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.llm_server import Call, Reply, ScriptedLLM  # noqa: E402

ANSWER = "It is " + "very " * 20 + "late in Tokyo."  # a few dozen tokens, streamed in pieces


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--plain", action="store_true", help="answer without a tool call")
    parser.add_argument("--mixed", action="store_true", help="a tool call only when asked the time")
    parser.add_argument("--host", default="127.0.0.1", help="the address it listens on")
    parser.add_argument("--log", default="", help="a JSON line per request: its tokens")
    args = parser.parse_args()
    log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        last = messages[-1]
        from_tool = last.get("role") == "tool" or (
            isinstance(last.get("content"), list)
            and any(b.get("type") == "tool_result" for b in last["content"])
        )
        words = json.dumps(last.get("content")) if not from_tool else ""
        if log is not None:
            before = [m for m in messages if m.get("role") == "system"]
            chars = len(json.dumps(before)) + len(json.dumps(body.get("tools") or []))
            chars += len(json.dumps(body.get("system") or ""))  # Anthropic's shape
            with lock:
                log.write(
                    json.dumps(
                        {
                            "tools": len(body.get("tools") or []),
                            "before_words_tokens": chars // 4,
                            "first_round": not from_tool,
                        }
                    )
                    + "\n"
                )
        asks_time = "time" in words.lower()
        if from_tool or args.plain or (args.mixed and not asks_time):
            return Reply(text=ANSWER, delay=args.delay, chunk_size=12)
        return Reply(
            text="Let me check.",
            calls=[Call("current_time", {"timezone": "Asia/Tokyo"})],
            delay=args.delay,
        )

    llm = ScriptedLLM(keep_alive=True, host=args.host)  # as real providers: reused connections
    llm.set_default(reply)
    llm.start()
    print(f"ready {llm.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    llm.stop()


if __name__ == "__main__":
    main()
