"""The command line (typer). The only layer that prints for humans, reads argv and exits.

Each command module registers its commands on an app (`register(app)`); `main()` turns a SkillgitError into a
one-line error with its hint on stderr and the error's fixed exit code, a usage mistake (unknown option, missing
argument) into the same pair and exit 2 (`usage.py`, instead of typer's boxed panel), and anything else into exit
code 1 (a bug).

Start-up cost: `main()` builds an app with only the command that runs (`skillgit log …` imports the history
module and nothing of training); `--help`, completion and unknown names get the app with every command, which is
also what `skillgit.cli.app` is. Parameters are coerced without pydantic where typer's result is plain
(`coerce.py`). The modules that define commands do not use `from __future__ import annotations`: typer reads the
type hints of every command it builds (all of them for `--help`), and string annotations are compiled one by one
there (~80 M instructions of `skillgit --help`; tests/test_startup.py checks it). Help pages render without rich's
Markdown and Traceback (`usage.import_help_renderer`).
"""

import os
import re
import sys
from typing import Any, Sequence

import typer

from skillgit import __version__
from skillgit.cli import coerce, usage
from skillgit.cli.examples import attach, epilog
from skillgit.errors import ExitCode, Interrupted, SkillgitError, clear_stop, request_stop, stop_requested

MODULES = ("history", "train", "doctor", "review", "sleep", "integrations", "ui", "envs", "library", "approve")
# The module that registers each top-level command. Only a shortcut for `main()`: a command missing here (or moved
# to another module) still runs, through the app with every command.
COMMANDS = {**dict.fromkeys(("init", "log", "show", "diff", "rejected", "revert", "export", "push", "pull", "gc"),
                            "history"),
            **dict.fromkeys(("train", "eval", "status", "demo", "config"), "train"), "doctor": "doctor",
            **dict.fromkeys(("report", "pr", "check"), "review"), "sleep": "sleep",
            **dict.fromkeys(("mcp", "install", "uninstall"), "integrations"), "ui": "ui", "env": "envs",
            "tasks": "library", "approve": "approve"}

coerce.install()
usage.install()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"skillgit {__version__}")
        raise typer.Exit()


def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """skillgit: train skills, keep every step in git."""


def build_app(command: str | None = None) -> typer.Typer | None:
    """The CLI: every command, or only `command` (then only its module is imported; None when `COMMANDS` does not
    know it or its module does not register it)."""
    import importlib

    app = typer.Typer(
        name="skillgit",
        help="Train a skill document (SKILL.md, AGENTS.md, a system prompt) like weights; every step is a git "
             "commit.",
        no_args_is_help=True,
        add_completion=True,  # `skillgit --install-completion` (bash, zsh, fish, PowerShell)
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        epilog=epilog(""),
    )
    app.callback()(_root)
    if command is not None and command not in COMMANDS:
        return None
    for name in MODULES if command is None else (COMMANDS[command],):
        try:
            module = importlib.import_module(f"skillgit.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"skillgit.cli.{name}":
                continue
            raise
        module.register(app)
    attach(app)  # every command's --help ends with examples
    if command is not None:
        app.registered_commands = [c for c in app.registered_commands if c.name == command]
        app.registered_groups = [g for g in app.registered_groups if g.name == command]
        if not app.registered_commands and not app.registered_groups:
            return None
    return app


_full: list[typer.Typer] = []


def __getattr__(name: str) -> Any:
    # `skillgit.cli.app`: the app with every command (for `typer.main.get_command`, tests, integrations), built on
    # first use so that importing `main` does not import every command module.
    if name == "app":
        if not _full:
            app = build_app()
            assert app is not None
            _full.append(app)
        return _full[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def has_command(*names: str) -> bool:
    """True when `skillgit <names…>` is a command of this installation (e.g. `has_command("sleep", "run")`); the
    MCP server is handed this (`integrations.commands.use_cli`) rather than importing the command line."""
    import typer.main

    command = typer.main.get_command(__getattr__("app"))
    for name in names:
        commands = getattr(command, "commands", None)
        if not isinstance(commands, dict) or name not in commands:
            return False
        command = commands[name]
    return True


def _app_for(args: list[str]) -> typer.Typer:
    """The lean app when `args` start with a known command and no shell completion is being asked for."""
    completing = any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)
    lean = build_app(args[0]) if args and not completing else None
    return lean if lean is not None else __getattr__("app")


# Options whose value may be left out (`--wait [SECONDS]`): click (through typer) cannot declare that, so `main()`
# writes a bare one as `--wait=<this value>` before parsing. "Bare" means last, or followed by anything that is not
# a number (an option, or the command's own argument: `pull --wait origin`); nothing after `--` is touched.
OPTIONAL_VALUES = {"--wait": "forever"}


def optional_values(argv: list[str]) -> list[str]:
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        if arg in OPTIONAL_VALUES:
            following = argv[i + 1] if i + 1 < len(argv) else ""
            try:
                float(following)
            except ValueError:
                arg = f"{arg}={OPTIONAL_VALUES[arg]}"
        out.append(arg)
    return out


# `-c` sets a config key (`-c train.batch_size=8`, as `git -c` does); it named the config file before 0.x, so a value
# that is not `key=value` is still taken as the file (`--config FILE`), with a hint to change the habit.
_KEY_VALUE = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*=")
C_IS_A_KEY = ("`-c FILE` is deprecated: -c now sets a config key (-c key=value, as git -c does)",
              "name the config file with --config FILE")


def config_shorthand(argv: list[str]) -> tuple[list[str], bool]:
    """`argv` with every `-c VALUE` / `-cVALUE` whose VALUE is not `key=value` written as `--config=VALUE`, and
    whether any was (the caller prints `C_IS_A_KEY`); nothing after `--` is touched. `-c key=value` before the
    command (`skillgit -c budget.max_calls=50 train`, as `git -c k=v commit`) moves after it."""
    lead: list[str] = []
    while len(argv) >= 2 and argv[0] == "-c" and _KEY_VALUE.match(argv[1]):
        lead += argv[:2]
        argv = argv[2:]
    if lead:
        cut = argv.index("--") if "--" in argv else len(argv)
        argv = argv[:cut] + lead + argv[cut:]
    out: list[str] = []
    rewrote = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:], rewrote
        value = arg[2:] if arg.startswith("-c") and len(arg) > 2 else (argv[i + 1] if arg == "-c" and
                                                                       i + 1 < len(argv) else None)
        if value is not None and not _KEY_VALUE.match(value) and not value.startswith("-"):
            out.append(f"--config={value}")
            rewrote = True
            i += 1 if len(arg) > 2 else 2
            continue
        out.append(arg)
        i += 1
    return out, rewrote


def _interrupt(signum: int, frame: object) -> None:
    import signal

    how = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    # exit 128 + the signal's number, as a shell reports a process the signal ended: 130 Ctrl-C, 143 TERM, 129 HUP
    exc = Interrupted(how, "run the same command again to resume where it stopped", ExitCode(128 + signum))
    request_stop(exc)  # raised again at the next safe point if this raise lands where Python swallows it
    raise exc


def is_stop_noise(info: Any) -> bool:
    """True for an "exception ignored" report (sys.unraisablehook) that a stop signal caused: the swallowed raise
    of the stop itself (recorded, and raised again at the loop's next safe point), or — a stop that landed in
    Thread.start(), where the main thread waits for a pool thread — CPython removing the new thread from its
    start-up table twice, whose KeyError says nothing a user can act on."""
    if isinstance(info.exc_value, Interrupted):
        return True
    return stop_requested() and isinstance(info.exc_value, KeyError) and "Thread._bootstrap" in repr(info.object)


def main(args: Sequence[str] | None = None, prog_name: str | None = None) -> None:
    """Entry point: our errors become `error:`/`hint:` lines and their exit code; Ctrl-C says how to resume and
    exits 130 (TERM 143, HUP 129: 128 + the signal's number). (Ctrl-C raises `Interrupted`, a SkillgitError, rather
    than KeyboardInterrupt, which click would turn into "Aborted!" and exit 1.) Always ends in SystemExit. `args`
    (default: sys.argv[1:]) and `prog_name` (default: detected by click) let tests run the exact entry point
    in-process."""
    import signal

    from skillgit.console import print_error

    argv, deprecated = config_shorthand(optional_values(list(sys.argv[1:] if args is None else args)))
    if deprecated:
        sys.stderr.write(f"warning: {C_IS_A_KEY[0]}\nhint: {C_IS_A_KEY[1]}\n")
    app = _app_for(argv)
    # Ctrl-C, `kill` (TERM: CI cancelling a job, `timeout`) and a closed terminal (HUP) all stop a run the same
    # way: at the next safe point, saved as interrupted, with the line that says how to resume.
    stops = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    clear_stop()
    before = {sig: signal.signal(sig, _interrupt) for sig in stops}
    unraisable = sys.unraisablehook

    def quiet_stop(info: Any) -> None:
        if not is_stop_noise(info):
            unraisable(info)

    sys.unraisablehook = quiet_stop
    try:
        from typer._click import exceptions as click  # typer ≥ 0.2x vendors click
    except ImportError:  # pragma: no cover - a typer on the click package
        from click import exceptions as click  # type: ignore[no-redef]

    try:
        # not standalone: a usage error reaches us (one `error:` / `hint:` pair, not typer's boxed panel)
        code = app(args=argv, prog_name=prog_name, standalone_mode=False)
    except SkillgitError as exc:
        print_error(exc.message, exc.hint)
        sys.exit(int(exc.code))
    except click.NoArgsIsHelpError as exc:  # `skillgit sleep`: typer has printed the group's help
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        print_error(*usage.usage_error(exc, argv[0] if argv and argv[0] in COMMANDS else None))
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # e.g. a file option that cannot be opened
        print_error(" ".join(exc.format_message().split()), "")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print_error("interrupted", "run the same command again to resume where it stopped")
        sys.exit(int(ExitCode.INTERRUPTED))
    except typer.Abort:  # a prompt's input ended (EOF)
        print_error("aborted", "")
        sys.exit(1)
    finally:
        for sig, handler in before.items():  # in-process callers (tests, the MCP server) get theirs back
            signal.signal(sig, handler)
        sys.unraisablehook = unraisable
        clear_stop()
    sys.exit(code if isinstance(code, int) else 0)  # a command's `typer.Exit(n)` comes back as n
