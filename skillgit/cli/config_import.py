"""CLI: `skillgit config import` — a Microsoft SkillOpt config → skillgit.yaml (skillgit/skillopt_import.py)."""

import os
from pathlib import Path
from typing import Optional

import typer

from skillgit import console
from skillgit.errors import ExitCode, SkillgitError
from skillgit.textsafe import shown


def config_import(source: Path = typer.Argument(..., help="The SkillOpt config, e.g. configs/searchqa/default.yaml "
                                                          "(its _base_ files are read too)."),
                  out: Path = typer.Option(Path("skillgit.yaml"), "--out", "-o",
                                           help="Where to write the skillgit config."),
                  force: bool = typer.Option(False, "--force", help="Overwrite --out when it exists."),
                  cfg_options: Optional[list[str]] = typer.Option(
                      None, "--cfg-options", help="SkillOpt-style overrides applied before the import, "
                                                  "key=value (repeatable)."),
                  as_json: bool = typer.Option(False, "--json", help="Print what became of every SkillOpt key "
                                                                     "as JSON on stdout.")) -> None:
    """Convert a SkillOpt config to skillgit.yaml; list every SkillOpt key not carried over, with why."""
    from skillgit.config import load_config
    from skillgit.config_yaml import parse_overrides
    from skillgit.skillopt_import import import_skillopt, render

    imp = import_skillopt(source, parse_overrides(cfg_options or []))
    if out.exists() and not force:
        raise SkillgitError(f"{out} exists", "pass --force to overwrite it, or --out another path",
                            ExitCode.USAGE)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(render(imp), encoding="utf-8")
    try:
        load_config(tmp)  # what was written reads back as a valid skillgit config
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    err = console.err
    counts = imp.to_dict()["counts"]
    err.print(f"imported {shown(str(source))} → {shown(str(out))}: {counts['mapped']} mapped, "
              f"{counts['approximated']} approximated, {counts['refused']} refused, {counts['unused']} unused, "
              f"{counts['blank'] + counts['default']} blank or default", markup=False, highlight=False)
    for outcome in imp.by_status("approximated", "refused", "unused"):
        err.print(f"  {outcome.status:>12}  {shown(outcome.key)}: {shown(outcome.reason)}", markup=False,
                  highlight=False)
    if as_json:
        console.print_json({**imp.to_dict(), "written": str(out)})
    else:
        console.out.print(str(out), markup=False, highlight=False)
