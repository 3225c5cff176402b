"""What the two agent students (`agentic.student.AgentStudent`, `llm.command.CommandStudent`) share.

- `expand(template, values, lists)`: an argv template filled in. Each element's `{placeholder}`s are replaced in
  one pass (a prompt that itself contains `{workspace}` is not filled again) from `values` (a placeholder it does
  not hold becomes ""); an element that is exactly a key of `lists` (`{model_args}`, `{profile_args}`, …) is
  replaced by that list's elements (none when empty). The prompt stays one argv element: no shell, no quoting;
  one that starts with `-` is refused unless `--` precedes it (the presets put it last, after `--`).
- `fingerprint(agent, plan, argv0, env, extra, confine)`: `{"agent", "version", "config", "profile", "confine"}`
  — the agent's name, its CLI's version line (`version.probe`, cached; a program without a version flag: a hash
  of its bytes), a hash of its effective config (`Plan.digest` plus `extra`: the argv template, install path and
  settings; under profile user the user's config files as they are at the call), the profile (hermetic | user)
  and the rollouts' write confinement (`sandbox.Confinement.state`: landlock | off | unavailable), plus
  `withheld`: the names of the variables the agent was not given because their value looks like a credential
  (`llm.command.agent_env`; only when there are some). Gate notes record it; a change between the incumbent's
  scoring and a candidate's is drift.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from skillgit.agents import version
from skillgit.agents.base import Agent
from skillgit.agents.profile import Plan, user_digest
from skillgit.errors import ConfigError

PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|skill_file|workspace|answer_file|model|name|seed|sample|"
                         r"permission_mode|sandbox)\}")


END_OF_OPTIONS = ("--", "--end-of-options")


def fill(element: str, values: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), "")), element)


def expand(template: Sequence[str], values: Mapping[str, str], lists: Mapping[str, Sequence[str]]) -> list[str]:
    """`template` filled in (see the module docstring). A prompt (a task's text: a task file, a mined transcript)
    that starts with `-` where the template would make it an argv element of its own not after `--` is refused
    (ConfigError): `claude -p "--settings=…"` read it as an option. The presets put `--` before it."""
    out: list[str] = []
    for element in template:
        if element in lists:
            out.extend(fill(e, values) for e in lists[element])
            continue
        filled = fill(element, values)
        if element.startswith("{prompt}") and filled.startswith("-") and (not out or out[-1] not in END_OF_OPTIONS):
            raise ConfigError(f"the task's prompt starts with '-' ({filled[:30]!r}…): {out[0] if out else 'the agent'}"
                              " would read it as an option", "put '--' right before '{prompt}' in the command's argv "
                              "(model.student.command.argv)")
        out.append(filled)
    return out


def cli_version(agent: Agent, plan: Plan, argv0: str, env: Mapping[str, str]) -> str:
    """The agent CLI's version as `fingerprint` names it (its `--version`, cached per binary; a program without
    one: the file's identity), without the rest of the fingerprint (the config digest, the user's files)."""
    if agent.version_args and agent.binary:
        caches = {var: path for var, path in plan.caches().items() if path}  # Copilot unpacks its runtime once
        return version.probe(argv0, agent.version_args, {**env, **caches})
    return version.file_identity(argv0, env) if argv0 else "unknown"


def fingerprint(agent: Agent, plan: Plan, argv0: str, env: Mapping[str, str],
                extra: Mapping[str, object], confine: str = "off") -> dict[str, str]:
    """The agent's identity for drift checks (see the module docstring)."""
    found = cli_version(agent, plan, argv0, env)
    if plan.profile == "user":  # the user's files as they are now: an edit during a run is drift
        plan = dataclasses.replace(plan, user_digest=user_digest(agent.profile, env))
    out = {"agent": agent.name, "version": found, "config": plan.digest(dict(extra)), "profile": plan.profile,
           "confine": confine}
    withheld = getattr(env, "withheld", ())  # `llm.command.AgentEnv`: variables held back for their value
    if withheld:
        out["withheld"] = ", ".join(withheld)
    return out
