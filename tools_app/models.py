from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings as django_settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from infra.secrets import EncryptedTextField


class ToolConfigVersion(models.Model):
    """One row whose ``token`` changes on every write to tool configuration (groups and
    functions), so each process can cache that configuration and check it is still current
    with one tiny read (see ``tools_app.selectors``). A random token rather than a counter: a
    rolled-back change must not leave a cache keyed by a number that comes round again."""

    token = models.CharField(max_length=32)

    def __str__(self) -> str:
        return self.token

    @staticmethod
    def bump() -> None:
        """Mark tool configuration changed (in the caller's transaction, if any)."""
        ToolConfigVersion.objects.bulk_create(
            [ToolConfigVersion(pk=1, token=uuid.uuid4().hex)],
            update_conflicts=True,
            unique_fields=["id"],
            update_fields=["token"],
        )


def config_track(*tracked: type[models.Model]) -> None:
    """Every save or delete of these models, from any process, moves the configuration token
    on (processes cache what they read under it: ``tools_app.selectors``). Bulk writes need
    ``ConfigQuerySet`` as the model's manager too."""
    from django.db.models.signals import post_delete, post_save

    for model in tracked:
        post_save.connect(
            _config_changed, sender=model, dispatch_uid=f"cc-config-saved-{model._meta.label}"
        )
        post_delete.connect(
            _config_changed, sender=model, dispatch_uid=f"cc-config-deleted-{model._meta.label}"
        )


def _config_changed(sender: Any, **kwargs: Any) -> None:
    ToolConfigVersion.bump()


class ConfigQuerySet(models.QuerySet[Any]):
    """Bulk writes bypass ``save()`` and so the signals ``tools_app.apps`` connects (saves and
    deletes, including ``QuerySet.delete()``); these mark tool configuration changed too."""

    # The write and the token's move commit together: a reader who sees the new rows (an MCP
    # server's new tool) also sees the new token, so no process can cache the new rows under
    # the old token, or bind against the old configuration after seeing the new.
    def update(self, **kwargs: Any) -> int:
        with transaction.atomic(using=self.db):
            rows = super().update(**kwargs)
            if rows:
                ToolConfigVersion.bump()
        return rows

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        with transaction.atomic(using=self.db):
            created = super().bulk_create(objs, *args, **kwargs)
            if created:
                ToolConfigVersion.bump()
        return created


class ToolGroupConfig(models.Model):
    """Admin-edited state of one tool group: on/off and its settings (validated JSON).

    Settings fields typed ``SecretStr`` (an API key) are not in ``settings``: they are kept in
    ``secrets``, a JSON object encrypted at rest, and merged back when the settings are read."""

    name = models.CharField(max_length=64, unique=True)
    enabled = models.BooleanField(default=True)
    settings = models.JSONField(default=dict, blank=True)
    secrets = EncryptedTextField()
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    objects = ConfigQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


MAX_APPROVALS = 5  # most approvers a function may require


class ToolFunctionConfig(models.Model):
    """Per-function overrides inside a group."""

    name = models.CharField(max_length=64, unique=True)
    enabled = models.BooleanField(default=True)

    class ApprovalMode(models.TextChoices):
        NONE = "none", _("no approval")
        REQUESTER = "requester", _("confirmed by the requester")
        APPROVER = "approver", _("decided by an approver group")

    # Who must decide a call before it runs; in approver mode, a member of ``approver_groups``
    # and never the person who asked.
    approval_mode = models.CharField(
        max_length=10, choices=ApprovalMode.choices, default=ApprovalMode.NONE
    )
    approver_groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="approves_functions"
    )
    # Approver mode: how many distinct approvers must approve a call before it runs (two
    # people for a risky function); any one denial ends it.
    approvals_needed = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_APPROVALS)]
    )
    # Never remember an approval of this function beyond one call (standing approvals).
    standing_forbidden = models.BooleanField(
        default=False,
        help_text=_("Approvals of this function are for one call only: never remembered."),
    )
    reasoning_for_call = models.BooleanField(
        default=False,
        help_text=_("Ask the model to say why it calls this tool (_reasoningForCall)."),
    )
    # Per-function limits; empty: the group's setting applies.
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    calls_per_minute = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ConfigQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ToolGrant(models.Model):
    """What one group's members may use: a whole tool group, one function, or one imported
    source (an MCP server or OpenAPI document, by ``ToolSource.name``). A person's grants are
    the union over their groups, Everyone included; staff may use everything
    (``tools_app.services.grants``). A tool group, function or source no row names is for
    admins only."""

    class Kind(models.TextChoices):
        GROUP = "group", _("tool group")
        FUNCTION = "function", _("function")
        SOURCE = "source", _("imported source")

    group = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="tool_grants")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    # Binding caches every person's grants under the configuration token: writes move it on.
    objects = ConfigQuerySet.as_manager()

    class Meta:
        ordering = ["group__name", "kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["group", "kind", "name"], name="tool_grant_unique")
        ]

    def __str__(self) -> str:
        return f"{self.group} → {self.kind} {self.name}"


def active_language() -> str:
    """The language in force where a call is made (its card is shown in it later, whichever
    process renders it)."""
    return translation.get_language() or ""


class ToolCall(models.Model):
    """One call of one tool: its arguments, its life, its result. The card and the trace."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        AWAITING_APPROVAL = "awaiting_approval", _("awaiting approval")
        AWAITING_INPUT = "awaiting_input", _("waiting for your answer")  # clarification
        RUNNING = "running", _("running")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")
        DENIED = "denied", _("denied")
        CANCELLED = "cancelled", _("cancelled")

    class Source(models.TextChoices):
        CHAT = "chat", _("chat")
        SLASH = "slash", _("slash command")
        TEST = "test", _("Test button")
        API = "api", _("API")
        MCP = "mcp", _("MCP client")

    TERMINAL = (Status.SUCCEEDED, Status.FAILED, Status.DENIED, Status.CANCELLED)

    conversation = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="tool_calls",
    )
    turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.CASCADE, related_name="tool_calls"
    )
    message = models.ForeignKey(
        "chat_app.Message",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="tool_calls",
    )
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # ``toolcall_user_created`` leads with it
    )
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.CHAT)
    # The language of the page or conversation the call came from: its card's words (never
    # its arguments, result or audit record, which stay as the tool made them).
    language = models.CharField(max_length=8, blank=True, default=active_language)
    call_id = models.CharField(max_length=128, blank=True)
    index = models.PositiveIntegerField(default=0)
    tool = models.CharField(max_length=64)
    group = models.CharField(max_length=64, blank=True)
    raw_arguments = models.TextField(blank=True)
    arguments = models.JSONField(null=True, blank=True)
    reasoning = models.TextField(blank=True)
    # The tool list of whoever originated the call (an agent profile, an API token, the turn
    # that started this one), kept for calls that start turns themselves (subagents,
    # schedules): those turns carry it on. None: not restricted beyond the person's own.
    scope = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    latent = models.BooleanField(default=False)
    # A record from an imported conversation (chat_app/services/transfer.py): never ran here,
    # so it counts in no usage, quota or call limit, and its card says so.
    imported = models.BooleanField(default=False)
    policy_verdict = models.CharField(max_length=16, blank=True)
    policy_reason = models.TextField(blank=True)
    # What the guards found and did (tools_app.guards): stage, guard, kind, where, action.
    guards = models.JSONField(default=list, blank=True)
    # The shadow policy's verdict on this call, never enforced (tools_app.services.policy):
    # {"verdict", "reason", "policy", "name", "live"}; copied to the call's audit record.
    shadow = models.JSONField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Who must decide a call that waits for approval, as configured when it was bound:
    # "requester" (the person who asked) or "approver" (a member of ``approver_group_ids``,
    # never the person who asked). Blank: no approval step.
    approval_mode = models.CharField(max_length=10, blank=True)
    approver_group_ids = models.JSONField(default=list, blank=True)
    approvals_needed = models.PositiveSmallIntegerField(default=1)  # fixed when bound
    decided_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # ``toolcall_decided_by``: decided calls only
    )
    decision_note = models.TextField(blank=True)
    queue = models.CharField(max_length=32, blank=True)
    worker = models.CharField(max_length=128, blank=True)
    sandbox_id = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    version = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["created_at", "index", "id"]
        indexes = [
            models.Index(fields=["status"]),
            models.Index(fields=["tool", "created_at"]),
            # A person's calls of a day: the tool-call quotas and the Usage page.
            models.Index(fields=["user", "created_at"], name="toolcall_user_created"),
            models.Index(fields=["created_at"], name="toolcall_created"),
            # Partial: a call is bound undecided, so binding writes no entry here (binding is
            # the hot path: each index is a page it writes). Deleting a person finds their
            # decisions through it.
            models.Index(
                fields=["decided_by"],
                name="toolcall_decided_by",
                condition=models.Q(decided_by__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool}#{self.pk} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def status_word(self) -> str:
        return str(self.Status(self.status).label)  # in the active language

    @property
    def approvers_label(self) -> str:
        """Who must decide, in words for the card: "leads, ops" (approver mode)."""
        if self.approval_mode != "approver":
            return ""
        from django.contrib.auth.models import Group

        names = sorted(
            Group.objects.filter(pk__in=self.approver_group_ids or []).values_list(
                "name", flat=True
            )
        )
        return ", ".join(names) or "an administrator"

    @property
    def arguments_for_display(self) -> Any:
        if self.arguments is None:
            return self.raw_arguments
        # Postgres (jsonb) does not keep key order: show them in the tool's field order.
        from tools_app.registry import get_tool

        tool = get_tool(self.tool)
        if tool is None or not isinstance(self.arguments, dict):
            return self.arguments
        order = {
            (info.alias or name): i for i, (name, info) in enumerate(tool.model_fields.items())
        }
        return dict(sorted(self.arguments.items(), key=lambda kv: order.get(kv[0], len(order))))


class ToolCallApproval(models.Model):
    """One approver's approval of a call that needs several (``ToolCall.approvals_needed``):
    who and when. A person approves a call once; edited arguments start the count again."""

    call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["call", "user"], name="toolcall_approval_once")
        ]

    def __str__(self) -> str:
        return f"{self.username} approved {self.call_id}"


class StandingApproval(models.Model):
    """An approval widened beyond one call (services/standing.py): later calls of ``tool``
    by ``user`` whose arguments match (``arguments`` with ``match``: name → equals, prefix
    or host; every argument not named is equal) run without waiting, as approved by
    ``granted_by`` — within ``conversation``, for ``schedule_id``'s runs (while the schedule
    hashes to ``schedule_hash``), or for the person anywhere, until ``expires_at``."""

    class Scope(models.TextChoices):
        CONVERSATION = "conversation", _("for this conversation")
        PERSON = "person", _("for this person")
        SCHEDULE = "schedule", _("for this schedule")

    scope = models.CharField(max_length=12, choices=Scope.choices)
    granted_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_by_name = models.CharField(max_length=150)
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    conversation = models.ForeignKey(
        "chat_app.Conversation", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # A schedule is an app above this one: its id, and what it asked when pre-approved.
    schedule_id = models.BigIntegerField(null=True, blank=True)
    schedule_hash = models.CharField(max_length=64, blank=True)
    tool = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict)
    match = models.JSONField(default=dict, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    uses = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    source_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "tool"], name="standing_user_tool")]

    def __str__(self) -> str:
        return f"standing approval #{self.pk} of {self.granted_by_name}"


class ShadowPolicy(models.Model):
    """A candidate access policy evaluated beside the live one on every call and never
    enforced (tools_app.services.policy). ``rules``: the candidate's groups and approval
    rules as the access YAML gives them, checked when it was loaded. One runs at a time: the
    row without ``stopped_at``. A save moves the configuration token (``config_track``), so
    every process sees a start or a stop at its next call."""

    name = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)  # sha256 of ``text``
    text = models.TextField()
    rules = models.JSONField(default=dict)
    started_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    started_at = models.DateTimeField(auto_now_add=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]

    def __str__(self) -> str:
        return f"shadow policy {self.name} ({self.digest[:12]})"

    @property
    def label(self) -> str:
        """How the audit records and the metrics name it: the start of its digest."""
        return self.digest[:16]


class AuditRecordQuerySet(models.QuerySet["AuditRecord"]):
    def delete(self) -> tuple[int, dict[str, int]]:
        raise PermissionError("the audit log is append-only")


class AuditRecord(models.Model):
    """The audit trail: one record per tool call (from chat, slash command, Test button or
    API), per approval decision, per settings change, per change to people and groups, and
    per read of someone else's conversation. Append-only: nothing in the admin or
    the UI edits or deletes it; the system only completes a call's record when it finishes.
    It outlives the conversation it came from (ids and titles are copied, not cascaded)."""

    class Kind(models.TextChoices):
        CALL = "call", _("tool call")
        APPROVAL = "approval", _("approval decision")
        SETTINGS = "settings", _("settings change")
        PEOPLE = "people", _("people change")
        READ = "read", _("conversation read")
        QUOTA = "quota", _("quota refusal")
        DEFINITION = "definition", _("tool definition")
        IMPORT = "import", _("history import")

    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CALL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    username = models.CharField(max_length=150, blank=True)
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_records"
    )
    conversation_id = models.BigIntegerField(null=True, blank=True)
    conversation_title = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=8, blank=True)
    group = models.CharField(max_length=64, blank=True)
    tool = models.CharField(max_length=64, blank=True, db_index=True)
    arguments = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=40, blank=True, db_index=True)
    policy_verdict = models.CharField(max_length=16, blank=True)
    policy_reason = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    worker = models.CharField(max_length=128, blank=True)
    sandbox_id = models.CharField(max_length=128, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    # The hash chain (tools_app/services/audit_chain.py): set once, when the sealer links the
    # record (a call's record when the call has finished), never changed after. ``seq``: the
    # record's place in the deployment's one chain; ``call_ref``: the call's id as sealed (the
    # foreign key above empties when a conversation is deleted; the chain must not).
    seq = models.BigIntegerField(null=True, blank=True, unique=True)
    prev_hash = models.CharField(max_length=64, blank=True)
    record_hash = models.CharField(max_length=64, blank=True)
    call_ref = models.BigIntegerField(null=True, blank=True)

    objects = AuditRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # Partial where the lookups are (each index is a page every call's record writes):
        # a conversation's reads (``audit_conversation_read``), and the group of a record
        # that names no tool (the log's tool filter matches a group only there).
        indexes = [
            models.Index(
                fields=["conversation_id"],
                name="audit_read_conversation",
                condition=models.Q(kind="read"),
            ),
            models.Index(
                fields=["group"], name="audit_toolless_group", condition=models.Q(tool="")
            ),
            # What the sealer has still to link: a handful of rows, never the whole log.
            models.Index(
                fields=["id"], name="audit_unsealed", condition=models.Q(seq__isnull=True)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.tool or self.group} ({self.status})"

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise PermissionError("the audit log is append-only")


class AuditChainHead(models.Model):
    """The chain's head: the last sealed record's ``seq`` and hash. One row (pk 1), locked by
    the sealer while it links records, so sealers on several hosts take turns; nothing that
    writes a record waits for it."""

    seq = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64, default="0" * 64)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"audit chain head at {self.seq}"


class AuditSigningKey(models.Model):
    """The audit signing key the sealer generated (when the operator gave none): the private
    half encrypted with the keys of secrets at rest, so every host signs with it and the
    database alone reveals nothing. Rows are kept after an operator's key replaces it: their
    public halves still verify the checkpoints signed before."""

    key_id = models.CharField(max_length=32, unique=True)
    # The public half is derived from this on every read, never stored beside it: a row
    # written by someone without the secrets key does not decrypt, so it vouches for nothing.
    private_pem = EncryptedTextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"audit signing key {self.key_id}"


class AuditCheckpoint(models.Model):
    """A signed statement "the chain's record ``seq`` has hash ``hash``" (Ed25519, with the
    audit signing key, not SECRET_KEY). Periodic ones bound what a rewrite of the chain could
    hide; a retention one marks where old records were deleted, so the rest still verifies."""

    class Kind(models.TextChoices):
        PERIODIC = "periodic", _("periodic")
        RETENTION = "retention", _("retention cut")

    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.PERIODIC)
    seq = models.BigIntegerField()
    hash = models.CharField(max_length=64)
    signed_at = models.DateTimeField()
    key_id = models.CharField(max_length=32)
    signature = models.CharField(max_length=128)
    # Retention: how many records the cut deleted, and the time of the newest of them.
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["seq", "id"]

    def __str__(self) -> str:
        return f"checkpoint {self.kind} at {self.seq}"


class Screenshot(models.Model):
    """A PNG taken by the browser tool. The file lives under ``MEDIA_DIR`` (``path`` is
    relative to it) and is served only to the conversation's owner and to staff."""

    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="screenshots")
    conversation = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="screenshots",
    )
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    path = models.CharField(max_length=500)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    bytes = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"screenshot #{self.pk} ({self.width}×{self.height})"


class SourceQuerySet(models.QuerySet["ToolSource"]):
    """A bulk write that moves a source's ``revision`` marks tool configuration changed, like
    its saves and deletes do (``tools_app.apps``); status writes (state, last error, refreshed
    at) leave the token, and so every process's cached configuration, alone."""

    def update(self, **kwargs: Any) -> int:
        rows = super().update(**kwargs)
        if rows and "revision" in kwargs:
            ToolConfigVersion.bump()
        return rows


class ToolSource(models.Model):
    """Where imported tools come from: one MCP server or one OpenAPI document; each source is
    one tool group. ``config`` holds what may be shown (command, URL, auth *kind*), ``secrets``
    what may not (headers, tokens, API keys: encrypted at rest, never rendered back).

    ``revision`` changes whenever the tools or the connection change, and with it the tool
    configuration's token: the next configuration read of every process compares the
    (id, revision) pairs with what it registered and reloads what differs
    (``tools_app.imported``). Status fields change without touching either (they are written
    by whichever worker talks to the server).
    """

    class Kind(models.TextChoices):
        MCP = "mcp", _("MCP server")
        OPENAPI = "openapi", _("OpenAPI")
        SCHEMA = "schema", _("defined from a JSON Schema")

    class State(models.TextChoices):
        UNKNOWN = "unknown", _("not connected yet")
        REFRESHING = "refreshing", _("refreshing")
        UP = "up", _("up")
        DOWN = "down", _("down")

    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.SlugField(max_length=40, unique=True)
    label = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    config = models.JSONField(default=dict, blank=True)
    secrets = EncryptedTextField()
    # What the model is offered: each function as an admin accepted it, with ``pin`` (the
    # sha256 of its canonical definition). What the server lists that differs waits in
    # ``review`` (tools_app.services.pins) until an admin accepts or rejects it.
    functions = models.JSONField(default=list, blank=True)
    review = models.JSONField(default=list, blank=True)
    pinned_at = models.DateTimeField(null=True, blank=True)
    auto_accept = models.BooleanField(
        default=False, help_text=_("Accept changed and new definitions without a review.")
    )
    serve_pinned = models.BooleanField(
        default=False,
        help_text=_("Keep calling changed functions with their pinned definition until reviewed."),
    )
    revision = models.PositiveIntegerField(default=1)
    state = models.CharField(max_length=12, choices=State.choices, default=State.UNKNOWN)
    last_error = models.TextField(blank=True)
    state_at = models.DateTimeField(null=True, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    objects = SourceQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def group_name(self) -> str:
        return f"{self.kind}_{self.name}".replace("-", "_")

    @property
    def tool_count(self) -> int:
        return len(self.functions or [])

    @property
    def pending_count(self) -> int:
        """Functions held for an admin's review (new, changed, gone: tools_app.services.pins)."""
        return sum(1 for e in self.review or [] if e.get("status") in ("new", "changed", "gone"))


class ApiToken(models.Model):
    """A personal token for programs acting for a person: MCP clients (``/mcp/``), OpenAI
    clients (``/v1``) and the REST API (``/api/``). Only a hash is stored; the token is shown
    once. ``scopes`` say which of those it may use (``platform_app.api_tokens.SCOPES``); its
    tools are an agent profile's (and optionally fewer)."""

    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    agent = models.ForeignKey(
        "chat_app.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Created with an agent profile: when that profile is deleted (``agent`` becomes null) the
    # token is refused rather than falling back to the default agent's wider tool list.
    scoped = models.BooleanField(default=False)
    tools = models.JSONField(
        default=list, blank=True, help_text=_("Only these tools (empty: the agent's tools).")
    )
    # What the token may do (platform_app.api_tokens.SCOPES), e.g. ["chat", "read", "mcp"].
    scopes = models.JSONField(default=list, blank=True)
    # Requests per minute; None: API_RATE_LIMIT_PER_MINUTE.
    rate_limit_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # /v1 replies show the tool calls as a short markdown trace unless the request says
    # otherwise; False: text only (the calls stay in the documented extra fields).
    trace = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    window_start = models.DateTimeField(null=True, blank=True)
    window_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @property
    def agent_deleted(self) -> bool:
        return self.scoped and self.agent_id is None


# Models of executor packages belong to this app (their package is inside it); so do the
# per-person credentials of imported sources (tools_app.connections).
from tools_app.connections.models import ConnectAttempt as ConnectAttempt  # noqa: E402
from tools_app.connections.models import SourceConnection as SourceConnection  # noqa: E402
from tools_app.connections.models import SourceOAuthClient as SourceOAuthClient  # noqa: E402
from tools_app.executors.research.models import ResearchSource as ResearchSource  # noqa: E402
