"""The scripted LLM server as its own process, for load benchmarks.

Every request is answered like a model that thinks for ``--delay`` seconds: a user's message
gets a ``current_time`` tool call, a tool result gets a short answer (``--plain``: a user's
message gets the answer at once, a turn of one model reply). Run by
``bench/concurrency.py``; prints ``ready <port>`` once it listens.

    python -m bench.llm_process --delay 2
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--host", default="127.0.0.1", help="the address it listens on")
    args = parser.parse_args()

    def reply(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        last = messages[-1]
        from_tool = last.get("role") == "tool" or (
            isinstance(last.get("content"), list)
            and any(b.get("type") == "tool_result" for b in last["content"])
        )
        if from_tool or args.plain:
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
