"""Secret environment variables for a long-lived process (a stdio MCP server's API key).

Where a variable's value may NOT be written, and why:
- the command line of any host process (``ps`` and /proc/<pid>/cmdline are world-readable):
  so never bubblewrap's ``--setenv``;
- the container's configuration (``docker inspect`` shows ``Config.Env``, and the Docker tool
  inspects containers): so never ``create_container(environment=...)``;
- any place another tool process can read: every sandbox (the conversation's warm container,
  another bubblewrap) has its own pid namespace and /proc, and the server gets a sandbox of
  its own (``Sandbox.spawn``), so only the server's own processes see its environment.

How the values get there instead: the process starts under a tiny shell launcher (``argv``
below) that waits for a file of ``export NAME='value'`` lines (quoted with ``shlex.quote``),
sources it, removes it and ``exec``s the server, so the values end up in the server's
environment and nowhere else:
- docker: the file is written into the container's own ``/tmp`` (a tmpfs, memory only) by one
  ``docker exec`` as the sandbox uid that reads it from the exec's stdin (an exec's stdin is
  recorded nowhere), mode 0600, renamed into place when complete;
- bubblewrap: the file is written before start into a fresh directory on the host's
  ``/dev/shm`` (a tmpfs), mode 0700 and owned by the sandbox uid, bind-mounted at
  ``/run/cc-env``; the host removes the directory when the session ends, whatever happened.
The file lives for the few milliseconds between the server's start and its ``exec``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

DOCKER_ENV_FILE = "/tmp/.cc-env"  # noqa: S108 - inside the server's own container
BWRAP_ENV_DIR = "/run/cc-env"
BWRAP_ENV_FILE = f"{BWRAP_ENV_DIR}/env"

# $1: the file; $2...: the server's argv. Polls briefly (docker writes the file after the
# container started); never echoes a value.
LAUNCHER = r"""
f=$1; shift; n=0
while [ ! -s "$f" ]; do
  n=$((n+1))
  if [ "$n" -gt 1200 ]; then
    echo "controlcenter: the server's secret environment did not arrive" >&2; exit 125
  fi
  sleep 0.05
done
. "$f" || exit 125
rm -f "$f"
exec "$@"
"""

# The exec that writes the file inside a docker container: stdin → a private file, then renamed
# so the launcher never sources half of it.
DOCKER_FEEDER = (
    f"umask 077 && cat > {DOCKER_ENV_FILE}.part && mv -f {DOCKER_ENV_FILE}.part {DOCKER_ENV_FILE}"
)


def launcher_argv(env_file: str, argv: list[str]) -> list[str]:
    return ["sh", "-c", LAUNCHER, "sh", env_file, *argv]


def env_script(values: dict[str, str]) -> bytes:
    """What the launcher sources: one ``export`` per variable, each value single-quoted
    (names are checked POSIX names, values have no NUL: ``SpawnRequest`` refuses both)."""
    bad = [k for k in values if not _NAME.fullmatch(k)]
    if bad:
        raise ValueError(f"not an environment variable name: {bad[0]!r}")
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(values.items())).encode()


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _tmpfs_root() -> str | None:
    shm = Path("/dev/shm")  # noqa: S108 - the host's tmpfs: values never reach a disk
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def private_env_dir(values: dict[str, str], uid: int) -> Path:
    """A fresh directory holding ``env`` (the launcher's file), readable and writable by
    ``uid`` only (the launcher removes the file); the caller removes the directory."""
    directory = Path(tempfile.mkdtemp(prefix="cc-spawn-env-", dir=_tmpfs_root()))
    try:
        fd = os.open(directory / "env", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if os.geteuid() == 0:
                os.fchown(fd, uid, uid)
            os.write(fd, env_script(values))
        finally:
            os.close(fd)
        if os.geteuid() == 0:
            os.chown(directory, uid, uid)
        directory.chmod(0o700)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return directory
