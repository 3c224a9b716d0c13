"""Audit exporters (issue 37): where the sealed audit log is streamed, each with its cursor
and delivery state, and the records a receiver refused for good (dead letters)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import infra.secrets


class Migration(migrations.Migration):
    dependencies = [
        ("platform", "0011_memory_hybrid_by_default"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditExporter",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("syslog", "syslog (RFC 5424 over TCP/TLS)"),
                            ("hec", "HTTP event collector (Splunk HEC)"),
                            ("otlp", "OpenTelemetry logs (OTLP/HTTP)"),
                            ("file", "JSONL files in a directory"),
                            ("s3", "JSONL files in S3-compatible storage"),
                        ],
                        max_length=8,
                    ),
                ),
                (
                    "format",
                    models.CharField(
                        choices=[("json", "JSON"), ("cef", "CEF (ArcSight Common Event Format)")],
                        default="json",
                        max_length=4,
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                ("url", models.CharField(blank=True, max_length=500)),
                ("host", models.CharField(blank=True, max_length=255)),
                ("port", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "transport",
                    models.CharField(
                        choices=[("tls", "TLS"), ("tcp", "plain TCP")], default="tls", max_length=3
                    ),
                ),
                ("verify_tls", models.BooleanField(default=True)),
                ("ca_pem", models.TextField(blank=True)),
                ("directory", models.CharField(blank=True, max_length=200)),
                (
                    "allow_private",
                    models.BooleanField(
                        default=False,
                        help_text="Allow a private or loopback address (never cloud metadata).",
                    ),
                ),
                ("bucket", models.CharField(blank=True, max_length=255)),
                ("region", models.CharField(blank=True, max_length=64)),
                ("access_key_id", models.CharField(blank=True, max_length=128)),
                ("token", infra.secrets.EncryptedTextField(blank=True, default="")),
                ("headers", infra.secrets.EncryptedTextField(blank=True, default="")),
                ("secret_access_key", infra.secrets.EncryptedTextField(blank=True, default="")),
                ("batch_size", models.PositiveIntegerField(default=100)),
                ("interval_seconds", models.PositiveIntegerField(default=0)),
                ("cursor", models.BigIntegerField(default=0)),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("failures", models.PositiveIntegerField(default=0)),
                ("isolate_until", models.BigIntegerField(blank=True, null=True)),
                ("rejections", models.PositiveIntegerField(default=0)),
                ("last_error", models.TextField(blank=True)),
                ("last_error_at", models.DateTimeField(blank=True, null=True)),
                ("last_delivered_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["name", "id"],
            },
        ),
        migrations.CreateModel(
            name="AuditExportDeadLetter",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.BigIntegerField()),
                ("error", models.TextField(blank=True)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("retried_at", models.DateTimeField(blank=True, null=True)),
                (
                    "exporter",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="dead_letters",
                        to="platform.auditexporter",
                    ),
                ),
            ],
            options={
                "ordering": ["seq", "id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("exporter", "seq"), name="audit_dead_letter_once"
                    )
                ],
            },
        ),
    ]
