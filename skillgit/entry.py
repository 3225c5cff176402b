"""The `skillgit` console script (and `python -m skillgit`): the command line, except one fast path.

`skillgit mcp [--repo/-C DIR] [--config FILE]` — how an agent starts skillgit's MCP server — is served without
importing the command line (typer, rich, click): the agent waits for the server's `initialize` answer before it
can list skillgit's tools: the light front (integrations/mcp_front.py) answers it before the SDK is imported, then
hands the session to the SDK's server (bench/mcp_start.py).
Anything else, including `skillgit mcp --help` or an argument the fast path does not know, goes to
`skillgit.cli.main` unchanged (which also serves `mcp`, with the same result).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

# (`-c` sets a config key now, as everywhere else: the command line serves `mcp -c …`)
_OPTIONS = {"--repo": "repo", "-C": "repo", "--config": "config"}


def mcp_arguments(args: Sequence[str]) -> dict[str, Path] | None:
    """`{"repo": …, "config": …}` when `args` are `mcp` followed only by those options, each with a value
    (`--repo DIR`, `--repo=DIR`); None for anything else (the command line then parses it and explains)."""
    if not args or args[0] != "mcp":
        return None
    found: dict[str, Path] = {}
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        key = _OPTIONS.get(name if eq and name.startswith("--") else arg)
        if key is None or key in found:
            return None
        if not eq:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        if not value:
            return None
        found[key] = Path(value)
    return found


def _has_command(*names: str) -> bool:
    from skillgit.cli import has_command

    return has_command(*names)


def _stop_on_signals() -> None:
    """Ctrl-C, TERM (how agent clients stop a stdio server) and HUP record a stop and end the server: a tool's
    command still running (`integrations.commands.run`, a `skillgit train`) is killed with everything it started
    (`process.run` checks for a recorded stop), and the exit waits for that; without this, the server died at once
    and the train, its rollouts and their daemons ran on, spending the budget, with no one to read the result."""
    import signal

    from skillgit.errors import ExitCode, Interrupted, request_stop

    def stop(signum: int, frame: object) -> None:
        exc = Interrupted(f"the MCP server was stopped by {signal.Signals(signum).name}",
                          "a train it ran resumes with the train tool's resume=true", ExitCode(128 + signum))
        request_stop(exc)
        raise exc

    for sig in (signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])):
        signal.signal(sig, stop)


def serve_mcp(options: dict[str, Path]) -> None:
    from skillgit.errors import ExitCode, SkillgitError
    from skillgit.integrations import mcp_front

    _stop_on_signals()

    def hand_over(front: mcp_front.Front, record_key: dict | None) -> None:
        from skillgit.integrations import commands, mcp_server

        commands.use_cli(_has_command)  # the command line is imported only if a tool asks (`skillgit sleep …`)
        mcp_server.serve_session(options.get("repo"), options.get("config"), front, record_key)

    try:  # the light front answers `initialize`, then hands the session to the SDK's server
        mcp_front.serve(hand_over)
    except SkillgitError as exc:
        from skillgit.console import print_error

        print_error(exc.message, exc.hint)
        sys.exit(int(exc.code))
    except KeyboardInterrupt:
        sys.exit(int(ExitCode.INTERRUPTED))


def main() -> None:
    options = mcp_arguments(sys.argv[1:])
    if options is not None:
        serve_mcp(options)
        return
    from skillgit.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
