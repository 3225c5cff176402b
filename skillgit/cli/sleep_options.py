"""What `skillgit sleep`'s command modules share (`cli/sleep.py`, `cli/sleep_adopt.py`): the command group, the
options every subcommand takes, the project with the night's options, and how a message is said."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from skillgit import console
from skillgit.textsafe import shown

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")
JSON = typer.Option(False, "--json", help="Print JSON on stdout.")

sleep_app = typer.Typer(help="Learn from your team's own agent sessions every night, through the gate.",
                        no_args_is_help=True)


def say(message: str) -> None:
    console.info(escape(shown(message)))


def sleep_project(repo: Optional[Path], config: Optional[Path], sets: Optional[list[str]] = None, **options: Any):
    from skillgit.sleep.settings import open_sleep_project

    sp = open_sleep_project(repo, config, list(sets or []))
    settings = sp.settings.with_options(**options)
    return dataclasses.replace(sp, settings=settings)
