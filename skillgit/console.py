"""Output for humans and for scripts: data goes to stdout, progress, tables meant for reading and errors to
stderr (rich). Nothing else in skillgit prints."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def print_error(message: str, hint: str = "") -> None:
    """`error: …` and `hint: …` on stderr. The texts are shown literally: brackets (`skillgit[mcp]`) are not rich
    markup, and control characters from model or file content are escaped."""
    from rich.markup import escape

    from skillgit.textsafe import shown

    err.print(f"[bold red]error:[/] {escape(shown(message))}", markup=True, highlight=False)
    if hint:
        err.print(f"[yellow]hint:[/] {escape(shown(hint))}", markup=True, highlight=False)


def print_json(data: Any) -> None:
    """Machine-readable data on stdout, one document."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def info(message: str) -> None:
    err.print(message)
