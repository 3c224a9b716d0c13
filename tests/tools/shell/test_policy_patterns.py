"""Deny-list entries that are command patterns (seed 001's ``rm -rf``): matched on each
command's parsed argv, never on the text — spacing, quoting, option order and grouping, a
path to the program, runners and nesting change nothing; other uses of the program pass."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tools_app.errors import PolicyDenied
from tools_app.executors.shell.patterns import parse_pattern
from tools_app.executors.shell.policy import check_command
from tools_app.executors.shell.settings import ShellSettings

BLOCKED = ["rm -rf", "git push --force", "curl"]


def denied(command: str, allowed: list[str] | None = None) -> str:
    with pytest.raises(PolicyDenied) as caught:
        check_command(command, allowed=allowed or [], blocked=BLOCKED)
    return caught.value.reason


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /workspace",
        "rm  -rf   /workspace",  # spacing
        "rm\t-rf x",
        "rm -r -f x",  # separate options
        "rm -fr x",  # other order
        "rm -f -r x",
        "rm -Rf x",  # rm's -R is -r
        "rm -rfv x",  # more letters
        "rm --recursive --force x",  # rm's long spellings
        "rm -r --force x",
        "rm x -rf",  # GNU: options after operands
        "/bin/rm -rf x",  # a path
        "/usr/bin/../bin/rm -rf x",
        "./rm -rf x",
        "'rm' '-rf' x",  # quoting
        '"rm" "-r""f" x',
        "\\rm -rf x",
        "r''m -rf x",
        "ls && rm -rf x",  # lists, pipelines, subshells
        "echo hi | rm -rf x",
        "(rm -rf x)",
        "{ rm -rf x; }",
        "if true; then rm -rf x; fi",
        "sudo rm -rf x",  # runners
        "env -i rm -rf x",
        "timeout 5 rm -rf x",
        "nice -n 5 rm -rf x",
        "xargs rm -rf < list",
        "find . -name x -exec rm -rf {} ;",
        "bash -c 'rm -rf x'",  # nested shells
        'sh -c "rm -r -f x"',
        "eval 'rm -fr x'",
        "echo $(rm -rf x)",
        "git push --force origin main",
        "git -C repo push origin main --force",
        "git push --force=yes",
        "/usr/bin/git 'push' \"--force\"",
    ],
)
def test_it_denies_a_pattern_however_it_is_written(command):
    reason = denied(command)
    assert reason in ('command "rm -rf" is blocked', 'command "git push --force" is blocked')


@pytest.mark.parametrize(
    "command",
    [
        "rm x",  # the program alone is not the pattern
        "rm -r x",
        "rm -f x",
        "rm -i -r x",
        "rm -r -- -f",  # after --, -f is a file name
        "echo rm -rf x",  # a word, not a command
        "printf '%s' 'rm -rf'",
        "grep -rf patterns .",  # another program with the same letters
        "git push origin main",
        "git pull --force",
        "git log --oneline push",
        "ls -rf",
    ],
)
def test_other_uses_pass(command):
    check_command(command, allowed=[], blocked=BLOCKED)


def test_a_program_name_entry_still_blocks_every_use():
    assert denied("curl -s https://example.com") == 'command "curl" is blocked'
    assert denied("/usr/bin/curl x") == 'command "curl" is blocked'


def test_a_pattern_applies_with_an_allowlist_too():
    assert denied("rm -fr x", allowed=["rm", "ls"]) == 'command "rm -rf" is blocked'
    check_command("rm -r x", allowed=["rm"], blocked=BLOCKED)


@pytest.mark.parametrize("allowed", [[], ["rm"]])
@pytest.mark.parametrize(
    "command", ["rm $FLAGS x", "rm {-r,-f} x", "rm $'-rf' x", 'rm "$(echo -rf)" x', "rm -* x"]
)
def test_an_argument_that_cannot_be_read_is_denied_for_a_patterns_program(command, allowed):
    reason = denied(command, allowed=allowed)
    assert reason.startswith('command "rm" has an argument hidden by ')
    assert reason.endswith(', and "rm -rf" is blocked')


def test_a_plain_glob_may_stay():
    check_command("rm *.log", allowed=["rm"], blocked=BLOCKED)
    check_command("echo $HOME", allowed=[], blocked=BLOCKED)  # not a pattern's program


def test_the_settings_accept_the_seeds_example_and_normalise_it():
    settings = ShellSettings(
        blocked_commands=["rm -rf", "  git   push  --force ", "curl", "rm -rf"]
    )
    assert settings.blocked_commands == ["rm -rf", "git push --force", "curl"]
    with pytest.raises(ValidationError, match="program names without spaces"):
        ShellSettings(allowed_commands=["rm -rf"])
    for bad in ("-rf x", "rm 'unbalanced", "rm -- x"):
        with pytest.raises(ValidationError, match="not a program name or a command pattern"):
            ShellSettings(blocked_commands=[bad])


def test_a_pattern_reads_as_the_seed_writes_it():
    pattern = parse_pattern("/bin/rm -rf")
    assert (pattern.program, pattern.short, pattern.operands) == ("rm", frozenset("rf"), ())
    assert pattern.matches("rm", ["-f", "-R", "dir"]) and not pattern.matches("rmdir", ["-rf"])


def test_the_tools_manager_form_takes_the_seeds_example():
    # The seed's `rm -rf` was a form error ("program names without spaces").
    from django.http import QueryDict

    from tools_app.manager.forms import SettingsForm

    initial = SettingsForm(model=ShellSettings, current=ShellSettings())
    post = QueryDict(mutable=True)
    for name in initial.fields:
        value = initial[name].value()
        if value is True:
            post[name] = "on"
        elif value is not False and value is not None:
            post[name] = str(value)
    post["blocked_commands"] = "rm -rf\ncurl\n"
    form = SettingsForm(post, model=ShellSettings)
    assert form.is_valid(), form.errors
    assert form.settings.blocked_commands == ["rm -rf", "curl"]
    post["blocked_commands"] = "rm 'oops"
    form = SettingsForm(post, model=ShellSettings)
    assert not form.is_valid()
    assert "not a program name or a command pattern" in str(form.errors)
