"""Per-user state of the platform tools.

Full-text indexes are not Django fields: on SQLite an FTS5 table kept in step by triggers, on
PostgreSQL a GIN index on ``to_tsvector('english', content)``; both are made by migration 0001
(``memory/fulltext.py`` says why). On SQLite, Django rebuilds a table to alter it, which drops
its triggers: a later migration that alters ``MemoryChunk`` must create them again
(``fulltext.install``), and ``tests/tools/memory`` fails if it does not.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from infra.secrets import EncryptedTextField


class MemoryChunk(models.Model):
    """One indexed piece of archival memory. A long ``memory_save`` becomes several chunks
    sharing a ``document`` id, in ``position`` order."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_chunks"
    )
    content = models.TextField()
    source = models.CharField(max_length=200, default="manual")
    document = models.CharField(max_length=32, blank=True, db_index=True)
    position = models.PositiveIntegerField(default=0)
    # Which embedder made ``embedding`` ("local:all-MiniLM-L6-v2", "provider:<name>:<model>");
    # vectors are compared only with vectors of the same embedder.
    embedder = models.CharField(max_length=200, blank=True)
    # float32, little-endian, unit length: portable across databases (see memory/vectors.py).
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # Also what the vector cache's freshness check reads (count, newest change) without
        # touching the table: see memory/vectors.py.
        indexes = [
            models.Index(fields=["user", "embedder", "updated_at"]),
            # What the background embedding looks for: chunks of another (or no) embedder.
            models.Index(fields=["embedder"], name="memorychunk_embedder"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.content[:60]}"


class CoreMemoryEntry(models.Model):
    """Core memory: a few key/value facts always in the system prompt."""

    class Section(models.TextChoices):
        USER = "user", _("about the user")
        AGENT = "agent", _("about the agent")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="core_memory"
    )
    section = models.CharField(max_length=8, choices=Section.choices)
    key = models.CharField(max_length=100)
    value = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user", "section", "key"]
        constraints = [
            models.UniqueConstraint(fields=["user", "section", "key"], name="core_memory_unique")
        ]
        verbose_name = "core memory entry"
        verbose_name_plural = "core memory"

    def __str__(self) -> str:
        return f"{self.section}.{self.key}"


class Schedule(models.Model):
    """A cron schedule of one user: when it is due, ``message`` runs as an agent turn of its
    owner, in ``inject_into`` or in a new conversation. ``next_run_at`` is also the claim: a
    firing process moves it on with ``UPDATE … WHERE next_run_at = <what it read>``, so a
    schedule fires once however many beat processes and workers look at it."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    name = models.CharField(max_length=100)
    cron = models.CharField(
        max_length=120, help_text=_("Five fields (minute hour day month weekday) or @daily etc.")
    )
    timezone = models.CharField(max_length=64, default="UTC", help_text=_("For the cron fields."))
    message = models.TextField(help_text=_("What the agent is asked each time the schedule fires."))
    model = models.CharField(max_length=200, blank=True, help_text=_("Empty: the agent's model."))
    inject_into = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The conversation the answer goes to; empty: a new conversation each time."),
    )
    agent = models.ForeignKey(
        "chat_app.Agent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("For new conversations: the agent of the conversation it was made in."),
    )
    # The tool list of whoever added the schedule — the call (see ToolCall.scope), the API
    # token — narrowed by each token that changed it since: its turns carry it. None: added
    # by its owner (a slash command, the page, the admin) and limited like their chat.
    tool_scope = models.JSONField(null=True, blank=True, editable=False)
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_status = models.CharField(max_length=40, blank=True)
    last_error = models.TextField(blank=True)
    run_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user", "name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="schedule_unique_name")
        ]
        indexes = [models.Index(fields=["enabled", "next_run_at"], name="schedule_due")]

    def __str__(self) -> str:
        return f"{self.name} ({self.cron})"


class Subagent(models.Model):
    """A task handed to a helper: its own turn in a child conversation; when that turn ends,
    its answer is posted into ``inject_into`` (the parent conversation when the spawn said
    "parent"), or only kept here when that is null or the helper answered silently."""

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")
        CANCELLED = "cancelled", _("cancelled")
        LIMITED = "limited", _("stopped at the round limit")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="subagents"
    )
    name = models.CharField(max_length=100)
    message = models.TextField()
    model = models.CharField(max_length=200, blank=True)
    depth = models.PositiveSmallIntegerField(default=1)
    parent_conversation = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    parent_turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    parent_call = models.ForeignKey(
        "tools_app.ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    inject_into = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    conversation = models.OneToOneField(
        "chat_app.Conversation", on_delete=models.CASCADE, related_name="subagent"
    )
    turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    result = models.TextField(blank=True)
    # The helper answered {"silent": true, "reason": ...}: nothing was posted; ``result``
    # holds the reason.
    silent = models.BooleanField(default=False)
    delivered_to = models.ForeignKey(
        "chat_app.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "status"], name="subagent_user_status")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class BeatTick(models.Model):
    """When the Schedules tick (sent by Celery beat) last ran: one row, for the Tools Manager
    to say whether a beat is running at all."""

    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"last tick {self.at:%Y-%m-%d %H:%M:%S}"


class SSOIdentity(models.Model):
    """Which account an OpenID Connect identity signs in to. An identity is its provider's
    ``iss`` and ``sub`` (stable and never reassigned), not the username or e-mail claim, which
    people can often change at the provider; see platform_app/sso/services.py."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SSO identity"
        verbose_name_plural = "SSO identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class UserPreferences(models.Model):
    """What a person chose about how the pages look; one row, made on their first choice."""

    class Theme(models.TextChoices):
        SYSTEM = "system", _("Follow the system")
        LIGHT = "light", _("Light")
        DARK = "dark", _("Dark")

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preferences",
    )
    theme = models.CharField(max_length=10, choices=Theme.choices, default=Theme.SYSTEM)
    # One of settings.LANGUAGES; "" follows the browser (Accept-Language, the language cookie).
    language = models.CharField(max_length=8, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "user preferences"

    def __str__(self) -> str:
        return f"preferences of user {self.user_id}"


class Quota(models.Model):
    """A budget: of a group (shared by its members: their usage adds up), or of one person
    (it replaces, for them, the group budgets of the same measure and period). Checked before
    every model round and when every tool call is bound (platform_app.usage.quotas)."""

    class Metric(models.TextChoices):
        TOKENS = "tokens", _("tokens")
        COST = "cost", _("cost ($)")
        TOOL_CALLS = "tool_calls", _("tool calls")

    class Period(models.TextChoices):
        DAY = "day", _("per day")
        MONTH = "month", _("per month")

    group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="quotas"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="quotas",
    )
    metric = models.CharField(max_length=12, choices=Metric.choices)
    period = models.CharField(max_length=8, choices=Period.choices, default=Period.DAY)
    # Tokens and tool calls are whole numbers; cost is dollars. Empty (a person's only): no
    # limit for them, whatever their groups' budgets say.
    limit = models.DecimalField(max_digits=16, decimal_places=4, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["group__name", "user__username", "metric", "period"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(group__isnull=True, user__isnull=False)
                | models.Q(group__isnull=False, user__isnull=True),
                name="quota_group_or_person",
            ),
            models.UniqueConstraint(
                fields=["group", "metric", "period"], name="quota_group_unique"
            ),
            models.UniqueConstraint(fields=["user", "metric", "period"], name="quota_user_unique"),
        ]

    def __str__(self) -> str:
        who = self.group.name if self.group else (self.user.get_username() if self.user else "?")
        return f"{who}: {self.metric} {self.period} ≤ {self.limit}"


class WebhookEndpoint(models.Model):
    """An address an admin registered to be told of events (platform_app/webhooks). Each
    delivery is signed with ``secret`` (HMAC-SHA256 over the timestamp and the body), goes
    through the SSRF guard, and is retried with backoff; ``allow_private`` lets it reach a
    private or loopback host (an internal receiver) — never a cloud metadata address."""

    class Event(models.TextChoices):
        TURN_FINISHED = "turn.finished", _("a turn finished")
        APPROVAL_REQUESTED = "approval.requested", _("a call waits for approval")
        APPROVAL_DECIDED = "approval.decided", _("an approval was decided (or expired)")
        TOOLCALL_FAILED = "toolcall.failed", _("a tool call failed")
        SCHEDULE_FIRED = "schedule.fired", _("a schedule fired")
        DEFINITION_CHANGED = (
            "tool.definition_changed",
            _("an imported tool's definition changed on its server"),
        )
        DEFINITION_REVIEWED = (
            "tool.definition_reviewed",
            _("a changed tool definition was accepted or rejected"),
        )

    name = models.CharField(max_length=100)
    url = models.URLField(max_length=500)
    secret = EncryptedTextField()
    events = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    allow_private = models.BooleanField(
        default=False, help_text=_("Allow a private or loopback address (never cloud metadata).")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one endpoint, with the state of its attempts."""

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        DELIVERED = "delivered", _("delivered")
        FAILED = "failed", _("failed")

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=40)
    event_id = models.UUIDField(unique=True)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_recent")]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    """One try of a delivery: when, how long, what the receiver answered (or why not)."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    response_excerpt = models.TextField(blank=True)

    class Meta:
        ordering = ["number", "id"]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"


class AuditExporter(models.Model):
    """A place the sealed audit log is streamed to (platform_app/audit_export): a syslog
    server, an HTTP event collector, an OpenTelemetry collector, a directory or an S3 bucket.
    Records go out in chain order; ``cursor`` is the last ``seq`` delivered, moved only after
    the receiver took it. Secrets (``token``, ``headers``, ``secret_access_key``) are
    encrypted at rest and never shown back."""

    class Kind(models.TextChoices):
        SYSLOG = "syslog", _("syslog (RFC 5424 over TCP/TLS)")
        HEC = "hec", _("HTTP event collector (Splunk HEC)")
        OTLP = "otlp", _("OpenTelemetry logs (OTLP/HTTP)")
        FILE = "file", _("JSONL files in a directory")
        S3 = "s3", _("JSONL files in S3-compatible storage")

    class Format(models.TextChoices):
        JSON = "json", _("JSON")
        CEF = "cef", _("CEF (ArcSight Common Event Format)")

    class Transport(models.TextChoices):
        TLS = "tls", _("TLS")
        TCP = "tcp", _("plain TCP")

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    format = models.CharField(max_length=4, choices=Format.choices, default=Format.JSON)
    enabled = models.BooleanField(default=True)
    # Where: a URL (HEC, OTLP; S3's endpoint), a host and port (syslog), a directory (file;
    # S3's key prefix), a bucket (S3).
    url = models.CharField(max_length=500, blank=True)
    host = models.CharField(max_length=255, blank=True)
    port = models.PositiveIntegerField(null=True, blank=True)
    transport = models.CharField(max_length=3, choices=Transport.choices, default=Transport.TLS)
    verify_tls = models.BooleanField(default=True)
    ca_pem = models.TextField(blank=True)
    directory = models.CharField(max_length=200, blank=True)
    allow_private = models.BooleanField(
        default=False, help_text=_("Allow a private or loopback address (never cloud metadata).")
    )
    bucket = models.CharField(max_length=255, blank=True)
    region = models.CharField(max_length=64, blank=True)
    access_key_id = models.CharField(max_length=128, blank=True)
    token = EncryptedTextField()
    headers = EncryptedTextField()
    secret_access_key = EncryptedTextField()
    batch_size = models.PositiveIntegerField(default=100)
    interval_seconds = models.PositiveIntegerField(default=0)
    # Delivery state.
    cursor = models.BigIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0)
    # A batch the receiver refused: its records are sent one by one up to ``isolate_until``;
    # ``rejections``: how often the first of them was refused so far.
    isolate_until = models.BigIntegerField(null=True, blank=True)
    rejections = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_delivered_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class AuditExportDeadLetter(models.Model):
    """A sealed record an exporter's receiver refused for good (after a few tries): the
    cursor moved on without it; an admin sends it again or discards it."""

    exporter = models.ForeignKey(
        AuditExporter, on_delete=models.CASCADE, related_name="dead_letters"
    )
    seq = models.BigIntegerField()
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    retried_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["seq", "id"]
        constraints = [
            models.UniqueConstraint(fields=["exporter", "seq"], name="audit_dead_letter_once")
        ]

    def __str__(self) -> str:
        return f"seq {self.seq} → {self.exporter_id}"


class ApiRequestKey(models.Model):
    """A ``/v1`` chat request remembered so that a retry of it joins its turn instead of
    starting another (issue 39): by the client's ``Idempotency-Key`` (``key``), or, for a
    request without one, by its body (``key`` empty) when the openai SDK retries it. Kept in
    the database, not in a process, so a retry that reaches another host of a fleet finds it;
    the rows expire (``V1_IDEMPOTENCY_SECONDS``) and are swept."""

    token = models.ForeignKey(
        "tools_app.ApiToken", on_delete=models.CASCADE, related_name="request_keys"
    )
    key = models.CharField(max_length=255, blank=True)
    body_hash = models.CharField(max_length=64)
    conversation = models.ForeignKey(
        "chat_app.Conversation", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Null while the first request is still starting, and for a command answered at once.
    turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    started = models.BooleanField(default=False)
    model = models.CharField(max_length=200, blank=True)
    trace = models.BooleanField(default=True)
    attempts = models.PositiveIntegerField(default=1)
    # Set when a non-streaming client left while its turn ran: the turn is stopped then,
    # unless a retry joined it first (which clears it).
    stop_after = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["token", "key"],
                condition=~models.Q(key=""),
                name="api_request_key_once",
            )
        ]
        indexes = [
            models.Index(fields=["token", "body_hash", "-created_at"], name="api_request_by_body")
        ]

    def __str__(self) -> str:
        return f"{self.key or self.body_hash[:12]} → turn {self.turn_id}"
