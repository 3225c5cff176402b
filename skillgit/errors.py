"""The one error type skillgit raises on purpose, and the fixed exit codes the CLI maps it to.

Contract: every expected failure (bad input, bad config, git state, backend trouble) is a `SkillgitError`
with a one-line `message` and a `hint` that names the fix. The CLI prints both on stderr and exits with
`code`; anything else escaping is a bug and exits with `ExitCode.INTERNAL`.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    INTERNAL = 1  # a bug: an exception that is not a SkillgitError
    USAGE = 2  # bad command line, config, task file, unknown revision or other user input
    GIT = 3  # not a repository, dirty skill file, branch moved underneath
    BACKEND = 4  # model backend: credentials, unreachable server, retries exhausted
    BUDGET = 5  # a run stopped at a budget limit before finishing what was asked
    LOCKED = 6  # another run holds the lock
    HANGUP = 129  # the terminal closed (SIGHUP, 128 + 1); the run can be resumed
    INTERRUPTED = 130  # Ctrl-C (SIGINT, 128 + 2); the run can be resumed
    TERMINATED = 143  # `kill`, CI cancelling a job, `timeout` (SIGTERM, 128 + 15); the run can be resumed


class SkillgitError(Exception):
    """An expected failure: `message` says what went wrong, `hint` what to do about it."""

    def __init__(self, message: str, hint: str = "", code: ExitCode = ExitCode.USAGE):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class GitStateError(SkillgitError):
    """Git is not in a state the operation can work with; nothing was changed."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message, hint, ExitCode.GIT)


class UnknownRevision(GitStateError):
    """A revision the user named does not exist: bad input (exit 2), like any other mistyped argument."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message, hint)
        self.code = ExitCode.USAGE


class ConfigError(SkillgitError):
    """A config key or value is wrong; the message names the key, the value and what is allowed."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message, hint, ExitCode.USAGE)


class Interrupted(SkillgitError):
    """The user pressed Ctrl-C; what was done is kept and the same command resumes."""

    def __init__(self, message: str = "interrupted", hint: str = "run the same command again to resume",
                 code: ExitCode = ExitCode.INTERRUPTED):
        super().__init__(message, hint, code)


# A stop asked for by a signal (Ctrl-C, TERM, HUP). The CLI's handler records it and raises Interrupted at once,
# but a signal can land where Python swallows exceptions (a weakref callback, __del__): the recorded request is
# then raised at the loop's next safe point (`raise_if_stop_requested`), so a stop is never lost.
_stop: list[Interrupted] = []


def request_stop(exc: Interrupted) -> None:
    _stop[:] = [exc]


def stop_requested() -> bool:
    return bool(_stop)


def clear_stop() -> None:
    _stop.clear()


def raise_if_stop_requested() -> None:
    """Raise the recorded Interrupted, in the main thread only (where signals are delivered and the run's
    handlers wait); a no-op elsewhere and when no stop was asked for."""
    if _stop:
        import threading

        if threading.current_thread() is threading.main_thread():
            raise _stop[0]


class BudgetReached(SkillgitError):
    """A budget limit was reached before a model call: the run stops cleanly and resumes with a larger budget."""

    def __init__(self, message: str, hint: str = "raise the budget (budget.max_calls / max_tokens / max_cost_usd) and "
                 "run `skillgit train` again to resume"):
        super().__init__(message, hint, ExitCode.BUDGET)


# What parsing text from outside as JSON (a pulled note or run record, a transcript line, a model's reply) raises
# when the text is no JSON: a ValueError, or a RecursionError for nesting deeper than the parser's stack
# (`[[[[…` 100,000 deep), which an `except ValueError` let through as a traceback of every read command.
# (An except that catches more names both: `except (ValueError, RecursionError, TypeError)`.)
BAD_JSON: tuple[type[Exception], ...] = (ValueError, RecursionError)
