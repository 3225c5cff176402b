"""Routing in sleep (issue 25): a mined task carries the skill its sessions invoked (the readers' `Turn.skills`),
and `sleep.route` sends each task to that skill of the library, or to the default skill when none fired."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillgit.errors import ConfigError
from skillgit.sleep import HarvestState, harvest, mine
from skillgit.sleep.mine import read_tasks, split_units, write_tasks
from skillgit.sleep.readers import get_reader
from skillgit.sleep.route import route
from tests.test_sleep_harvest import FIXTURES, ClaudeSession, make_repo


def _sessions(home: Path, repo: Path) -> None:
    """Claude Code sessions (the documented JSONL shape, read by the real reader): two invoke the `deploy` skill
    through the Skill tool, two the `tidy-tests` skill, two none; each pair asks for the same task."""
    minute = 0
    for n, (request, skill) in enumerate((("ship the release to staging", "deploy"),
                                          ("ship the release to staging", "deploy"),
                                          ("make the flaky parser tests pass", "tidy-tests"),
                                          ("make the flaky parser tests pass", "tidy-tests"),
                                          ("explain the retry backoff settings", None),
                                          ("explain the retry backoff settings", None))):
        minute += 7
        s = ClaudeSession(f"abcd{n:04d}", repo, start_minute=minute).user(request)
        if skill:
            s.tool("Skill", {"skill": skill}, f"Launching skill: {skill}")
        s.bash("pytest -q tests/test_parser.py" if skill == "tidy-tests" else "make deploy ENV=staging",
               "3 passed in 0.2s" if skill == "tidy-tests" else "deployed").say("done")
        s.write(home)


def test_each_mined_task_is_routed_to_the_skill_its_sessions_invoked(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    _sessions(home, repo)
    result = harvest(["claude"], home, repo, [], HarvestState())
    mined = mine(result.sessions)
    by_prompt = {t.prompt: t for t in mined.tasks}
    assert {p: t.skill for p, t in by_prompt.items()} == {
        "ship the release to staging": "deploy", "make the flaky parser tests pass": "tidy-tests",
        "explain the retry backoff settings": None}
    routed = route(mined.tasks, ["tidy-tests", "deploy", "docs"], default="docs")
    assert {k: [t.prompt for t in v] for k, v in routed.items()} == {
        "tidy-tests": ["make the flaky parser tests pass"], "deploy": ["ship the release to staging"],
        "docs": ["explain the retry backoff settings"]}
    # a skill outside the library (a personal one) goes to the default skill too
    assert route(mined.tasks, ["deploy"], "deploy") == {"deploy": mined.tasks}
    with pytest.raises(ConfigError, match="'nope' is not in the library"):
        route(mined.tasks, ["deploy"], "nope")
    # the skill travels in the reviewable task file
    path = write_tasks(tmp_path / "tasks.jsonl", mined.tasks)
    assert [t.skill for t in read_tasks(path).tasks] == [t.skill for t in mined.tasks]


def test_a_recorded_claude_code_session_gives_its_unit_the_skill_it_invoked():
    # the real CLI's file (tests/fixtures/transcripts/claude/README.md): the agent called the Skill tool
    sessions = get_reader("claude").read(FIXTURES / "claude" / "headless-skill.jsonl")
    units = [u for s in sessions for u in split_units(s)]
    assert units and units[0].skills == ("tidy-tests",)


def test_a_night_with_a_library_replays_only_the_tasks_routed_to_the_skill_it_trains(tmp_path):
    from skillgit.config import config_from_dict
    from skillgit.sleep.route import for_configured_skill

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    _sessions(home, repo)
    tasks = mine(harvest(["claude"], home, repo, [], HarvestState()).sessions).tasks
    library = {"deploy": {"path": ".claude/skills/deploy/SKILL.md"},
               "tidy-tests": {"path": ".claude/skills/tidy-tests/SKILL.md"}}

    def prompts(skill_path: str, skills: dict) -> list[str]:
        cfg = config_from_dict({"skill": {"path": skill_path}, "skills": skills})
        return sorted(t.prompt for t in for_configured_skill(cfg, tasks, repo))

    # the skill the configuration trains takes its own tasks and those no library skill fired for
    assert prompts(".claude/skills/tidy-tests/SKILL.md", library) == ["explain the retry backoff settings",
                                                                       "make the flaky parser tests pass"]
    assert prompts(".claude/skills/deploy/SKILL.md", library) == ["explain the retry backoff settings",
                                                                   "ship the release to staging"]
    assert len(prompts("SKILL.md", {})) == 3  # no library: every task, as before
    # the list form of `skills:` (globs) is expanded against the repository: a night with it routes the same
    # (before, the night called it without the root and stopped on an internal error)
    for name in ("deploy", "tidy-tests"):
        package = repo / ".claude" / "skills" / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} things\n---\nBody.\n")
    assert prompts(".claude/skills/deploy/SKILL.md", [".claude/skills/*/SKILL.md"]) == \
        ["explain the retry backoff settings", "ship the release to staging"]
