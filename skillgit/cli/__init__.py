"""The command line (typer). The only layer that prints for humans, reads argv and exits.

Each command module registers its commands on `app`; `main()` turns a SkillgitError into a one-line error
with its hint on stderr and the error's fixed exit code, and anything else into exit code 1 (a bug).
"""

from __future__ import annotations

import sys
from typing import Sequence

import typer

from skillgit import __version__
from skillgit.errors import ExitCode, Interrupted, SkillgitError

app = typer.Typer(
    name="skillgit",
    help="Train a skill document (SKILL.md, AGENTS.md, a system prompt) like weights; every step is a git commit.",
    no_args_is_help=True,
    add_completion=True,  # `skillgit --install-completion` (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"skillgit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """skillgit: train skills, keep every step in git."""


def _register() -> None:
    # Imported here so that `skillgit --help` lists every command and each module stays independent.
    import importlib

    for name in ("history", "train", "doctor", "review", "sleep", "integrations"):
        try:
            module = importlib.import_module(f"skillgit.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"skillgit.cli.{name}":
                continue
            raise
        module.register(app)


_register()


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted("interrupted", "run the same command again to resume where it stopped")


def main(args: Sequence[str] | None = None, prog_name: str | None = None) -> None:
    """Entry point: our errors become `error:`/`hint:` lines and their exit code; Ctrl-C says how to resume and
    exits 130. (Ctrl-C raises `Interrupted`, a SkillgitError, rather than KeyboardInterrupt, which click would turn
    into "Aborted!" and exit 1.) Always ends in SystemExit. `args` (default: sys.argv[1:]) and `prog_name`
    (default: detected by click) let tests run the exact entry point in-process."""
    import signal

    from skillgit.console import print_error

    signal.signal(signal.SIGINT, _interrupt)
    try:
        app(args=None if args is None else list(args), prog_name=prog_name)
    except SkillgitError as exc:
        print_error(exc.message, exc.hint)
        sys.exit(int(exc.code))
    except KeyboardInterrupt:
        print_error("interrupted", "run the same command again to resume where it stopped")
        sys.exit(int(ExitCode.INTERRUPTED))
