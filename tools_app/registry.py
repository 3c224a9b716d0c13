"""The two registries: tools (what the model sees) and activities (what really runs).

A tool is a Pydantic model. Subclassing ``BaseTool`` registers it; its name is derived from the
class name (``CurrentTime`` → ``current_time``) unless given, its description is the docstring,
its fields are the arguments. ``BaseTool[ShellSettings]`` names the group's settings model, so
``check_policy`` gets them typed (checked against the group when the tool registers).

An activity is a function registered under a name; a tool runs the activity of its own name
unless it names another one (``activity=...``, the seed's ``_activity``), so several schemas can
share one implementation. A tool without any activity is *latent*: the model itself produces
its declared ``output`` (see services/latent.py). An activity's context carries the settings
of the group it belongs to, typed the same way (``ActivityContext[ShellSettings]``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

from tools_app.group_settings import GroupSettings as GroupSettings  # the executors' import
from tools_app.group_settings import SettingsT as SettingsT
from tools_app.schema import plain_schema, strict_schema, supports_strict

if TYPE_CHECKING:
    from tools_app.previews import Preview, PreviewContext
    from tools_app.runtime import ActivityContext, BindContext, Caller


def secret_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """Names of a settings model's ``SecretStr`` fields: stored encrypted
    (``ToolGroupConfig.secrets``), write-only in the Tools Manager, never in the audit log."""
    return tuple(name for name, info in model.model_fields.items() if info.annotation is SecretStr)


@dataclass(frozen=True)
class ToolGroup:
    name: str
    label: str
    description: str
    settings_model: type[GroupSettings] = GroupSettings
    order: int = 100
    queue: str = "tools"
    sandboxed: bool = False
    tools: list[type[BaseTool]] = field(default_factory=list, compare=False, hash=False)
    # For the Tools Manager: what the group runs on and whether it is there, as
    # (state "ok"|"bad"|"unknown", short label, detail). Called with the group's settings.
    status: Callable[[Any], tuple[str, str, str]] | None = field(
        default=None, compare=False, hash=False
    )
    # For the Tools Manager: things the group offers besides its functions (e.g. the skills
    # it found), as rows {"name", "description", "note"}. Called with the group's settings.
    listing: Callable[[Any], list[dict[str, str]]] | None = field(
        default=None, compare=False, hash=False
    )
    # For the Tools Manager's overview: the settings fields that say most about what the
    # group may do (shown with the group; the timeout when none are named).
    limits: tuple[str, ...] = field(default=(), compare=False, hash=False)
    # What makes the group a source of untrusted content ("web pages", "documents"); empty:
    # its results are not someone else's words. Once a result of a source enters a turn, the
    # turn's calls that send something out wait for a person (tools_app.guards.untrusted).
    untrusted_source: str = field(default="", compare=False, hash=False)


GROUPS: dict[str, ToolGroup] = {}
TOOLS: dict[str, type[BaseTool]] = {}
ACTIVITIES: dict[str, Activity] = {}
_lock = threading.Lock()


def register_group(group: ToolGroup) -> ToolGroup:
    GROUPS[group.name] = group
    return group


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_CAMEL = re.compile(r"^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$")


def _camel(key: object, fields: dict[str, Any]) -> str:
    """The snake_case field a camelCase argument (``startLine``, ``topK``) names, or ""."""
    if not isinstance(key, str) or key in fields or not _CAMEL.match(key):
        return ""
    snake = _snake(key)
    return snake if snake in fields else ""


class BaseTool(BaseModel, Generic[SettingsT]):
    """Base of every LLM-callable function. Subclass with class keywords, naming the group's
    settings model as the type parameter::

    class CurrentTime(BaseTool[TimeSettings], group="time"):
        '''Return the current date and time.'''
        timezone: str = Field("UTC", description="IANA timezone name")
    """

    model_config = ConfigDict(extra="forbid")

    tool_name: ClassVar[str] = ""
    tool_group: ClassVar[str] = ""
    tool_activity: ClassVar[str | None] = None
    tool_output: ClassVar[type[BaseModel] | None] = None
    tool_slash: ClassVar[str | None] = None
    # Argument names a tool had before its schema followed the seeds, mapped to today's
    # (old → new): calls written for the old schema (saved prompts, schedules' slash
    # commands) keep working; the model is shown only the new names. Besides these, every
    # snake_case argument is also taken in camelCase (``startLine``, ``topK``: the seeds'
    # spelling, and what many models write); the model is shown the snake_case name.
    field_aliases: ClassVar[dict[str, str]] = {}

    def __init_subclass__(
        cls,
        *,
        name: str | None = None,
        group: str = "",
        activity: str | None = None,
        output: type[BaseModel] | None = None,
        slash: str | None = None,
        abstract: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        cls.tool_name = name or _snake(cls.__name__)
        cls.tool_group = group
        cls.tool_activity = activity
        cls.tool_output = output
        cls.tool_slash = slash

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.__pydantic_generic_metadata__["origin"] is not None:
            cls.tool_name = ""  # BaseTool[XSettings]: a base naming a settings type, not a tool
            return
        if not cls.tool_name or kwargs.get("abstract"):
            return
        if not cls.tool_group or cls.tool_group not in GROUPS:
            raise TypeError(f"tool {cls.tool_name}: unknown group {cls.tool_group!r}")
        model, declared = GROUPS[cls.tool_group].settings_model, _declared_settings(cls)
        if declared is not None and not issubclass(model, declared):
            raise TypeError(
                f"tool {cls.tool_name}: group {cls.tool_group!r} has {model.__name__}, "
                f"not the {declared.__name__} the tool names"
            )
        with _lock:
            existing = TOOLS.get(cls.tool_name)
            if existing is not None and existing.__qualname__ != cls.__qualname__:
                raise TypeError(f"tool name {cls.tool_name!r} registered twice")
            TOOLS[cls.tool_name] = cls
            tools = GROUPS[cls.tool_group].tools
            tools[:] = [t for t in tools if t.tool_name != cls.tool_name] + [cls]

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        # Strict schemas make optional arguments nullable (strict mode has no optional keys),
        # so a model that follows them sends null for "not given": take the default then.
        if not isinstance(data, dict):
            return data
        if cls.field_aliases or any(_camel(key, cls.model_fields) for key in data):
            data = dict(data)
            for old, new in cls.field_aliases.items():
                if old in data and new not in data:
                    data[new] = data.pop(old)
            for key in list(data):
                snake = _camel(key, cls.model_fields)
                # Both spellings at once stay an error (extra_forbidden names the camelCase).
                if snake and snake not in data:
                    data[snake] = data.pop(key)
        return {
            key: value
            for key, value in data.items()
            if not (
                value is None
                and key in cls.model_fields
                and not cls.model_fields[key].is_required()
            )
        }

    # --- what the model sees ---------------------------------------------------------------
    @classmethod
    def description(cls) -> str:
        return " ".join((cls.__doc__ or "").split())

    @classmethod
    def openai_schema(cls, *, strict: bool = True) -> dict[str, Any]:
        strict = strict and supports_strict(cls)
        parameters = strict_schema(cls) if strict else plain_schema(cls)
        function: dict[str, Any] = {
            "name": cls.tool_name,
            "description": cls.description(),
            "parameters": parameters,
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    @classmethod
    def anthropic_schema(cls) -> dict[str, Any]:
        return {
            "name": cls.tool_name,
            "description": cls.description(),
            "input_schema": plain_schema(cls),
        }

    @classmethod
    def example(cls) -> dict[str, Any]:
        """Arguments that make a sensible first Test: field examples, then defaults."""
        out: dict[str, Any] = {}
        for key, info in cls.model_fields.items():
            if info.examples:
                out[key] = info.examples[0]
            elif not info.is_required():
                default = info.get_default(call_default_factory=True)
                if default is not None:
                    out[key] = default
        return out

    @classmethod
    def from_shorthand(cls, text: str) -> dict[str, Any]:
        """Arguments from a slash-command shorthand (``/file_read upload.csv``): the text is
        the one required argument when the schema has exactly one and it is a string; other
        tools take JSON unless they say how (``/shell ls -la``)."""
        field = cls.plain_text_field()
        if field is None:
            raise ValueError(
                f"/{cls.tool_name} takes JSON arguments, e.g. /{cls.tool_name} {{...}}"
            )
        return {field: text}

    @classmethod
    def plain_text_field(cls) -> str | None:
        """The schema's one required argument when it is a string, else None."""
        parameters = cls.openai_schema(strict=False)["function"]["parameters"]
        required = parameters.get("required") or []
        if len(required) != 1:
            return None
        prop = (parameters.get("properties") or {}).get(required[0])
        kind = prop.get("type") if isinstance(prop, dict) else None
        if kind == "string" or (isinstance(kind, list) and "string" in kind):
            return str(required[0])
        return None

    # --- policy ----------------------------------------------------------------------------
    def check_policy(self, settings: SettingsT, ctx: BindContext) -> None:
        """Raise PolicyDenied when the admin's settings (the tool group's) forbid these
        arguments."""

    @classmethod
    def caller_refusal(cls, settings: SettingsT, caller: Caller) -> str | None:
        """Why the admin's settings refuse this function to ``caller`` whatever the arguments
        (None: they do not). ``check_policy`` raises it at binding, and the model is not offered
        a function it names (``tools_app.services.decision.usable_tools``): one check for both."""
        return None

    def sink(self, settings: SettingsT) -> str:
        """What this call would send out of the conversation ("a POST to api.example.com"),
        or "" when it sends nothing: after untrusted content entered the turn, a sink waits
        for a person (tools_app.guards.untrusted)."""
        return ""


def _declared_settings(tool: type[BaseTool]) -> type[GroupSettings] | None:
    """The settings model a tool names (``BaseTool[ShellSettings]``), if it names one."""
    for klass in tool.__mro__:
        meta = getattr(klass, "__pydantic_generic_metadata__", None) or {}
        if meta.get("origin") is BaseTool and meta.get("args"):
            declared = meta["args"][0]
            return declared if isinstance(declared, type) else None
    return None


Activity = Callable[[Any, "ActivityContext[Any]"], dict[str, Any]]
ActivityFn = TypeVar("ActivityFn", bound=Activity)


def activity(name: str) -> Callable[[ActivityFn], ActivityFn]:
    """Register ``fn(args, ctx) -> dict`` as the activity called ``name``; ``ctx`` is an
    ``ActivityContext`` of the settings model of the group the activity belongs to."""

    def decorate(fn: ActivityFn) -> ActivityFn:
        ACTIVITIES[name] = fn
        return fn

    return decorate


def activity_name(tool: type[BaseTool]) -> str:
    return tool.tool_activity or tool.tool_name


def resolve_activity(tool: type[BaseTool]) -> Activity | None:
    return ACTIVITIES.get(activity_name(tool))


def is_latent(tool: type[BaseTool]) -> bool:
    return resolve_activity(tool) is None


# What a call would do, shown to whoever decides its approval (``preview.py`` of an executor
# package): registered by activity name like the activities, so every schema that runs an
# activity (the dev group's ``write_file`` runs ``file_write``) gets its preview.
PreviewHook = Callable[[Any, "PreviewContext"], "Preview"]
PreviewFn = TypeVar("PreviewFn", bound=PreviewHook)
PREVIEWS: dict[str, PreviewHook] = {}


def preview(name: str) -> Callable[[PreviewFn], PreviewFn]:
    """Register ``fn(args, ctx) -> Preview`` as the preview of the activity called ``name``:
    it reads (never writes) what the call would change, in the web process, and raises
    ``PreviewUnavailable`` with the reason when it cannot say."""

    def decorate(fn: PreviewFn) -> PreviewFn:
        PREVIEWS[name] = fn
        return fn

    return decorate


def resolve_preview(tool: type[BaseTool]) -> PreviewHook | None:
    return PREVIEWS.get(activity_name(tool))


# How a tool without an activity runs: the model produces its output (``chat_app`` sets it at
# ready(), since only the chat knows the providers). None: such a tool cannot run.
LatentExecutor = Callable[[type[BaseTool], BaseTool, "ActivityContext[Any]"], dict[str, Any]]
_latent: LatentExecutor | None = None


def latent_executor_set(execute: LatentExecutor | None) -> None:
    global _latent
    _latent = execute


def latent_executor() -> LatentExecutor | None:
    return _latent


@contextmanager
def override_activity(name: str, fn: Activity) -> Iterator[None]:
    """Swap an activity for a test double without touching any schema."""
    previous = ACTIVITIES.get(name)
    ACTIVITIES[name] = fn
    try:
        yield
    finally:
        if previous is None:
            ACTIVITIES.pop(name, None)
        else:
            ACTIVITIES[name] = previous


def unregister_tool(name: str) -> None:
    """Remove a tool (tests define throwaway tools; this keeps them out of other tests)."""
    with _lock:
        tool = TOOLS.pop(name, None)
        if tool is not None and tool.tool_group in GROUPS:
            tools = GROUPS[tool.tool_group].tools
            tools[:] = [t for t in tools if t is not tool]


def get_tool(name: str) -> type[BaseTool] | None:
    return TOOLS.get(name)


def tool_for_slash(word: str) -> type[BaseTool] | None:
    tool = TOOLS.get(word)
    if tool is not None:
        return tool
    for candidate in TOOLS.values():
        if candidate.tool_slash == word:
            return candidate
    return None
