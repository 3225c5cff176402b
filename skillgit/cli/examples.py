"""Examples at the foot of every command's `--help`, in one table (README.md's command table shows the first).

Contract: every command and sub-command a user can run has at least one example here; each example is a whole
command line that the command accepts as written (`tests/test_newcomer11_cli.py` parses every one against the
command's own options). Placeholders are spelled as values a reader recognises (`20261121-1200-ab12` for a run
id), never in brackets, which rich would read as markup. A trailing `  # …` says what the line does.
"""

from __future__ import annotations

from typing import Any

RUN = "20261121-1200-ab12"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "init": ("skillgit init --skill AGENTS.md --hooks",
             "skillgit init --skill .claude/skills/review/SKILL.md --commit   # adopt a file and commit the setup",
             "skillgit init --env textgame   # a benchmark environment with its shipped sample"),
    "log": ("skillgit log -n 20", "skillgit log --json"),
    "show": ("skillgit show 3   # step 3 of the newest run", f"skillgit show rejected/{RUN}/0004 --full"),
    "diff": ("skillgit diff 2 5",),
    "rejected": ("skillgit rejected -n 5",),
    "revert": ('skillgit revert --steps 1 --reason "too terse"   # undo the last accepted step',
               f"skillgit revert --to {RUN}/0   # restore the run's seed skill"),
    "export": ("skillgit export 4 /tmp/SKILL.md", "skillgit export main -   # to stdout"),
    "push": ("skillgit push origin",),
    "pull": ("skillgit pull origin", "skillgit pull origin --wait 600   # wait up to 10 minutes for a run"),
    "gc": ("skillgit gc --keep 50",),
    "train": ("skillgit train --dry-run   # the plan and an upper-bound estimate; spends nothing",
              "skillgit train --set train.max_steps=5 --set budget.max_cost_usd=2",
              "skillgit train --branch review/dates   # onto a review branch; the skill branch does not move",
              "skillgit train --new   # a new run instead of resuming the newest unfinished one"),
    "eval": ("skillgit eval HEAD --split test", f"skillgit eval rejected/{RUN}/0004"),
    "status": ("skillgit status", "skillgit status --json"),
    "demo": ("skillgit demo", "skillgit demo --dir /tmp/d --steps 4   # keep the project to look around",
             "skillgit demo --agentic   # a skill package for a coding agent (minutes)"),
    "doctor": ("skillgit doctor", "skillgit doctor -c model.teacher_model=gpt-4o"),
    "report": ("skillgit report -o run.html",),
    "pr": ("skillgit pr > pr.md   # preview the body", "skillgit pr --push origin --gh"),
    "check": ("skillgit check --base origin/main",
              "skillgit check --print-workflow > .github/workflows/skillgit-check.yml"),
    "mcp": ("skillgit mcp", "skillgit mcp --repo ../my-agent-repo"),
    "approve": ("skillgit approve   # what the MCP train tool would run, and what is not approved here",
                "skillgit approve --yes   # approve them on this machine, after reading them"),
    "install": ("skillgit install claude --project", "skillgit install codex --user --dry-run"),
    "uninstall": ("skillgit uninstall claude --project",),
    "ui": ("skillgit ui --open", "skillgit ui --port 8765"),
    "config show": ("skillgit config show --show-origin", "skillgit config show --json -c optimizer.learning_rate=2"),
    "config import": ("skillgit config import configs/searchqa/default.yaml --out skillgit.yaml",),
    "sleep harvest": ("skillgit sleep harvest --json",),
    "sleep mine": ("skillgit sleep mine   # writes .skillgit/sleep/tasks.jsonl for you to read",),
    "sleep review": ("skillgit sleep review --approve",),
    "sleep run": ("skillgit sleep run --max-cost 2.50",),
    "sleep dry-run": ("skillgit sleep dry-run   # what tonight would do; writes nothing",),
    "sleep status": ("skillgit sleep status",),
    "sleep adopt": ("skillgit sleep adopt 2026-01-31 --print", "skillgit sleep adopt 2026-01-31 --merge"),
    "sleep schedule": ("skillgit sleep schedule --max-cost 2.50   # every night at 03:00",),
    "sleep unschedule": ("skillgit sleep unschedule",),
    "env list": ("skillgit env list",),
    "env new": ("skillgit env new my-bench",),
    "tasks suggest": ("skillgit tasks suggest --skill deploy",),
    "tasks approve": ("skillgit tasks approve tasks/suggested/deploy.triggers.jsonl",),
}


# `skillgit --help`'s footer: where a newcomer starts.
START = ("skillgit demo   # train a skill offline on the simulated world: no key, a few seconds",
         "skillgit init --skill AGENTS.md --commit   # adopt your skill file (writes skillgit.yaml)",
         "skillgit doctor   # check the models and keys, then: skillgit train --dry-run",
         "skillgit COMMAND --help   # each command's options and examples")


def epilog(path: str) -> str | None:
    """The `--help` footer of `skillgit <path>`: one paragraph per example (rich keeps paragraphs apart)."""
    lines = START if path == "" else EXAMPLES.get(path)
    if not lines:
        return None
    return ("Start here:" if path == "" else "Examples:") + "\n\n" + "\n\n".join(f"  {line}" for line in lines)


def attach(app: Any, prefix: str = "") -> None:
    """Give every command registered on `app` (and on its groups, recursively) its examples, unless it declared
    an epilog of its own, and a one-line summary for the command listing (the docstring's first paragraph)."""
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if not info.epilog:
            info.epilog = epilog(f"{prefix}{name}")
        doc = (info.help or (info.callback.__doc__ if info.callback else None) or "").strip()
        if doc and not info.short_help:  # the listing of `skillgit --help` kept the docstring's line breaks
            info.short_help = " ".join(doc.split("\n\n")[0].split())
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            attach(group.typer_instance, f"{prefix}{group.name} ")
