"""The coding agent's plans: write a test, see it fail, fix the code, see it pass, commit.

``native_plan`` uses the dev tools (run_tests, git_add, git_commit); ``text_plan`` is what a
model without native tools writes: fenced JSON calls for files, ``>>> RUN COMMAND`` blocks
for pytest and git.
"""

from __future__ import annotations

import re

from tests.scenarios.agent import Seen, Step, failed_with, output_has, succeeded

TASK = "Add an add() function in src/calc.py with a test, make the test pass and commit it."
BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from src.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SUBJECT = "Add add() with a test"
DONE = "Done: add() is fixed, its test passes and the change is committed."
TURN_TIMEOUT = 120.0  # the first call may create the sandbox container


def committed(seen: list[Seen]) -> None:
    (commit,) = seen
    assert re.fullmatch(r"[0-9a-f]{40}", commit.result.get("commit", "")), "no commit id"
    assert commit.result.get("subject") == SUBJECT


def native_plan() -> list[Step]:
    return [
        Step(
            "write the code",
            text="I will write the function, then a test for it.",
            calls=[("write_file", {"path": "src/calc.py", "content": BUGGY})],
        ),
        Step(
            "write the test",
            calls=[("write_file", {"path": "tests/test_calc.py", "content": TEST})],
            expect=[succeeded, output_has("src/calc.py")],
        ),
        Step(
            "run the tests",
            calls=[("run_tests", {"path": "."})],
            expect=[succeeded, output_has("tests/test_calc.py")],
        ),
        Step(
            "fix the code",
            text="The test fails: add() subtracts. Fixing it.",
            calls=[("write_file", {"path": "src/calc.py", "content": FIXED})],
            expect=[failed_with("tests failed", "1 failed", "assert -1 == 5", '"returncode": 1')],
        ),
        Step("run the tests again", calls=[("run_tests", {})], expect=[succeeded]),
        Step(
            "stage",
            calls=[("git_add", {"files": ["src/calc.py", "tests/test_calc.py"]})],
            expect=[succeeded, output_has("1 passed", '"returncode": 0')],
        ),
        Step(
            "commit",
            calls=[("git_commit", {"message": SUBJECT})],
            expect=[succeeded, output_has("A  src/calc.py", "A  tests/test_calc.py")],
        ),
        Step("answer", text=DONE, expect=[succeeded, committed]),
    ]


PYTEST = "python3 -m pytest -q"
COMMIT = (
    "set -e\n"
    "git init -q\n"
    "git add -A\n"
    f"git -c user.name=Agent -c user.email=agent@example.com commit -q -m '{SUBJECT}'\n"
    "git log --format='%H %s'"
)


def text_plan() -> list[Step]:
    return [
        Step(
            "write the code",
            text="I will write the function and a .gitignore, then a test.",
            calls=[
                ("write_file", {"path": "src/calc.py", "content": BUGGY}),
                ("write_file", {"path": ".gitignore", "content": "__pycache__/\n"}),
            ],
        ),
        Step(
            "write the test",
            calls=[("write_file", {"path": "tests/test_calc.py", "content": TEST})],
            expect=[succeeded, output_has("src/calc.py", ".gitignore")],
        ),
        Step("run the tests", calls=[("shell_exec", {"command": PYTEST})], expect=[succeeded]),
        Step(
            "fix the code",
            text="The test fails: add() subtracts. Fixing it.",
            calls=[("write_file", {"path": "src/calc.py", "content": FIXED})],
            expect=[failed_with("command exited with status 1", "1 failed", "assert -1 == 5")],
        ),
        Step(
            "run the tests again", calls=[("shell_exec", {"command": PYTEST})], expect=[succeeded]
        ),
        Step(
            "commit",
            calls=[("shell_exec", {"command": COMMIT})],
            expect=[succeeded, output_has("1 passed")],
        ),
        Step("answer", text=DONE, expect=[succeeded, output_has(SUBJECT)]),
    ]
