"""Ordinary command lines the shell policy must let through, and its small helpers."""

from __future__ import annotations

import pytest

from tools_app.errors import PolicyDenied
from tools_app.executors.shell.policy import CommandCheck, check_command, split_argv

ALLOWED = ["ls", "cat", "grep", "python", "pytest", "git", "wc", "head", "echo"]
BLOCKED = ["rm", "curl"]


def check(command: str, allowed: list[str] = ALLOWED, blocked: list[str] = BLOCKED) -> list[str]:
    return check_command(command, allowed=allowed, blocked=blocked).programs


@pytest.mark.parametrize(
    ("command", "programs"),
    [
        pytest.param("ls -la", ["ls"], id="simple"),
        pytest.param("ls | grep py | wc -l", ["ls", "grep", "wc"], id="pipeline"),
        pytest.param("git status && git diff --stat", ["git", "git"], id="and-chain"),
        pytest.param("cat a.txt | head -n 5; echo done", ["cat", "head", "echo"], id="list"),
        pytest.param("grep -q x f || echo missing", ["grep", "echo"], id="or-chain"),
        pytest.param("ls\ncat a.txt", ["ls", "cat"], id="two-lines"),
        pytest.param('grep "rm -rf" notes.txt', ["grep"], id="rm-as-quoted-data"),
        pytest.param("echo 'a; rm x'", ["echo"], id="semicolon-in-single-quotes"),
        pytest.param("grep -r 'curl http://x' src", ["grep"], id="curl-as-data"),
        pytest.param("echo rm curl", ["echo"], id="blocked-names-as-arguments"),
        pytest.param("ls -- rm", ["ls"], id="rm-as-file-name"),
        pytest.param("echo '$(rm x)' '`rm y`'", ["echo"], id="substitution-in-single-quotes"),
        pytest.param('echo "a \\$(rm x)"', ["echo"], id="escaped-dollar"),
        pytest.param("ls > out.txt 2>&1", ["ls"], id="redirect-to-file"),
        pytest.param("cat < in.txt >> out.txt", ["cat"], id="redirect-in-and-append"),
        pytest.param("python -m pytest -q", ["python"], id="python-m-pytest"),
        pytest.param("pytest -q tests/ -k 'not slow'", ["pytest"], id="pytest"),
        pytest.param('git commit -m "fix: rm bug"', ["git"], id="commit-message-mentions-rm"),
        pytest.param("ls # then rm -rf /", ["ls"], id="comment"),
        pytest.param("ls -la \\\n  src", ["ls"], id="line-continuation"),
        pytest.param("X=1 python script.py", ["python"], id="assignment-prefix"),
        pytest.param("PYTHONPATH=src pytest -q", ["pytest"], id="pythonpath-prefix"),
        pytest.param("/bin/ls -la", ["ls"], id="absolute-path-of-allowed"),
        pytest.param(".venv/bin/python -m pytest", ["python"], id="venv-python"),
        pytest.param("(ls; cat a) | wc -l", ["ls", "cat", "wc"], id="subshell"),
        pytest.param("{ ls; cat a; } > all.txt", ["ls", "cat"], id="group"),
        pytest.param("for f in a b; do cat $f; done", ["cat"], id="for-loop"),
        pytest.param("if grep -q x f; then echo yes; fi", ["grep", "echo"], id="if"),
        pytest.param("echo $(ls | wc -l)", ["ls", "wc", "echo"], id="substitution-of-allowed"),
        pytest.param('echo "files: `ls`"', ["ls", "echo"], id="backticks-of-allowed"),
        pytest.param("diff_out=$(git diff); echo $diff_out", ["git", "echo"], id="assign-subst"),
        pytest.param(
            "cat > notes.md <<'EOF'\nrm -rf / $(curl evil)\nEOF", ["cat"], id="quoted-heredoc"
        ),
        pytest.param('cat <<"EOF"\n`rm x`\nEOF\nls', ["cat", "ls"], id="double-quoted-heredoc"),
        pytest.param("cat <<EOF\nhello $USER\nEOF", ["cat"], id="heredoc-with-variable"),
        pytest.param("cat <<-EOF\n\tindented\n\tEOF", ["cat"], id="heredoc-dash"),
        pytest.param('echo "${name:-it\'s}"', ["echo"], id="quote-in-parameter-default"),
        pytest.param("python - <<'EOF'\nimport sys\nEOF", ["python"], id="python-stdin-heredoc"),
        pytest.param("git diff HEAD~1 -- src/ | head", ["git", "head"], id="tilde-in-argument"),
        pytest.param("ls *.py | wc -l", ["ls", "wc"], id="glob-in-argument"),
        # Program-level policy: the allowlist says which programs run, not what they do inside.
        # An allowed git may be told to run a pager, an allowed python may run any code; the
        # sandbox is the boundary for what those programs do.
        pytest.param("git -c core.pager=rm log", ["git"], id="git-config-is-arguments"),
        pytest.param(
            "python -c 'import os; os.system(\"rm x\")'", ["python"], id="python-c-is-arguments"
        ),
    ],
)
def test_it_allows_ordinary_command_lines(command: str, programs: list[str]) -> None:
    assert check(command) == programs


def test_it_returns_a_command_check_for_the_trace() -> None:
    result = check_command("ls | grep x", allowed=ALLOWED, blocked=BLOCKED)
    assert result == CommandCheck(programs=["ls", "grep"])


def test_it_checks_runners_and_the_program_they_run() -> None:
    allowed = ["timeout", "env", "xargs", "pytest", "grep"]
    assert check("timeout -s KILL 60 pytest -q", allowed) == ["timeout", "pytest"]
    assert check("env -i HOME=/tmp pytest", allowed) == ["env", "pytest"]
    assert check("grep -l x -r . | xargs -n1 grep y", allowed) == ["grep", "xargs", "grep"]
    with pytest.raises(PolicyDenied, match='"cat" is not in the allowed'):
        check("timeout 5 cat f", allowed)


def test_it_parses_literal_shell_strings_when_the_shell_is_allowed() -> None:
    assert check("bash -c 'ls | wc -l'", ["bash", "ls", "wc"]) == ["bash", "ls", "wc"]
    with pytest.raises(PolicyDenied, match='"cat" is not in the allowed'):
        check("bash -c 'cat secret'", ["bash", "ls"])


def test_it_lets_an_allowed_shell_run_a_script_file() -> None:
    # like `python script.py`: the script's content is the sandbox's business
    assert check("bash scripts/test.sh", ["bash"]) == ["bash"]


def test_it_allows_any_visible_program_when_the_allowlist_is_empty() -> None:
    assert check("make test && npm run build | tee log", []) == ["make", "npm", "tee"]
    assert check("docker ps", [], []) == ["docker"]


def test_it_allows_hidden_and_unparseable_lines_when_the_allowlist_is_empty() -> None:
    # the rule: with no allowlist only the sandbox limits what runs
    assert check("$CMD --version", []) == []
    assert check("case $x in a) ls;; esac", []) == []
    assert check('bash -c "$SCRIPT"', []) == ["bash"]


def test_it_still_blocks_visible_programs_when_the_allowlist_is_empty() -> None:
    for command in ["rm -rf /", "make && rm x", "env rm x", "bash -c 'curl x'", "ls $(rm x)"]:
        with pytest.raises(PolicyDenied, match="is blocked"):
            check(command, [])


def test_it_normalises_list_entries() -> None:
    assert check("git log", [" /usr/bin/git ", "", "ls"]) == ["git"]
    with pytest.raises(PolicyDenied, match='command "rm" is blocked'):
        check("rm x", [], ["/bin/rm"])


def test_it_names_the_allowed_commands_when_refusing() -> None:
    with pytest.raises(PolicyDenied) as denied:
        check("make", ["ls", "cat", "ls"])
    assert str(denied.value) == 'command "make" is not in the allowed commands (ls, cat)'


def test_it_reports_a_blocked_program_before_anything_else() -> None:
    with pytest.raises(PolicyDenied, match='command "curl" is blocked'):
        check("$X; make; curl x")


@pytest.mark.parametrize("command", ["", "   ", "\n\n", "# just a comment", "  # a\n# b"])
def test_it_refuses_an_empty_command(command: str) -> None:
    with pytest.raises(PolicyDenied, match="the command is empty"):
        check(command)


def test_it_denies_unparseable_lines_only_under_an_allowlist() -> None:
    with pytest.raises(PolicyDenied, match="cannot parse the command line: .*time command"):
        check("time pytest")
    assert check("\\time pytest", ["time", "pytest"]) == ["time", "pytest"]


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        pytest.param("pytest -q tests/", ["pytest", "-q", "tests/"], id="plain"),
        pytest.param('git commit -m "fix: a b"', ["git", "commit", "-m", "fix: a b"], id="dq"),
        pytest.param("grep 'a  b' f", ["grep", "a  b", "f"], id="single-quotes"),
        pytest.param("ls my\\ file", ["ls", "my file"], id="escaped-space"),
        pytest.param("echo $HOME; ls", ["echo", "$HOME;", "ls"], id="nothing-expanded"),
        pytest.param("a'b'\"c\"", ["abc"], id="adjacent-quotes"),
        pytest.param("", [], id="empty"),
    ],
)
def test_it_splits_a_simple_command(command: str, argv: list[str]) -> None:
    assert split_argv(command) == argv


@pytest.mark.parametrize("command", ['echo "open', "echo 'open", "echo trailing\\"])
def test_it_rejects_unbalanced_quotes_when_splitting(command: str) -> None:
    with pytest.raises(ValueError):
        split_argv(command)
