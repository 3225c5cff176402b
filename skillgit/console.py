"""Output for humans and for scripts: data goes to stdout, progress, tables meant for reading and errors to
stderr (rich). Nothing else in skillgit prints.

`err` and `out` (rich consoles) are made on first use: importing rich costs more than a whole `skillgit log`
spends printing plain data, so commands that print only data never import it."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    err: Console
    out: Console

_consoles: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    # `console.err` / `console.out`: the same two consoles for the whole process, made when first asked for.
    if name not in ("err", "out"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _consoles:
        from rich.console import Console

        _consoles[name] = Console(stderr=name == "err", highlight=False, soft_wrap=True)
    return _consoles[name]


def print_error(message: str, hint: str = "") -> None:
    """`error: …` and `hint: …` on stderr. The texts are shown literally: brackets (`skillgit[mcp]`) are not rich
    markup, and control characters from model or file content are escaped."""
    from rich.markup import escape

    from skillgit.textsafe import shown

    stderr = __getattr__("err")
    stderr.print(f"[bold red]error:[/] {escape(shown(message))}", markup=True, highlight=False)
    if hint:
        stderr.print(f"[yellow]hint:[/] {escape(shown(hint))}", markup=True, highlight=False)


def print_json(data: Any) -> None:
    """Machine-readable data on stdout, one document (no raw control or bidi character: see `json_shown`)."""
    from skillgit.textsafe import json_shown

    sys.stdout.write(json_shown(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n")
    sys.stdout.flush()


def columns(headers: list[str], rows: list[list[str] | None], right: tuple[int, ...] = ()) -> str:
    """Aligned plain-text columns: a header line, then a line per row (`None`: a rule between sections); `right`
    lists the right-aligned columns. Not a rich Table: rendering 1,000 rows with rich takes seconds, and the read
    commands (`log`, `status`) would pay rich's import for it."""
    cells = [r for r in rows if r is not None]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(row: list[str] | None) -> str:
        if row is None:
            return "  ".join("-" * w for w in widths)
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


def info(message: str) -> None:
    __getattr__("err").print(message)
