"""CLI: `mcp`, `install`, `uninstall` — skillgit inside the agents (Claude Code, Codex, GitHub Copilot).

`skillgit mcp` serves the MCP tools on stdio (stdout is the protocol: nothing else may print there).
`skillgit install|uninstall <agent> [--project|--user]` writes or removes exactly the files listed by
`skillgit.integrations.artifacts`; the report goes to stderr (`--json`: to stdout).
"""

from pathlib import Path
from typing import Any, NoReturn

import typer
import typer.core
from rich.markup import escape

from skillgit import console
from skillgit.errors import SkillgitError
from skillgit.textsafe import shown

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")
AGENT = typer.Argument(..., help="One of the agents skillgit installs into (the list comes from the agents "
                                   "registry when help is shown).")
SCOPE = typer.Option(True, "--project/--user", help="Into this repository (default) or into your home folder.")
DRY_RUN = typer.Option(False, "--dry-run", help="Say what would change; change nothing.")
JSON = typer.Option(False, "--json", help="Print the report as JSON on stdout.")


def mcp(repo: Path | None = REPO, config: Path | None = CONFIG) -> None:
    """Serve skillgit to an agent over MCP (stdio): read tools, a budgeted train onto a review branch; never
    merges, reverts, pushes or moves the skill branch. Needs the MCP SDK (the mcp extra of skillgit)."""
    from skillgit.cli import has_command
    from skillgit.integrations import commands
    from skillgit.integrations.mcp_server import serve

    commands.use_cli(has_command)  # the server asks it before running `skillgit sleep …` or naming `report`
    try:
        serve(repo, config)
    except SkillgitError as exc:
        _fail(exc)


def _fail(exc: SkillgitError) -> NoReturn:
    """Print a SkillgitError escaped (its hint may hold `skillgit[mcp]` or JSON, which rich reads as markup)."""
    console.print_error(exc.message, exc.hint)  # print_error shows both literally (no markup, controls escaped)
    raise typer.Exit(int(exc.code))


def _show(report, as_json: bool, verb: str) -> None:
    if as_json:
        console.print_json(report.to_dict())
        return
    for action in report.actions:
        console.info(escape(shown(f"  {action.describe()}")))
    for warning in report.warnings:
        console.info(escape(shown(f"warning: {warning}")))
    for note in report.notes:
        console.info(escape(shown(f"note: {note}")))
    where = "this repository" if report.scope == "project" else "your home folder"
    state = f"{verb} for {report.agent} in {where}" if report.changed else f"nothing to change for {report.agent}"
    console.info(escape(shown(f"{state} ({report.base}); record: {report.manifest}")))


def install(agent: str = AGENT, project: bool = SCOPE, dry_run: bool = DRY_RUN, as_json: bool = JSON,
            repo: Path | None = REPO,
            trust_folder: bool = typer.Option(False, "--trust-folder",
                                              help="copilot --project: also trust this repository in the Copilot "
                                                   "CLI (it reads a project's MCP servers only in trusted "
                                                   "folders; uninstall removes the entry).")) -> None:
    """Install skillgit into an agent: its skill, MCP server, commands/hook (Claude Code), instructions snippet."""
    from skillgit.integrations.install import install as do_install

    try:
        report = do_install(agent, "project" if project else "user", repo=repo, dry_run=dry_run,
                            trust_folder=trust_folder)
    except SkillgitError as exc:
        _fail(exc)
    _show(report, as_json, "would install" if dry_run else "installed")


def uninstall(agent: str = AGENT, project: bool = SCOPE, dry_run: bool = DRY_RUN, as_json: bool = JSON,
              repo: Path | None = REPO) -> None:
    """Remove exactly what `skillgit install` wrote; edited files get their previous bytes back."""
    from skillgit.integrations.install import uninstall as do_uninstall

    try:
        report = do_uninstall(agent, "project" if project else "user", repo=repo, dry_run=dry_run)
    except SkillgitError as exc:
        _fail(exc)
    _show(report, as_json, "would uninstall" if dry_run else "uninstalled")


class _AgentsListed(typer.core.TyperCommand):
    """`install` / `uninstall`: their help lists the install targets the agents registry holds when it is shown
    (an agent registered at run time too), and importing the command line imports no agent."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # `--project --user`: the flag pair keeps the last one given, so one of the two was silently dropped
        given = set(args[:args.index("--")] if "--" in args else args) & {"--project", "--user"}
        if len(given) == 2:
            raise SkillgitError("--project and --user exclude each other",
                                "give one: --project (this repository, the default) or --user (your home folder)")
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from skillgit.integrations.artifacts import targets

        for param in self.params:
            if param.name == "agent":
                param.help = " | ".join(targets())  # type: ignore[attr-defined]  # TyperArgument.help
        return super().format_help(ctx, formatter)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.command("install", cls=_AgentsListed)(install)
    app.command("uninstall", cls=_AgentsListed)(uninstall)
