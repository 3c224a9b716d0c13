from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from infra.secrets import EncryptedTextField
from tools_app.models import ConfigQuerySet
from tools_app.services.narrowing import limits_check


class Provider(models.Model):
    """An LLM endpoint. ``openai`` covers every OpenAI-compatible server (OpenAI, Ollama, vLLM,
    llama.cpp, LM Studio, OpenRouter, xAI); ``anthropic`` is the Messages API."""

    class Kind(models.TextChoices):
        OPENAI = "openai", _("OpenAI-compatible")
        ANTHROPIC = "anthropic", _("Anthropic")

    class NativeTools(models.TextChoices):
        AUTO = "auto", _("auto (detect)")
        TRUE = "true", _("always native")
        FALSE = "false", _("text fallback")

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.OPENAI)
    base_url = models.CharField(
        max_length=500, blank=True, help_text=_("e.g. http://localhost:11434/v1 for Ollama")
    )
    api_key = EncryptedTextField(help_text=_("Encrypted at rest; write-only in forms."))
    model = models.CharField(max_length=200)
    allowed_models = models.JSONField(
        default=list,
        blank=True,
        help_text=_(
            "Other model names of this endpoint that schedules and subagents may ask for "
            '(a JSON list, e.g. ["gpt-4o-mini"]); empty: only the model above or an agent\'s own.'
        ),
    )
    native_tools = models.CharField(
        max_length=8, choices=NativeTools.choices, default=NativeTools.AUTO
    )
    # Learned once when native_tools is "auto": None = not tried yet.
    tools_supported = models.BooleanField(null=True, blank=True)
    timeout_seconds = models.PositiveIntegerField(
        default=120,
        help_text=_(
            "Seconds without any data from the LLM (no answer, or a stalled stream) before "
            "an attempt is abandoned and retried."
        ),
    )
    max_retries = models.PositiveSmallIntegerField(
        default=3,
        help_text=_(
            "Retries after a transient failure (429, 5xx, connection reset, broken or "
            "stalled stream) before the turn fails; 0 = no retries."
        ),
    )
    retry_backoff_seconds = models.FloatField(
        default=1.0,
        help_text=_(
            "First wait before a retry; it doubles on every further retry (with jitter). "
            "A Retry-After header from the server wins."
        ),
    )
    image_input = models.BooleanField(
        default=False,
        help_text=_(
            "The model accepts images; with the Browser setting 'send images to the "
            "model', screenshots then reach it as images, not only as paths."
        ),
    )
    fallback_grammar = models.BooleanField(
        default=False,
        help_text=_(
            "In text fallback, send a grammar (llama.cpp's grammar field) that holds the reply "
            "to plain text or one call of an offered tool in the fallback format. For small "
            "models on a llama.cpp server; other servers may reject the field."
        ),
    )
    temperature = models.FloatField(
        _("temperature"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(2.0)],
        help_text=_(
            "Sampling temperature sent with every request (0 = always the likeliest word, "
            "the same reply to the same request). Empty: the server's default."
        ),
    )
    max_output_tokens = models.PositiveIntegerField(
        _("longest reply (tokens)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(1_000_000)],
        help_text=_(
            "The longest reply the model may write, in tokens. Empty: the server's default "
            "(4,096 for Anthropic, which requires one)."
        ),
    )
    is_default = models.BooleanField(default=False)
    # The provider that LLM_* variables seed and update at start (whatever its name now).
    from_environment = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Model rounds cache this row under the configuration token (tools_app.selectors.config_memo):
    # bulk updates mark the configuration changed, as saves and deletes do (chat_app.apps).
    objects = ConfigQuerySet.as_manager()

    class Meta:
        ordering = ["-is_default", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}: {self.model})"

    def uses_native_tools(self) -> bool:
        if self.native_tools == self.NativeTools.TRUE:
            return True
        if self.native_tools == self.NativeTools.FALSE:
            return False
        return self.tools_supported is not False


class ImportSource(models.TextChoices):
    """Where an imported conversation came from ("" : made here)."""

    NONE = "", _("made here")
    CONTROL_CENTER = "controlcenter", _("Control Center export")
    OPEN_WEBUI = "openwebui", _("Open WebUI")
    CHATGPT = "chatgpt", _("ChatGPT")
    LIBRECHAT = "librechat", _("LibreChat")


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, default="New conversation")
    provider = models.ForeignKey(Provider, null=True, blank=True, on_delete=models.SET_NULL)
    agent = models.ForeignKey(
        "chat_app.Agent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
    )
    # The model picked in the chat's model switcher (with ``provider``, its endpoint), used
    # from the next model round on; empty: the agent's (or its provider's) model.
    model = models.CharField(max_length=200, blank=True)
    # The language of the person who last wrote in it (a language code of settings.LANGUAGES;
    # "" before the first message): its notices are written in it, and its tool descriptions
    # offered to the model too unless the agent profile fixes one (Agent.tool_language).
    language = models.CharField(max_length=8, blank=True, default="")
    # Pinned conversations head the sidebar; archived ones leave it for the Archived view.
    pinned_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Source(models.TextChoices):
        CHAT = "chat", _("chat")
        API = "api", _("API")

    # Where it was started: the chat, or a program through /v1 or the REST API. The sidebar
    # lists the two apart (issue 39): a script's conversations do not bury the person's own.
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.CHAT)
    # Brought in from another product's export (chat_app.services.history_import): which
    # product, and the conversation's id there (a second import of the same file skips it).
    imported_from = models.CharField(
        max_length=16, choices=ImportSource.choices, default="", blank=True
    )
    imported_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conversation_owner_recent")]
        # A conversation is its owner's. Reading someone else's needs this permission, given
        # to a group (Group.permissions); staff do not have it by being staff. Superusers do,
        # as they hold every permission. Each such read is audited (chat_app/services/privacy).
        permissions = [
            ("audit_conversations", "Can read other people's conversations (each read audited)")
        ]

    def __str__(self) -> str:
        return self.title


class Turn(models.Model):
    """One user message and everything the agent did about it (model rounds, tool calls)."""

    class Kind(models.TextChoices):
        CHAT = "chat", _("chat")
        SLASH = "slash", _("slash command")

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")
        CANCELLED = "cancelled", _("cancelled")
        LIMITED = "limited", _("stopped at the round limit")

    class Source(models.TextChoices):
        """What started the turn (a slash command is a ``kind``, whoever sent it)."""

        CHAT = "chat", _("chat page")
        SCHEDULE = "schedule", _("schedule")
        SUBAGENT = "subagent", _("subagent")
        API = "api", _("API")
        # Brought in from another product's export: nothing ran here.
        IMPORT = "import", _("import")

    class Phase(models.TextChoices):
        MODEL = "model", _("waiting for the model")
        STREAMING = "streaming", _("model is answering")
        TOOLS = "tools", _("tools are running")
        # A clarification call waits for the person's next message
        # (chat_app.agent_kinds.clarification).
        CLARIFY = "clarify", _("waiting for clarification")
        DONE = "done", _("done")

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.CHAT)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.CHAT)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    phase = models.CharField(max_length=12, choices=Phase.choices, default=Phase.MODEL)
    round = models.PositiveIntegerField(default=0)
    max_rounds = models.PositiveIntegerField(default=10)
    native_tools = models.BooleanField(default=True)
    cancel_requested = models.BooleanField(default=False)
    # Liveness: the agent runner streaming this turn writes ``heartbeat_at`` every few seconds;
    # a queued turn carries the time it was queued. The reaper ends turns whose runner died and
    # queues again (``requeued`` times) rounds whose message was lost.
    runner = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    requeued = models.PositiveSmallIntegerField(default=0)
    # A model name for this turn only (a schedule's or a subagent's ``model``); empty: the
    # agent's (or its provider's) model.
    model = models.CharField(max_length=200, blank=True)
    # The tool list of what started this turn when a tool did (a subagent, a schedule): every
    # call of the turn, the model's and a ``/`` message's alike, binds within it. None: a
    # person's own turn, limited by the agent profile only.
    tool_scope = models.JSONField(null=True, blank=True)
    # The schedule whose firing started this turn (platform_app: an app above this one, so an
    # id): set when the turn is made, so binding knows a call belongs to a schedule's run
    # from its first call (its pre-approvals, tools_app.services.standing). None: not one.
    schedule_id = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    # The agent's plan (generate_plan / adapt_plan): {"goal", "steps": [{"text", "done"}],
    # "changes": [{"changes", "reasoning", "at"}], "version"}; empty when it made none.
    plan = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Branches (chat_app.services.branches): the turn this one follows; None for the first.
    # An edited or regenerated message starts a sibling (same parent); the conversation shows
    # one path, from its head (the turn latest started or chosen) back to the first turn.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    # When a person switched to the branch ending here ("‹ 1/2 ›"): it is the head again.
    chosen_at = models.DateTimeField(null=True, blank=True)
    # The W3C traceparent of the turn's span (infra.tracing) when tracing is on: its rounds,
    # tool calls and sandbox commands are its children, whichever process runs them, and the
    # process that ends the turn ends the span. Empty: not traced.
    trace_context = models.CharField(max_length=96, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        indexes = [models.Index(fields=["status", "phase"], name="turn_status_phase")]

    def __str__(self) -> str:
        return f"turn {self.pk} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # A new turn follows the conversation's head unless it was made a branch
        # (``branch_from``): every way a turn starts (a message, a slash command, a schedule,
        # a subagent, a test's own row) keeps the path whole.
        if self._state.adding and self.parent_id is None and not getattr(self, "_root", False):
            self.parent_id = turn_head_id(self.conversation_id)
        super().save(*args, **kwargs)

    def branch_from(self, other: Turn) -> None:
        """Make this new turn a sibling of ``other`` (an edit or a regeneration of it)."""
        self.parent_id = other.parent_id
        self._root = other.parent_id is None

    @property
    def is_running(self) -> bool:
        return self.status == self.Status.RUNNING


def turn_head_id(conversation_id: int) -> int | None:
    """The last turn of the path a conversation shows: the one latest started, or chosen."""
    return (
        Turn.objects.filter(conversation_id=conversation_id)
        .annotate(at=Coalesce("chosen_at", "started_at"))
        .order_by("-at", "-id")
        .values_list("id", flat=True)
        .first()
    )


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", _("user")
        ASSISTANT = "assistant", _("assistant")
        NOTICE = "notice", _("notice")  # shown to people, never sent to the model

    class Origin(models.TextChoices):
        PERSON = "", _("person")
        SCHEDULE = "schedule", _("schedule")
        SUBAGENT = "subagent", _("subagent result")
        TASK = "task", _("task from the parent conversation")

    class State(models.TextChoices):
        STREAMING = "streaming", _("streaming")
        COMPLETE = "complete", _("complete")
        CANCELLED = "cancelled", _("cancelled")
        ERROR = "error", _("error")

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    # Who wrote a user-role message when it was not the person: a schedule that fired, or a
    # subagent's answer injected into its parent conversation (the page labels them).
    origin = models.CharField(max_length=10, choices=Origin.choices, default="", blank=True)
    content = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.COMPLETE)
    # In text-fallback mode the tool calls live in the content; the model must see them again.
    fallback = models.BooleanField(default=False)
    # What is happening to a streaming reply right now, e.g. "retrying in 2 s (429 …)".
    note = models.CharField(max_length=500, blank=True)
    # What the reply cost: {"input_tokens", "output_tokens", "cached_tokens", "cost" (a
    # decimal string, when the model has a price), "estimated" (the provider reported
    # nothing: counted from the text)}, and the "model" that wrote it (chat_app.services.usage).
    usage = models.JSONField(default=dict, blank=True)
    # Files the person uploaded into the workspace with this message (chat_app.services.
    # uploads): [{"name", "size", "mime"}]; images reach a model with image input.
    attachments = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    version = models.PositiveIntegerField(default=0)

    # A user message's branch switcher ("‹ 2/2 ›", ``chat_app.turn_tree.BranchInfo``), set by
    # whoever renders it; None on the others. The message template reads it on every message.
    branch: Any = None

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

    @property
    def usage_shown(self) -> dict[str, Any]:
        """``usage`` with every key the message template reads (none on a person's message or a
        reply still streaming)."""
        return {**USAGE_SHOWN, **self.usage} if isinstance(self.usage, dict) else USAGE_SHOWN


# The keys of ``Message.usage`` the message template reads, with what their absence shows.
USAGE_SHOWN: dict[str, Any] = {
    "model": "",
    "input_tokens": 0,
    "output_tokens": 0,
    "cached_tokens": 0,
    "cost": "",
    "estimated": False,
}


def default_tool_budgets() -> dict[str, int]:
    return {"clarification": 3}


def validate_tool_budgets(value: Any) -> None:
    if not isinstance(value, dict):
        raise ValidationError(_('expected tool name → calls per turn, e.g. {"web_search": 8}'))
    for tool, limit in value.items():
        if not tool.strip():
            raise ValidationError(_("a tool name is empty"))
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError(
                _("%(tool)s: the limit must be a whole number, 0 or more") % {"tool": tool}
            )


def validate_tool_limits(value: Any) -> None:
    try:
        limits_check(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class Agent(models.Model):
    """An agent profile: its prompt, its model, the tools it may use and its limits.
    Conversations pick one; "General" is the default."""

    class Kind(models.TextChoices):
        TOOL_CALLING = "tool_calling", _("tool calling")
        SCHEMA_GUIDED = "sgr", _("schema-guided reasoning (reasoning forced first each round)")
        REASONING_AS_TOOL = "sgr_tool_calling", _("schema-guided reasoning as a tool")

    name = models.CharField(max_length=100, unique=True)
    description = models.CharField(max_length=300, blank=True)
    system_prompt = models.TextField(blank=True, help_text=_("Empty: the built-in prompt."))
    provider = models.ForeignKey(Provider, null=True, blank=True, on_delete=models.SET_NULL)
    model = models.CharField(max_length=200, blank=True, help_text=_("Overrides the provider's."))
    all_tools = models.BooleanField(default=True, help_text=_("May use every enabled tool."))
    tools = models.JSONField(
        default=list, blank=True, help_text=_("Tool names this agent may use (when not all tools).")
    )
    max_rounds = models.PositiveIntegerField(
        default=0, help_text=_("Model rounds per turn; 0 = AGENT_MAX_ROUNDS (default 10).")
    )
    max_calls_per_turn = models.PositiveIntegerField(default=10, help_text=_("0 = unlimited"))

    class UntrustedSinks(models.TextChoices):
        APPROVAL = "approval", _("Ask a person")
        BLOCK = "block", _("Refuse")
        OFF = "off", _("Off")

    untrusted_sinks = models.CharField(
        max_length=8,
        choices=UntrustedSinks.choices,
        default=UntrustedSinks.APPROVAL,
        help_text=_(
            "Once a web page, search result, document or imported tool's result entered a "
            "turn, calls that send something out (an HTTP request with a body, a message, a "
            "host-folder write, a container, a shell with network) wait for a person or are "
            "refused."
        ),
    )
    max_calls_per_conversation = models.PositiveIntegerField(
        default=200, help_text=_("0 = unlimited")
    )
    kind = models.CharField(
        max_length=20,
        choices=Kind.choices,
        default=Kind.TOOL_CALLING,
        help_text=_(
            "tool calling: today's loop (the Agent tools only when listed in its tools). "
            "sgr: the model must call 'reasoning' before every action. sgr_tool_calling: "
            "'reasoning' and the other Agent tools are offered among the rest."
        ),
    )
    max_iterations = models.PositiveIntegerField(
        default=0,
        help_text=_(
            "Rounds that act, per turn; after them only final_answer and create_report "
            "are offered. 0 = unlimited. Keep max rounds above it (twice it for sgr)."
        ),
    )
    tool_budgets = models.JSONField(
        default=default_tool_budgets,
        blank=True,
        validators=[validate_tool_budgets],
        help_text=_(
            'Calls per turn of a tool, by name, e.g. {"web_search": 8, "clarification": 2}; '
            "a tool not listed (or 0) has no limit. At the limit the tool is no longer offered. "
            "Not counted for a tool-calling profile with every tool."
        ),
    )
    # Lower limits of tool groups for this profile's calls (seed 004's per-agent search
    # limits): {"research": {"max_results": 5, "max_chars_per_page": 1500}}; never higher
    # than the Tools Manager's (tools_app.services.narrowing).
    tool_limits = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_tool_limits],
        help_text=_(
            'Lower limits of tool groups for this agent, e.g. {"research": {"max_results": 5, '
            '"max_chars_per_page": 1500}}; the Tools Manager\'s limits still cap them.'
        ),
    )
    # The language of the tool descriptions offered to the model: "" the conversation's (the
    # person's), or a fixed language code. Names of tools and arguments never change.
    tool_language = models.CharField(
        max_length=8,
        blank=True,
        default="",
        help_text=_(
            "Empty: the conversation's language (the person's). A language code fixes the "
            "descriptions the model reads whoever writes."
        ),
    )
    # Tool search (issue 38): when the schemas of the tools a person may use here weigh more
    # than this many tokens, the model is offered the always-on tools and tool_search, which
    # loads the schemas of the tools it finds for the rest of the turn.
    tool_schema_budget = models.PositiveIntegerField(
        default=1000,
        help_text=_(
            "Tokens of tool schemas sent with every request. Above it the model gets the "
            "always-on tools and tool_search, which loads the others as needed. "
            "0 = always send every schema."
        ),
    )
    always_on_tools = models.JSONField(
        default=list,
        blank=True,
        help_text=_(
            "Tools always offered when tool search is on, by name. Empty: the platform "
            "essentials (skill_load, memory_search)."
        ),
    )
    is_default = models.BooleanField(default=False)
    # Who may pick this profile (members of these groups; "Everyone" for every user). Staff
    # may pick every profile; a profile no group is given is for admins only. For a member's
    # own profile (``owner`` set) these are the groups its owner shared it with: groups they
    # belong to, whose sharing an admin has not switched off (chat_app/services/member_agents).
    groups = models.ManyToManyField("auth.Group", blank=True, related_name="agent_profiles")
    # A profile a member made from what they are granted (None: an admin's). Its owner edits
    # it; binding still holds whoever uses it to their own grants.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="agent_profiles_owned",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Model rounds cache this row under the configuration token (tools_app.selectors.config_memo):
    # bulk updates mark the configuration changed, as saves and deletes do (chat_app.apps).
    objects = ConfigQuerySet.as_manager()

    class Meta:
        ordering = ["-is_default", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        rounds = self.max_rounds or settings.AGENT_MAX_ROUNDS
        needed = self.max_iterations * (2 if self.kind == self.Kind.SCHEMA_GUIDED else 1)
        if self.max_iterations and rounds <= needed:
            raise ValidationError(
                {
                    "max_rounds": _(
                        "must be above %(needed)s so the agent can still finish after "
                        "%(max_iterations)s iterations"
                    )
                    % {"needed": needed, "max_iterations": self.max_iterations}
                }
            )

    def allowed_tools(self) -> list[str] | None:
        """None means every enabled tool."""
        return None if self.all_tools else list(self.tools)


class RunnerBeat(models.Model):
    """A live agent runner, as it last reported itself (every couple of seconds, from a thread
    that first checks the runner's event loop answers). Turns name the runner that streams
    them; a turn whose runner stopped reporting is ended by the reaper."""

    name = models.CharField(max_length=200, unique=True)
    beat_at = models.DateTimeField()
    started_at = models.DateTimeField(auto_now_add=True)
    in_flight = models.PositiveIntegerField(default=0)
    capacity = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ProcessBeat(models.Model):
    """A process of a distributed deployment (web, agent runner, worker, beat), as it last
    reported itself (every few seconds, ``services.process_beats``). Its health command reads
    its own row; readiness compares this process with the other live ones: fingerprints of
    their keys (never the keys) and the markers they wrote into the shared directories
    (``infra.fleet``)."""

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20)
    host = models.CharField(max_length=200)
    queues = models.CharField(max_length=200, blank=True)  # a worker's: tools, browser
    started_at = models.DateTimeField(auto_now_add=True)
    beat_at = models.DateTimeField(db_index=True)
    secret_key_id = models.CharField(max_length=32)
    secrets_key_ids = models.CharField(max_length=400)  # comma-separated, the first encrypts

    class Meta:
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return self.name


class Prompt(models.Model):
    """A prompt in a person's library: typed ``/`` in the message box offers it, and picking
    it puts its body in the box. Private to its owner unless shared with groups they belong to
    (as a member's agent profile is)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompts"
    )
    title = models.CharField(max_length=100)
    body = models.TextField()
    # A word typed after "/" that finds it first (letters, digits, - and _); optional.
    shortcut = models.CharField(max_length=32, blank=True, default="")
    groups = models.ManyToManyField("auth.Group", blank=True, related_name="shared_prompts")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "shortcut"],
                condition=~models.Q(shortcut=""),
                name="prompt_shortcut_unique_per_owner",
            )
        ]

    def __str__(self) -> str:
        return self.title


class GroupSharing(models.Model):
    """What members may share with a group: an admin's switch on the group's page. No row:
    sharing is allowed."""

    group = models.OneToOneField(
        "auth.Group", on_delete=models.CASCADE, primary_key=True, related_name="sharing"
    )
    forbidden = models.BooleanField(
        default=False,
        help_text=_("Members may not share their agent profiles and prompts with this group."),
    )

    def __str__(self) -> str:
        return f"sharing with group {self.group_id}"


class ConversationShare(models.Model):
    """A read-only link to a conversation that its owner made (and may revoke): any signed-in
    person of this instance who has the link may read it, as the owner chose to show it."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="shares")
    token = models.CharField(max_length=64, unique=True)
    include_tools = models.BooleanField(
        default=True, help_text=_("Show the tool calls (arguments, results, outputs).")
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"share of conversation {self.conversation_id}"


class ModelPrice(models.Model):
    """What a model costs, as an admin set it (US dollars per million tokens). Usage records
    are priced when they are written, so a change applies from then on."""

    provider = models.ForeignKey(
        Provider,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="prices",
        help_text=_("Empty: this model at any provider (a provider's own price wins)."),
    )
    model = models.CharField(max_length=200, help_text=_("The model's name, exactly as asked for."))
    input_per_million = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    cached_per_million = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_("Prompt tokens read from the provider's cache; empty: the input price."),
    )
    updated_at = models.DateTimeField(auto_now=True)

    # Model rounds cache prices under the configuration token (chat_app.services.usage).
    objects = ConfigQuerySet.as_manager()

    class Meta:
        ordering = ["model", "provider__name"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "model"], name="model_price_unique"),
            models.UniqueConstraint(
                fields=["model"],
                condition=models.Q(provider__isnull=True),
                name="model_price_any_provider_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} ({self.provider or 'any provider'})"


class UsageRecord(models.Model):
    """One model round: who, which model, what it cost, how long it took. Written by the loop
    when the round ends (chat_app.services.usage); it outlives the conversation, the agent and
    the provider it names (their names are copied)."""

    class Outcome(models.TextChoices):
        OK = "ok", _("answered")
        CANCELLED = "cancelled", _("stopped")
        ERROR = "error", _("failed")

    created_at = models.DateTimeField(default=timezone.now)
    # No database constraints on these keys: a record is history that outlives what it names
    # (Django's SET_NULL still clears them), and each constraint is a lookup PostgreSQL makes
    # on every INSERT, on the round's path (bench/usage_record.py).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    username = models.CharField(max_length=150, blank=True)
    provider = models.ForeignKey(
        Provider, null=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    provider_kind = models.CharField(max_length=16, blank=True)
    model = models.CharField(max_length=200)
    agent = models.ForeignKey(
        Agent, null=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    agent_name = models.CharField(max_length=100, blank=True)
    conversation = models.ForeignKey(
        Conversation, null=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    turn = models.ForeignKey(
        Turn,
        null=True,
        on_delete=models.SET_NULL,
        related_name="usage_records",
        db_constraint=False,
    )
    source = models.CharField(max_length=10, choices=Turn.Source.choices)
    input_tokens = models.PositiveIntegerField(default=0)  # the whole prompt, cached included
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)  # of the input, read from cache
    estimated = models.BooleanField(default=False)  # the provider reported nothing
    first_token_ms = models.PositiveIntegerField(null=True)
    duration_ms = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    priced = models.BooleanField(default=False)  # the model had a price
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.OK)
    # The person's groups when the round ran (Everyone included): what group figures and
    # group quotas add up.
    groups = models.ManyToManyField(
        "auth.Group", through="UsageRecordGroup", related_name="+", blank=True
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["created_at"], name="usage_created"),
            models.Index(fields=["user", "created_at"], name="usage_user_created"),
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.input_tokens} in, {self.output_tokens} out"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class UsageRecordGroup(models.Model):
    """A round's share in one of its person's groups, with what group totals need copied (so
    a group's day is one index range, not a join through every round it ever had)."""

    record = models.ForeignKey(
        UsageRecord, on_delete=models.CASCADE, related_name="shares", db_constraint=False
    )
    group = models.ForeignKey(
        "auth.Group", on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    created_at = models.DateTimeField()
    tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        indexes = [models.Index(fields=["group", "created_at"], name="usage_group_created")]

    def __str__(self) -> str:
        return f"{self.record_id} in group {self.group_id}"
