"""README.md is the newcomer's entry point: its two opening commands, the CI script and the command list."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def opening_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_the_demo_and_the_test_command():
    demo, tests = opening_commands()
    assert demo.endswith("skillgit demo") and "pip install ." in demo
    assert tests.endswith("python -m pytest -q") and ".[test]" in tests
    assert README.index("```bash") < 400  # right at the top


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    _, tests = opening_commands()
    for part in tests.split(" && "):
        assert part.strip() in ci, part


def test_every_cli_command_is_documented():
    import typer

    from skillgit.cli import app

    group = typer.main.get_command(app)
    names = set(group.commands)
    assert {"train", "demo", "log", "revert", "doctor"} <= names
    for name in names:
        assert f"`{name}" in README or f"`skillgit {name}" in README, name


def test_the_command_tables_examples_run_as_written():
    """Each example of README's command table parses with that command's own options (the --help examples are
    checked the same way in tests/test_newcomer11_cli.py)."""
    import shlex

    import typer

    from skillgit.cli import app

    table = README[README.index("| command | what it does | example |"):]
    table = table[:table.index("\n\n")]
    group = typer.main.get_command(app)
    examples = re.findall(r"\| `(skillgit [^`]+)` \|\s*$", table, re.M)
    assert len(examples) >= 20
    for example in examples:
        words = shlex.split(example)[1:]
        command = group
        while getattr(command, "commands", None) and words and words[0] in command.commands:
            command, words = command.commands[words[0]], words[1:]
        assert not getattr(command, "commands", None), example
        command.make_context(example, words).close()
