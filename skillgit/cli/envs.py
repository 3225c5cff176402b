"""CLI: `skillgit env list` — the environments (benchmark adapters) built in and added by installed packages;
`skillgit env new NAME` — a package that adds one."""

from pathlib import Path

import typer

from skillgit import console

env_app = typer.Typer(help="Environments: benchmark adapters (built in, or added by packages through the "
                           "`skillgit.envs` entry point group).", no_args_is_help=True)


@env_app.command("list")
def list_envs(as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """Every environment: name, where it comes from, its metric and its data source."""
    from skillgit import envs
    from skillgit.textsafe import shown

    rows = envs.infos()
    if as_json:
        console.print_json([r.to_dict() for r in rows])
        return
    width = max(len(r.name) for r in rows)
    for r in rows:
        typer.echo(shown(f"{r.name.ljust(width)}  {r.origin}: {r.summary}"))
        if r.metric:
            typer.echo(shown(f"{''.ljust(width)}  metric: {r.metric}; data: {r.source}"))


@env_app.command("new")
def new_env(name: str = typer.Argument(..., help="The environment's name (lower case, e.g. my-bench)."),
            folder: Path = typer.Option(Path("."), "--dir", help="Where to create skillgit-env-NAME/.")) -> None:
    """Scaffold a package that adds an environment (entry point, Env subclass, sample, test)."""
    from skillgit.envs.scaffold import new_package

    root = new_package(name, folder)
    console.info(f"wrote {root}: fill in load() and score() in its module, then `pip install -e {root}`; "
                 "`skillgit env list` shows it")
    typer.echo(str(root))


def register(app: typer.Typer) -> None:
    app.add_typer(env_app, name="env")
