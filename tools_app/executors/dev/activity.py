from __future__ import annotations

from typing import Any

from tools_app import selectors
from tools_app.errors import ToolError
from tools_app.executors.dev.settings import DevSettings
from tools_app.executors.dev.tools import (
    GitAdd,
    GitCommit,
    GitStatus,
    RunTests,
    SearchCode,
    test_argv,
)
from tools_app.executors.file.paths import workspace_parts
from tools_app.executors.sandboxing import run_in_sandbox
from tools_app.executors.shell.settings import ShellSettings
from tools_app.registry import activity
from tools_app.runtime import ActivityContext
from tools_app.sandbox import ExecResult

# The workspace directory belongs to the sandbox uid; git refuses "dubious ownership" when the
# "none" backend runs it as another user.
GIT = ["git", "-c", "safe.directory=*", "-c", "init.defaultBranch=main"]


def _run(ctx: ActivityContext[DevSettings], argv: list[str], **kw: Any) -> ExecResult:
    settings = ctx.settings
    return run_in_sandbox(
        ctx,
        settings,
        argv,
        timeout=float(settings.timeout_seconds),
        max_output=settings.max_output_bytes,
        **kw,
    )


def _outcome(result: ExecResult, what: str) -> dict[str, Any]:
    data = {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "truncated": result.truncated,
    }
    if result.exit_code != 0:
        raise ToolError(f"{what} exited with status {result.exit_code}", data=data)
    return data


def _git_env(ctx: ActivityContext[DevSettings]) -> dict[str, str]:
    settings = ctx.settings
    name, email = settings.git_author_name, settings.git_author_email
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def _ensure_repo(ctx: ActivityContext[DevSettings]) -> None:
    probe = _run(ctx, [*GIT, "rev-parse", "--is-inside-work-tree"], stream=False)
    if probe.exit_code != 0:
        _outcome(_run(ctx, [*GIT, "init", "-q"]), "git init")
        ctx.emit_output("initialised a git repository in the workspace\n")


@activity("run_tests")
def run_tests(args: RunTests, ctx: ActivityContext[DevSettings]) -> dict[str, Any]:
    shell = selectors.group_settings("shell", ShellSettings)
    argv = test_argv(args.command, ctx.settings.test_commands)  # settings may have changed
    cwd = "/".join(["/workspace", *workspace_parts(args.cwd)])
    # PYTHONPATH: `pytest` then imports the project's modules from the working directory as
    # `python3 -m pytest` does (the runner the tool used before the seed's default command).
    result = _run(ctx, argv, cwd=cwd, network=shell.allow_network, env={"PYTHONPATH": cwd})
    # The seed's result: output, errors, returncode (and success, added for every call).
    data = {
        "output": result.stdout,
        "errors": result.stderr,
        "returncode": result.exit_code,
        "truncated": result.truncated,
    }
    if result.exit_code == 0:
        return data
    lines = (result.stdout.strip() or result.stderr.strip() or "no output").splitlines()
    summary = lines[-1]
    if result.exit_code == 5:
        reason = "no tests were collected"
    elif result.exit_code == 127:
        reason = f"{argv[0]}: command not found in the sandbox"
    else:
        reason = f"tests failed: {summary}"
    raise ToolError(reason, data=data)


@activity("git_status")
def git_status(args: GitStatus, ctx: ActivityContext[DevSettings]) -> dict[str, Any]:
    _ensure_repo(ctx)
    return _outcome(_run(ctx, [*GIT, "status", "--short", "--branch"]), "git status")


@activity("git_add")
def git_add(args: GitAdd, ctx: ActivityContext[DevSettings]) -> dict[str, Any]:
    _ensure_repo(ctx)
    data = _outcome(_run(ctx, [*GIT, "add", "--", *args.files]), "git add")
    status = _run(ctx, [*GIT, "status", "--short"], stream=False)
    return {**data, "status": status.stdout}


@activity("git_commit")
def git_commit(args: GitCommit, ctx: ActivityContext[DevSettings]) -> dict[str, Any]:
    _ensure_repo(ctx)
    data = _outcome(
        _run(ctx, [*GIT, "commit", "-q", "-m", args.message], env=_git_env(ctx)), "git commit"
    )
    head = _run(ctx, [*GIT, "log", "-1", "--format=%H %s"], stream=False)
    commit, _, subject = head.stdout.strip().partition(" ")
    return {**data, "commit": commit, "subject": subject}


@activity("search_code")
def search_code(args: SearchCode, ctx: ActivityContext[DevSettings]) -> dict[str, Any]:
    settings = ctx.settings
    argv = [
        "rg",
        "--line-number",
        "--no-heading",
        "--color",
        "never",
        "--max-count",
        str(settings.max_search_results),
    ]
    if args.glob:
        argv += ["--glob", args.glob]
    argv += ["-e", args.pattern, "--", args.path]
    result = _run(ctx, argv, stream=False)
    if result.exit_code not in (0, 1):  # 1 = no match
        raise ToolError(f"search failed: {result.stderr.strip()[-300:]}")
    matches = result.stdout.splitlines()[: settings.max_search_results]
    ctx.emit_output(f"{len(matches)} matches\n")
    return {"matches": matches, "count": len(matches)}
