"""CLI: `skillgit ui` — the live dashboard (skillgit/ui) on 127.0.0.1."""

from pathlib import Path
from typing import Optional

import typer

from skillgit import console

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")


def ui(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
       port: int = typer.Option(0, "--port", "-p", min=0, max=65535,
                                help="Port on 127.0.0.1 (default: a free one)."),
       open_: bool = typer.Option(False, "--open", help="Open the page in the default web browser."),
       grace: float = typer.Option(30.0, "--grace", min=0,
                                   help="Seconds the runs it started get to save when it stops.")) -> None:
    """Serve a live dashboard on 127.0.0.1 (its URL, with an access token, on stdout): runs, branches, a run as it
    trains, reports; start, stop and resume runs. Ctrl-C stops it and the runs it started (each saves)."""
    from rich.markup import escape

    from skillgit.textsafe import shown
    from skillgit.ui import Job, Served, adopted_lines, ending_lines, serve, stopping_line

    def say(text: str) -> None:
        console.info(escape(shown(text)))

    def ready(served: Served) -> None:
        typer.echo(served.url)  # data: the one line a script reads
        console.info(escape(f"skillgit ui: serving {shown(str(served.root))} at {served.url} — keep the token "
                            "private; Ctrl-C stops it (runs it started are stopped and saved)"))
        if open_:
            import webbrowser

            if not webbrowser.open(served.url):  # (a server, a container: no browser; nothing else says so)
                console.info("--open: no web browser could be started here; open the URL above in yours (on another "
                             "machine: forward the port, README \"Live dashboard\"), or set BROWSER")
        for line in adopted_lines(served.adopted):
            say(line)

    def stopping(jobs: list[Job]) -> None:
        if line := stopping_line(jobs, grace):
            say(line)

    for line in ending_lines(serve(repo, config, port=port, ready=ready, grace_s=grace, stopping=stopping)):
        say(line)


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)
