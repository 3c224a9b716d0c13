"""A scripted LLM server that speaks the real OpenAI and Anthropic HTTP wire protocols.

It is the project's only fake: everything in front of it (the official ``openai`` and
``anthropic`` SDKs, our adapters, the agent loop) runs for real over a TCP socket.

Usage::

    with ScriptedLLM() as llm:
        llm.script(
            Reply(calls=[Call("shell_exec", {"command": "ls"})]),
            lambda body: Reply(text=f"saw {len(body['messages'])} messages"),
        )
        provider = make_provider("openai", base_url=llm.openai_base_url, api_key="", model="m")

Endpoints (``ThreadingHTTPServer`` on 127.0.0.1, ephemeral port, one thread per request):

* ``POST /v1/chat/completions`` - OpenAI Chat Completions. ``stream: true`` answers with SSE
  ``chat.completion.chunk`` objects: a role chunk, text in ``chunk_size`` pieces, tool-call
  deltas (``index`` on each; ``id``/``type``/``function.name`` only on a call's first delta;
  arguments in ``chunk_size`` pieces, round-robin across calls when ``interleave``), a finish
  chunk (``tool_calls``/``stop``), a usage chunk when ``stream_options.include_usage``, then
  ``data: [DONE]``. Without ``stream`` it returns one ``chat.completion``; with a
  ``response_format`` the reply's ``text`` is the content, so script the JSON there.
* ``GET /v1/models`` - a list of the model and ``extra_models`` (with an ``anthropic-version``
  header, checked against the key as Anthropic does); each such request counts in ``model_lists``.
* ``POST /v1/embeddings`` - OpenAI embeddings: for each input text a deterministic vector of
  ``embedding_dims`` floats, a hashed bag of words (each lower-cased word adds ±1 at a
  position its SHA-256 picks), so texts sharing words are similar and others are not.
  ``encoding_format`` ``float`` or ``base64`` (little-endian float32), as the real API.
  Does not consume scripted replies; recorded in ``requests`` like every request.
* ``POST /v1/messages`` - Anthropic Messages. Streaming sends ``message_start``, ``ping``,
  then per block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
  ``input_json_delta``) / ``content_block_stop`` (text first, then one ``tool_use`` block per
  call), ``message_delta`` (``end_turn``/``tool_use`` and usage) and ``message_stop``.
  Anthropic never interleaves blocks, so ``interleave`` is ignored here. Without ``stream``
  it returns a ``message``; when ``tool_choice`` forces a tool and the reply has no calls, the
  reply's ``text`` is parsed as that tool's input (structured output), or sent back as plain
  text if it is not JSON (a model that ignored the instruction).
* Usage: ``Reply.usage`` (``Usage(input, output, cached)``) is reported in each protocol's
  shape (OpenAI's ``prompt_tokens_details.cached_tokens``; Anthropic's
  ``cache_read_input_tokens`` beside ``input_tokens``); unscripted, rough counts are made up.
  ``ScriptedLLM(report_usage=False)`` is a server that reports none.
* A ``stream_error`` goes out after the text as ``data: {"error": ...}`` (OpenAI) or
  ``event: error`` (Anthropic), ending the response the way an overloaded server does.
* Faults for retry tests: ``error`` with ``error_headers`` (a 429 with ``Retry-After``),
  ``reset_after_text`` (the TCP connection is reset mid-stream), ``garbled_after_text`` (a
  data line that is not JSON), ``hang_after_text`` (a stalled stream). ``delay`` is the
  model's thinking time before the response starts (benchmarks use 2 s).

A callable reply that raises is answered with a 500 naming the exception, and the exception
is kept in ``errors``. Responses use chunked transfer encoding and ``Connection: close``
(``keep_alive=True``: streams that end normally keep the connection, as real providers do). The
server notices a client that goes away mid-stream (it watches the socket while pausing) and
counts it in ``disconnects``; ``wait_for_disconnects`` waits for the count from a test.
"""

from __future__ import annotations

import collections
import itertools
import json
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

DEFAULT_MODEL = "scripted-model"


@dataclass
class Call:
    """One tool call in a scripted reply. ``arguments`` as a str is sent raw (may be broken)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # default: a fresh call_/toolu_ id

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    def arguments_object(self) -> dict[str, Any]:
        """For non-streaming Anthropic, whose ``input`` must be an object."""
        if isinstance(self.arguments, dict):
            return self.arguments
        try:
            value = json.loads(self.arguments)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass
class Usage:
    """What the server reports a reply cost: the whole prompt (cached tokens included), of
    which read from the prompt cache, and the output. Sent in each protocol's own shape."""

    input: int
    output: int
    cached: int = 0


@dataclass
class Reply:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    chunk_delay: float = 0.0  # seconds between SSE events
    chunk_size: int = 8  # characters per text / arguments piece
    interleave: bool = True  # OpenAI only: round-robin the deltas of parallel calls
    error: tuple[int, dict[str, Any]] | None = None  # answer with this status and JSON body
    hang_after_text: bool = False  # stream the text, then stall until the client leaves
    # stream the text, then this error object in-stream (as on overload) and end the response
    stream_error: dict[str, Any] | None = None
    # extra response headers with ``error`` (e.g. {"Retry-After": "1"} on a 429)
    error_headers: dict[str, str] = field(default_factory=dict)
    # stream the text, then reset the TCP connection (RST), as a crashing proxy does
    reset_after_text: bool = False
    # stream the text, then this raw SSE data line (not JSON: a garbled stream) and end
    garbled_after_text: str | None = None
    # seconds to think before the response starts (a model's time to first token)
    delay: float = 0.0
    # the usage to report; None: rough counts from the request and the reply (4 characters a
    # token). A server made with ``report_usage=False`` reports none whatever this says.
    usage: Usage | None = None


ReplySource = Reply | Callable[[dict[str, Any]], Reply]


class ScriptedLLM:
    def __init__(
        self,
        *,
        reject_tools: bool = False,
        api_key: str | None = None,
        model: str = DEFAULT_MODEL,
        embedding_dims: int = 64,
        keep_alive: bool = False,
        extra_models: tuple[str, ...] = (),
        report_usage: bool = True,
        host: str = "127.0.0.1",
    ) -> None:
        """``reject_tools``: answer 400 "... does not support tools" to any request carrying
        ``tools`` (as Ollama does for models without tool support). ``api_key``: when set,
        requests must carry it (``Authorization: Bearer``, or ``x-api-key`` for Anthropic) or
        get a 401. ``keep_alive``: a stream that ends normally leaves its connection open for
        the client's next request, as real providers do (benchmarks); otherwise every response
        closes its connection. ``report_usage=False``: a server that reports no token counts
        (no usage chunk for OpenAI even when asked; no ``usage`` in Anthropic's events), as
        some compatible servers do. ``host``: the address it listens on (the fleet suite's
        containers reach it on their network's gateway)."""
        self.host = host
        self.reject_tools = reject_tools
        self.keep_alive = keep_alive
        self.report_usage = report_usage
        self.api_key = api_key
        self.model = model
        self.extra_models = list(extra_models)  # listed by GET /models besides ``model``
        self.model_lists = 0
        self.embedding_dims = embedding_dims
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self.errors: list[Exception] = []  # raised by callable replies (answered with a 500)
        self._queue: collections.deque[ReplySource] = collections.deque()
        self._default: ReplySource = Reply(text="(no scripted reply)")
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        if self._server is None:
            self._stopping.clear()
            self._server = _Server((self.host, 0), _Handler)
            self._server.llm = self
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="scripted-llm",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # releases handlers stalled by hang_after_text
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ScriptedLLM is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def openai_base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- scripting -----------------------------------------------------------------------

    def script(self, *replies: ReplySource) -> None:
        """Queue replies, used one per request. A callable gets the request body (with
        ``_path``) and returns the Reply, e.g. to answer according to tool results."""
        with self._lock:
            self._queue.extend(replies)

    def set_default(self, reply: ReplySource) -> None:
        """The reply used whenever the queue is empty."""
        with self._lock:
            self._default = reply

    def wait_for_disconnects(self, count: int = 1, timeout: float = 2.0) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self.disconnects >= count, timeout=timeout)

    # --- used by the handler -------------------------------------------------------------

    def _record(self, body: dict[str, Any], path: str, client: str = "") -> dict[str, Any]:
        entry = {**body, "_path": path, "_client": client}
        with self._lock:
            self.requests.append(entry)
        return entry

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            source = self._queue.popleft() if self._queue else self._default
        return source if isinstance(source, Reply) else source(body)

    def _client_left(self) -> None:
        with self._lock:
            self.disconnects += 1
            self._lock.notify_all()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # hundreds of conversations connect at once in benchmarks
    llm: ScriptedLLM


class _ClientGone(Exception):
    """The client closed the connection before the response was complete."""


class _Stopping(Exception):
    """The server is shutting down; abandon the response."""


class _EventStream:
    """Writes SSE events as HTTP/1.1 chunks, pausing between them while watching the socket."""

    def __init__(
        self, handler: _Handler, delay: float, stopping: threading.Event, *, named: bool
    ) -> None:
        self._handler = handler
        self._named = named  # Anthropic names every event after its payload's "type"
        self._delay = delay
        self._stopping = stopping
        self._sent = 0
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        if not handler.server.llm.keep_alive:
            handler.send_header("Connection", "close")
        handler.end_headers()

    def send(self, data: dict[str, Any] | str) -> None:
        if self._sent and self._delay:
            self.pause(self._delay)
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        frame = f"data: {text}\n\n"
        if self._named and isinstance(data, dict):
            frame = f"event: {data['type']}\n{frame}"
        self._write_chunk(frame.encode())
        self._sent += 1

    def end(self) -> None:
        self._write(b"0\r\n\r\n")

    def hang(self) -> None:
        self.pause(float("inf"))

    def pause(self, seconds: float) -> None:
        """Sleep, but notice at once when the client hangs up or the server stops."""
        self.wait(self._handler, seconds, self._stopping)

    def reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), mid-response."""
        sock = self._handler.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        raise _Stopping

    def raw(self, line: str) -> None:
        """A raw SSE data line, not necessarily JSON (under a delta's name for Anthropic)."""
        name = "event: content_block_delta\n" if self._named else ""
        self._write_chunk(f"{name}data: {line}\n\n".encode())

    @staticmethod
    def wait(handler: _Handler, seconds: float, stopping: threading.Event) -> None:
        deadline = time.monotonic() + seconds
        sock = handler.connection
        while True:
            if stopping.is_set():
                raise _Stopping
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            readable, _, _ = select.select([sock], [], [], min(remaining, 0.05))
            # The client sends nothing more on this connection, so readable means EOF/reset.
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        raise _ClientGone
                except OSError as exc:
                    raise _ClientGone from exc

    def _write_chunk(self, payload: bytes) -> None:
        self._write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

    def _write(self, data: bytes) -> None:
        try:
            self._handler.wfile.write(data)
            self._handler.wfile.flush()
        except OSError as exc:  # BrokenPipe / ConnectionReset
            raise _ClientGone from exc


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self.close_connection = True
        llm = self.server.llm
        api = "anthropic" if self.headers.get("anthropic-version") else "openai"
        refusal = self._auth_refusal(api)
        if refusal is not None:
            self._send_json(*refusal)
        elif urlsplit(self.path).path.rstrip("/") in ("/v1/models", "/models"):
            llm.model_lists += 1
            names = [llm.model, *llm.extra_models]
            models = [
                {"id": name, "object": "model", "created": 0, "owned_by": "scripted"}
                for name in names
            ]
            self._send_json(200, {"object": "list", "data": models, "has_more": False})
        else:
            self._send_json(404, _openai_error(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        self.close_connection = True
        llm = self.server.llm
        path = urlsplit(self.path).path.rstrip("/")
        api = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}.get(path)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as exc:
            self._send_json(400, _openai_error(f"request body is not JSON: {exc}"))
            return
        body = llm._record(
            body if isinstance(body, dict) else {"_body": body}, path, self.client_address[0]
        )
        if path == "/v1/embeddings":
            self._send_json(*(self._auth_refusal("openai") or _embeddings(body, llm)))
            return
        if api is None:
            self._send_json(404, _openai_error(f"no route POST {path}", "not_found"))
            return
        refusal = self._refusal(api, body)
        if refusal is not None:
            self._send_json(*refusal)
            return
        try:
            reply = llm._next_reply(body)
        except Exception as exc:  # a broken callable reply: fail loudly, not with a hang-up
            llm.errors.append(exc)
            self._send_json(500, _openai_error(f"scripted reply raised {exc!r}", "script_error"))
            return
        if reply.delay:
            try:
                _EventStream.wait(self, reply.delay, llm._stopping)
            except (_ClientGone, _Stopping):
                llm._client_left()
                return
        if reply.error is not None:
            self._send_json(*reply.error, headers=reply.error_headers)
            return
        try:
            if not body.get("stream"):
                build = _openai_completion if api == "openai" else _anthropic_message
                self._send_json(200, build(reply, body, llm.model))
                return
            named = api == "anthropic"
            events = _EventStream(self, reply.chunk_delay, llm._stopping, named=named)
            writer = _openai_stream if api == "openai" else _anthropic_stream
            writer(events, reply, body, llm.model, llm.report_usage)
            events.end()
            self.close_connection = not llm.keep_alive
        except _ClientGone:
            llm._client_left()
        except _Stopping:
            pass

    def _auth_refusal(self, api: str) -> tuple[int, dict[str, Any]] | None:
        key = self.server.llm.api_key
        if key is None:
            return None
        bearer = self.headers.get("Authorization") == f"Bearer {key}"
        if api == "openai" and not bearer:
            return 401, _openai_error("Incorrect API key provided.", "invalid_api_key")
        # anthropic 2.x sends the key as a bearer token, older SDKs as x-api-key
        if api == "anthropic" and not (bearer or self.headers.get("x-api-key") == key):
            return 401, _anthropic_error("authentication_error", "invalid x-api-key")
        return None

    def _refusal(self, api: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        llm = self.server.llm
        refusal = self._auth_refusal(api)
        if refusal is not None:
            return refusal
        if llm.reject_tools and body.get("tools"):
            model = body.get("model", llm.model)
            if api == "openai":  # Ollama's wording
                message = f"registry.ollama.ai/library/{model} does not support tools"
                return 400, _openai_error(message, None, "api_error")
            return 400, _anthropic_error("invalid_request_error", f"{model} does not support tools")
        return None

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.server.llm._client_left()


# --- wire formats ------------------------------------------------------------------------


def _openai_error(
    message: str, code: str | None = None, type_: str = "invalid_request_error"
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _anthropic_error(type_: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}}


def embedding_vector(text: str, dims: int) -> list[float]:
    """The scripted server's embedding of ``text``: a hashed bag of words (not normalised)."""
    import hashlib
    import re

    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        index = int.from_bytes(digest[:4], "little") % dims
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    return vector


def _embeddings(body: dict[str, Any], llm: ScriptedLLM) -> tuple[int, dict[str, Any]]:
    import base64
    import struct

    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return 400, _openai_error("'input' must be a string or a non-empty list of strings")
    encoding = body.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        return 400, _openai_error(f"unknown encoding_format {encoding!r}")
    data = []
    for i, text in enumerate(texts):
        vector = embedding_vector(text, llm.embedding_dims)
        value: Any = vector
        if encoding == "base64":
            value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": i, "embedding": value})
    tokens = sum(len(t.split()) for t in texts)
    return 200, {
        "object": "list",
        "data": data,
        "model": body.get("model", llm.model),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _pieces(text: str, size: int) -> list[str]:
    if size <= 0 or len(text) <= size:
        return [text] if text else []
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(reply: Reply, body: dict[str, Any]) -> Usage:
    if reply.usage is not None:
        return reply.usage
    # Rough token counts (4 characters a token) so usage is plausible and non-zero.
    prompt = len(json.dumps(body.get("messages", []))) + len(str(body.get("system", "")))
    output = len(reply.text) + sum(len(c.arguments_text) for c in reply.calls)
    return Usage(max(1, prompt // 4), max(1, output // 4))


def _openai_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _anthropic_usage(usage: Usage, *, output: int) -> dict[str, Any]:
    # Anthropic counts cache reads apart from input_tokens.
    return {
        "input_tokens": usage.input - usage.cached,
        "cache_read_input_tokens": usage.cached,
        "cache_creation_input_tokens": 0,
        "output_tokens": output,
    }


def _call_ids(reply: Reply, prefix: str) -> list[str]:
    return [c.id or f"{prefix}{uuid.uuid4().hex[:24]}" for c in reply.calls]


def _after_text(events: _EventStream, reply: Reply) -> None:
    """The faults a reply may end in once its text is out."""
    if reply.hang_after_text:
        events.hang()
    if reply.reset_after_text:
        events.reset()
    if reply.garbled_after_text is not None:
        events.raw(reply.garbled_after_text)
        events.end()
        raise _Stopping


def _openai_completion(reply: Reply, body: dict[str, Any], model: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        # OpenAI sends null content alongside tool calls
        "content": reply.text if reply.text or not reply.calls else None,
        "refusal": None,
    }
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_text},
            }
            for call, call_id in zip(reply.calls, _call_ids(reply, "call_"), strict=True)
        ]
    usage = _usage(reply, body)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", model),
        "system_fingerprint": "fp_scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": _openai_usage(usage),
    }


def _openai_call_deltas(reply: Reply) -> Iterator[dict[str, Any]]:
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(
        zip(reply.calls, _call_ids(reply, "call_"), strict=True)
    ):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        rest = [
            {"index": index, "function": {"arguments": piece}}
            for piece in _pieces(call.arguments_text, reply.chunk_size)
        ]
        per_call.append([first, *rest])
    if not reply.interleave:
        yield from itertools.chain.from_iterable(per_call)
        return
    for round_ in itertools.zip_longest(*per_call):
        yield from (delta for delta in round_ if delta is not None)


def _openai_stream(
    events: _EventStream, reply: Reply, body: dict[str, Any], model: str, report_usage: bool
) -> None:
    asked = bool((body.get("stream_options") or {}).get("include_usage"))
    include_usage = asked and report_usage
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", model),
        "system_fingerprint": "fp_scripted",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        payload = {**base, "choices": [choice]}
        if include_usage:
            payload["usage"] = None  # as OpenAI does: null on every chunk but the last
        events.send(payload)

    chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in _pieces(reply.text, reply.chunk_size):
        chunk({"content": piece})
    _after_text(events, reply)
    if reply.stream_error is not None:
        events.send({"error": reply.stream_error})
        return
    for delta in _openai_call_deltas(reply):
        chunk({"tool_calls": [delta]})
    chunk({}, "tool_calls" if reply.calls else "stop")
    if include_usage:
        events.send({**base, "choices": [], "usage": _openai_usage(_usage(reply, body))})
    events.send("[DONE]")


def _anthropic_message(reply: Reply, body: dict[str, Any], model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    forced = body.get("tool_choice") or {}
    if forced.get("type") == "tool" and not reply.calls:
        try:
            answer = json.loads(reply.text)
        except json.JSONDecodeError:
            answer = None
        if isinstance(answer, dict):
            tool_id = f"toolu_{uuid.uuid4().hex[:24]}"
            content.append(
                {"type": "tool_use", "id": tool_id, "name": forced["name"], "input": answer}
            )
        else:
            content.append({"type": "text", "text": reply.text})
    else:
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call, call_id in zip(reply.calls, _call_ids(reply, "toolu_"), strict=True):
            content.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": call.name,
                    "input": call.arguments_object(),
                }
            )
    usage = _usage(reply, body)
    uses_tool = any(block["type"] == "tool_use" for block in content)
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", model),
        "content": content,
        "stop_reason": "tool_use" if uses_tool else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(usage, output=usage.output),
    }


def _anthropic_stream(
    events: _EventStream, reply: Reply, body: dict[str, Any], model: str, report_usage: bool
) -> None:
    usage = _usage(reply, body)
    message: dict[str, Any] = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", model),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }
    if report_usage:
        message["usage"] = _anthropic_usage(usage, output=1)
    events.send({"type": "message_start", "message": message})
    events.send({"type": "ping"})
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if (
        reply.text
        or reply.hang_after_text
        or reply.stream_error is not None
        or reply.reset_after_text
        or reply.garbled_after_text is not None
    ):
        pieces = _pieces(reply.text, reply.chunk_size)
        text_deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        blocks.append(({"type": "text", "text": ""}, text_deltas))
    for call, call_id in zip(reply.calls, _call_ids(reply, "toolu_"), strict=True):
        # Anthropic opens every tool_use block with an empty partial_json.
        pieces = ["", *_pieces(call.arguments_text, reply.chunk_size)]
        json_deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        blocks.append(
            ({"type": "tool_use", "id": call_id, "name": call.name, "input": {}}, json_deltas)
        )
    for index, (block, deltas) in enumerate(blocks):
        events.send({"type": "content_block_start", "index": index, "content_block": block})
        for delta in deltas:
            events.send({"type": "content_block_delta", "index": index, "delta": delta})
        if block["type"] == "text":
            _after_text(events, reply)
        if block["type"] == "text" and reply.stream_error is not None:
            events.send({"type": "error", "error": reply.stream_error})
            return
        events.send({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None}
    delta: dict[str, Any] = {"type": "message_delta", "delta": stop}
    if report_usage:
        delta["usage"] = {"output_tokens": usage.output}
    events.send(delta)
    events.send({"type": "message_stop"})
