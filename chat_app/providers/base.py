"""The provider contract: plain dataclasses in, a stream of events out.

The agent loop only ever sees these types, never an SDK object, so the two adapters
(``openai_provider``, ``anthropic_provider``) can differ inside without the loop caring.

Conventions shared by both adapters:

* ``stream()`` yields ``TextDelta`` and ``ToolCallStarted`` while the reply arrives and always
  ends with exactly one ``ModelReply``. Wrap the iteration in ``contextlib.aclosing`` if you
  may stop early without cancelling, so the HTTP response is closed at once.
* ``ModelReply.stop_reason`` is the provider's own word (``stop``/``tool_calls``/``length`` for
  OpenAI-compatible servers, ``end_turn``/``tool_use``/``max_tokens`` for Anthropic). Decide on
  ``tool_calls`` being non-empty, not on the stop reason.
* ``ModelReply.usage`` holds ``input_tokens`` (the whole prompt, cached tokens included),
  ``cached_tokens`` (of those, read from the provider's prompt cache) and ``output_tokens``
  when the server reports them; it is empty when the server reports nothing.
* ``ToolCallStarted.index`` counts tool calls within the reply (0, 1, ...) for both providers.
* Every failure is a ``ProviderError`` whose ``retryable`` says whether trying the same
  request again may help; retrying is the caller's business (see ``chat_app.services.retry``).
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import json
import re
import socket
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

import httpx2
import jsonschema

E = TypeVar("E")


@dataclass
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object
    strict: bool = False


@dataclass
class ToolCallRequest:
    id: str
    name: str
    arguments: str  # raw JSON text exactly as the model produced it; may be invalid JSON


@dataclass
class ImagePart:
    """An image for a model with image input (base64, no data: prefix)."""

    mime_type: str
    data: str


@dataclass
class ChatMessage:
    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)  # assistant only
    tool_call_id: str | None = None  # tool only
    name: str | None = None  # tool only: the tool's name
    is_error: bool = False  # tool only
    images: list[ImagePart] = field(default_factory=list)  # user and tool only


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolCallStarted:
    index: int
    id: str
    name: str


@dataclass
class ModelReply:
    text: str
    tool_calls: list[ToolCallRequest]
    stop_reason: str | None
    usage: dict[str, int]


StreamEvent = TextDelta | ToolCallStarted | ModelReply


class ProviderError(Exception):
    """The LLM call failed; ``message`` is meant to be shown to a person as is.

    ``retryable``: the failure is transient (rate limit, overload, server error, a connection
    that broke or stalled, a garbled stream) and the same request may succeed later;
    ``retry_after``: seconds the server asked us to wait (``Retry-After``), if it said.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


class ToolsNotSupported(ProviderError):
    """The endpoint refused the ``tools`` parameter: the caller may retry in text-fallback mode."""


class LLMProvider(ABC):
    kind: ClassVar[str]
    # Anthropic requires max_tokens; OpenAI-compatible servers get it only when asked.
    default_max_tokens: ClassVar[int] = 4096

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 120.0,
        sdk_client: Any = None,
        temperature: float | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        """``sdk_client``: a long-lived SDK client (see ``clients.ClientCache``) to use instead
        of opening and closing one per call. ``temperature`` and ``max_output_tokens``: the
        provider's settings, sent with every request when set (None: the server's default)."""
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.sdk_client = sdk_client
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens

    def sampling(self, max_tokens: int | None = None) -> dict[str, Any]:
        """The request's sampling fields: ``max_tokens`` (a caller's own cap) before the
        provider's; only those set."""
        out: dict[str, Any] = {}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        cap = max_tokens or self.max_output_tokens
        if cap:
            out["max_tokens"] = cap
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model} at {self.base_url}>"

    @classmethod
    @abstractmethod
    def new_sdk_client(cls, *, base_url: str, api_key: str, timeout: float) -> Any:
        """A fresh SDK client; the caller closes it."""

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[Any]:
        # A shared client stays open for the next call; a fresh one is closed, which also
        # drops the HTTP connection of a stream that was cancelled.
        if self.sdk_client is not None:
            yield self.sdk_client
            return
        client = self.new_sdk_client(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout
        )
        async with client:
            yield client

    # Declared as a plain method returning an async iterator so that subclasses can implement
    # it as an ``async def`` generator.
    @abstractmethod
    def stream(
        self,
        *,
        system: str,
        messages: list[ChatMessage],
        tools: list[ToolSpec] | None,
        max_tokens: int | None = None,
        tool_choice: str | None = None,
        grammar: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Stream one model reply; the last item is the assembled ``ModelReply``.
        ``tool_choice``: the name of a tool the model must call (schema-guided agents force
        ``reasoning`` this way); None lets the model choose. ``grammar``: a GBNF grammar the
        reply must follow (``chat_app.fallback_grammar``; llama.cpp servers), sent only by
        adapters whose endpoints take one."""

    @abstractmethod
    async def complete_json(
        self, *, system: str, messages: list[ChatMessage], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """Ask for one JSON object matching ``schema`` (non-streaming)."""


# --- helpers shared by the adapters -------------------------------------------------------

# An error only counts as "tools unsupported" when it names tools AND refuses something: a
# 400 such as "messages with role 'tool' must follow 'tool_calls'" names tools too, but is a
# bug in the history we sent, and falling back to text mode would hide it.
_TOOL_WORDS = re.compile(
    r"\btools\b|\btool[ _-]?(choice|calling|calls? support|use)\b|\bfunction[ _-]?calling\b",
    re.IGNORECASE,
)
_REFUSAL_WORDS = re.compile(
    r"not support|unsupported|requires|not (allowed|permitted|enabled|available)"
    r"|unrecogni[sz]ed|unknown|unexpected|extra (inputs|fields)",
    re.IGNORECASE,
)
TOOLS_UNSUPPORTED_STATUSES = frozenset({400, 404, 422, 500, 501})


def looks_like_tools_unsupported(status_code: int | None, error_text: str) -> bool:
    """Does this HTTP error say the server cannot take the ``tools`` parameter?

    Known wordings: Ollama "... does not support tools", vLLM '"auto" tool choice requires
    --enable-auto-tool-choice', llama.cpp "tools param requires --jinja flag", FastAPI-style
    422 "Extra inputs are not permitted" at ``["body", "tools"]``.
    """
    if status_code not in TOOLS_UNSUPPORTED_STATUSES:
        return False
    return bool(_TOOL_WORDS.search(error_text) and _REFUSAL_WORDS.search(error_text))


def error_body_text(body: object, fallback: str) -> str:
    """The human part of an error body, whatever shape the server chose."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, str):
            return inner
        if isinstance(inner, dict):
            for key in ("message", "msg", "detail"):
                value = inner.get(key)
                if isinstance(value, str) and value:
                    return value
            if "detail" in inner:  # FastAPI validation errors: a list of {loc, msg}
                return json.dumps(inner["detail"], ensure_ascii=False)
        return json.dumps(body, ensure_ascii=False)[:500]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


# Worth another try: timeouts, conflicts, rate limits and every server-side failure but
# "not implemented" (Anthropic's 529 "overloaded" included).
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})


def is_retryable_status(status_code: int) -> bool:
    return status_code in RETRYABLE_STATUSES or (status_code >= 500 and status_code != 501)


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a server asked for: ``retry-after-ms`` (OpenAI), ``Retry-After`` in seconds or
    as an HTTP date. None when absent or unreadable."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


def status_error(
    status_code: int,
    detail: str,
    *,
    base_url: str,
    model: str,
    tools_sent: bool,
    headers: Any = None,
) -> ProviderError:
    """Turn an HTTP error status into a typed error with words an admin can act on."""
    if tools_sent and looks_like_tools_unsupported(status_code, detail):
        return ToolsNotSupported(
            f"the LLM does not accept tool definitions ({status_code}): {detail}",
            status_code=status_code,
        )
    if status_code == 401:
        message = f"the LLM rejected the API key (401): {detail}"
    elif status_code == 403:
        message = f"the LLM refused access (403): {detail}"
    elif status_code == 404:
        message = f"the LLM at {base_url} has no such endpoint or model {model!r} (404): {detail}"
    elif status_code == 429:
        message = f"the LLM is rate limiting or out of quota (429): {detail}"
    elif status_code >= 500:
        message = f"the LLM server failed ({status_code}): {detail}"
    else:
        message = f"the LLM rejected the request ({status_code}): {detail}"
    return ProviderError(
        message,
        status_code=status_code,
        retryable=is_retryable_status(status_code),
        retry_after=retry_after_seconds(headers),
    )


def stream_error(detail: str) -> ProviderError:
    """An error event inside a 200 stream (overload, server trouble mid-reply): transient."""
    return ProviderError(f"the LLM reported an error mid-reply: {detail}", retryable=True)


def assembled(feed: Callable[[Any], Iterable[E]], item: Any) -> list[E]:
    """The events ``feed`` (an assembler's) makes of one stream item; an item of the wrong
    shape is a malformed stream, not a crash."""
    try:
        return list(feed(item))
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        raise malformed_stream_error(exc) from exc


def malformed_stream_error(exc: BaseException) -> ProviderError:
    """The stream carried something that is not the protocol (broken JSON, a wrong shape)."""
    return ProviderError(
        f"the LLM sent a malformed stream event ({type(exc).__name__}: {exc})"[:500],
        retryable=True,
    )


def incomplete_stream_error() -> ProviderError:
    # A stream that stops without its final event was cut off (server crash, proxy timeout);
    # passing the half reply on as complete would silently lose data.
    return ProviderError("the LLM stream ended before the reply was complete", retryable=True)


def connection_error(
    exc: BaseException, *, base_url: str, timeout: float, midway: bool = False
) -> ProviderError:
    """Describe a transport failure by its root cause ("connection refused", ...).

    ``midway``: the reply had started arriving, so the server was reachable and then broke off.
    """
    chain = _exception_chain(exc)
    if any(_is_timeout(e) for e in chain):
        if midway:
            return ProviderError(
                f"the LLM at {base_url} stopped sending for {timeout:g} s mid-reply",
                retryable=True,
            )
        return ProviderError(
            f"the LLM at {base_url} did not answer within {timeout:g} s", retryable=True
        )
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        text = "connection refused"
    elif any(isinstance(e, socket.gaierror) for e in chain):
        text = "the host name does not resolve"
    else:
        text = re.sub(r"^\[Errno -?\d+\]\s*", "", str(chain[-1])).strip()
        text = text or type(chain[-1]).__name__
        text = text[:1].lower() + text[1:]
    if midway:
        return ProviderError(
            f"the connection to the LLM at {base_url} broke mid-reply: {text}", retryable=True
        )
    return ProviderError(f"cannot reach the LLM at {base_url}: {text}", retryable=True)


def as_prebuilt_body(request: dict[str, Any], typed: tuple[str, ...]) -> dict[str, Any]:
    """SDK arguments for a request whose body we built ourselves as plain JSON.

    The SDKs walk every argument against their TypedDicts before sending (a recursive
    transform of each message and each tool schema). Our bodies are already exactly what goes
    on the wire, and with forty tools and a long history that walk cost a sixth of a round's
    CPU at 50 concurrent turns. So only ``typed`` keys (those that shape the SDK's behaviour,
    such as ``stream``) go through it; the rest travel as ``extra_body``, which the SDK merges
    into the JSON unchanged. Required arguments get an empty placeholder that ``extra_body``
    overrides.
    """
    args = {key: request[key] for key in typed if key in request}
    args["messages"] = []
    args["extra_body"] = {k: v for k, v in request.items() if k not in typed}
    return args


def sdk_timeout(timeout: float) -> httpx2.Timeout:
    """``timeout`` bounds every wait for data (a stalled stream included); connecting gets at
    most 10 s, so an unreachable server is reported quickly. The SDKs' aiohttp transport
    bounds the name lookup and the wait for a pooled connection by ``pool`` (its ``connect``)
    and only the socket's connect by ``connect``: both get the 10 s."""
    first = min(timeout, 10.0)
    return httpx2.Timeout(timeout, connect=first, pool=first)


def _exception_chain(exc: BaseException) -> list[BaseException]:
    # SDK errors wrap httpx errors, which wrap OS errors, sometimes only as __context__.
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    # The SDKs' aiohttp transport re-raises aiohttp's errors as httpx errors through a coarse
    # map (any lost connection, a refused one included, becomes ConnectTimeout): where
    # aiohttp's own error is in the chain, it and what it wraps say what happened. (Imported
    # here: only the adapters, loaded on first use, need aiohttp otherwise.)
    import aiohttp

    for at, link in enumerate(chain):
        if isinstance(link, aiohttp.ClientError):
            return chain[at:]
    return chain


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower()


def parse_json_reply(value: str | dict[str, Any] | None, schema: dict[str, Any]) -> dict[str, Any]:
    """Parse (if needed) and validate a structured reply; raise ProviderError if unusable."""
    if isinstance(value, str):
        text = value.strip()
        # Models without real structured output like to wrap JSON in a code fence.
        fenced = re.fullmatch(r"```[\w-]*\s*\n(.*)\n\s*```", text, re.DOTALL)
        if fenced:
            text = fenced.group(1)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProviderError(f"the LLM's structured reply is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ProviderError("the LLM's structured reply is not a JSON object")
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ProviderError(
            f"the LLM's structured reply does not match the schema at {where}: {exc.message}"
        ) from exc
    return value
