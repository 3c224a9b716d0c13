"""One key for the fleet: in distributed mode a process without ``SECRET_KEY`` (or
``SECRET_KEY_FILE``) refuses to start, saying every process needs the same key; embedded mode
keeps generating its own (``make run`` needs no configuration)."""

from __future__ import annotations

from tests.helpers import settings_in


def test_it_refuses_to_start_in_distributed_mode_without_a_key(tmp_path):
    proc = settings_in(tmp_path, REDIS_URL="redis://127.0.0.1:6379/15")
    assert proc.returncode != 0
    assert "SECRET_KEY is not set" in proc.stderr
    assert "every process of the deployment" in proc.stderr
    assert "needs the same key" in proc.stderr
    assert not (tmp_path / "secret_key").exists()  # and generates none


def test_it_takes_the_key_from_a_file_in_distributed_mode(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("a-fleet-key-" + "k" * 40 + "\n")
    proc = settings_in(
        tmp_path, REDIS_URL="redis://127.0.0.1:6379/15", SECRET_KEY_FILE=str(key_file)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "a-fleet-key-" + "k" * 40


def test_it_still_generates_a_key_in_embedded_mode(tmp_path):
    proc = settings_in(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (tmp_path / "secret_key").read_text().strip()
