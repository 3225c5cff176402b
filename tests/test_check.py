"""`skillgit check`, the gate for human edits in CI: the real CLI on the demo project (simulated world) with human
edits that add or remove rule sentences the simulated student understands — improving (exit 0), regressing
(exit 1), unscorable (exit 2) — plus the base it picks and the GitHub Actions workflow it ships."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from skillgit.resources import templates_dir
from tests.conftest import git, run_cli, run_cli_inproc
from tests.helpers import demo_project

# Sentences of the house style the demo's world (seed 0) rewards (skillgit/world/rules.py): what its training learns.
RULES = ("Separate fields with ' | ' (space, pipe, space).\n\nWrite names as 'Last, First' (Lovelace, Ada).\n\n"
         "Put the currency symbol before the amount ($4.20, not 4.20 USD).\n\n"
         "Always give prices with 2 decimal places.\n\nWrite codes in uppercase letters (AB-12).\n\n"
         "Use metric units: weights in kg with two decimals.\n")


@pytest.fixture
def project(tmp_path) -> Path:
    return demo_project(tmp_path / "p")


def commit_skill(root: Path, text: str, message: str) -> str:
    (root / "SKILL.md").write_text(text, encoding="utf-8")
    git(root, "commit", "-qam", message)
    return git(root, "rev-parse", "HEAD")


def check(root: Path, *args: str, markdown: bool = True) -> tuple[int, dict, str]:
    """`skillgit check --json` and (unless not asked) the Markdown CI posts: the same verdict (replayed calls)."""
    as_json = run_cli_inproc("check", "--json", *args, cwd=root)
    assert as_json.returncode in (0, 1, 2), as_json.stderr
    if not markdown:
        return as_json.returncode, json.loads(as_json.stdout), ""
    markdown_run = run_cli_inproc("check", *args, cwd=root)
    assert markdown_run.returncode == as_json.returncode, markdown_run.stderr
    return as_json.returncode, json.loads(as_json.stdout), markdown_run.stdout


def test_an_improving_human_edit_passes_on_a_pull_request_branch(project):
    seed = (project / "SKILL.md").read_text()
    fork = git(project, "rev-parse", "HEAD")
    git(project, "switch", "-q", "-c", "human/rules")
    head = commit_skill(project, seed + "\n" + RULES, "human: write down the house style")
    git(project, "switch", "-q", "main")  # the skill branch moves on meanwhile (not the skill)
    (project / "README.md").write_text("unrelated\n")
    git(project, "commit", "-qam", "docs")
    git(project, "switch", "-q", "human/rules")
    code, result, markdown = check(project)
    assert code == 0 and result["verdict"] == "improved", result["reason"]
    assert result["base"]["sha"] == fork and result["head"]["sha"] == head  # the merge-base, not main's tip
    assert "val split: 30 val item(s) × 3 repeat(s): the gate detects gains of about 19 points" in markdown
    assert result["base"]["rev"] == "merge-base with main"
    assert result["delta"] > 0.3 and result["head"]["val_scored"] == result["head"]["val_n"] == 30
    assert len(result["flips"]["fixed"]) > 5 and result["flips"]["recorded"]
    assert result["head"]["test"] is not None and result["head"]["test_n"] == 60  # reported ...
    assert "**improvement" in markdown and "(exit 0)" in markdown
    assert f"| val (decides; 30 items) | {result['base']['val']:.4f}" in markdown
    assert "test (reported only; 60 items)" in markdown and "fixed " in markdown
    assert git(project, "status", "--porcelain") == ""


def test_a_regressing_human_edit_fails(project):
    seed = (project / "SKILL.md").read_text()
    good = commit_skill(project, seed + "\n" + RULES, "human: house style")
    commit_skill(project, seed, "human: trim the skill")  # removes every rule sentence
    code, result, markdown = check(project)  # on the skill branch itself: the base is HEAD~1
    assert code == 1 and result["verdict"] == "regressed", result["reason"]
    assert result["base"]["sha"] == good and result["base"]["rev"] == "HEAD~1"
    assert result["delta"] < -0.3 and len(result["flips"]["broke"]) > 5 and not result["flips"]["fixed"]
    assert "**regression** (exit 1)" in markdown and "broke " in markdown
    assert any(not c["passed"] for c in result["checks"])


def test_an_unscorable_edit_cannot_be_judged(project):
    seed = (project / "SKILL.md").read_text()
    commit_skill(project, seed + "\nWrite codes in uppercase letters (AB-12).\n", "human: codes")
    (project / "crash.py").write_text("def score(item, output):\n    raise RuntimeError('scorer crashed')\n")
    crash = ("--set", "env.scorer.type=python", "--set", "env.scorer.callable=crash:score")
    code, result, markdown = check(project, *crash)
    assert code == 2 and result["verdict"] == "cannot_judge"
    assert result["reason"].startswith("cannot judge") and result["head"]["val_scored"] == 0
    assert all(v is None for v in result["head"]["items"].values()) and len(result["head"]["items"]) == 30
    assert "**cannot judge** (exit 2)" in markdown


def test_a_skill_missing_on_one_side_cannot_be_judged_and_identical_skills_pass_unscored(project):
    git(project, "switch", "-q", "-c", "human/remove")
    git(project, "rm", "-q", "SKILL.md")
    git(project, "commit", "-qm", "remove the skill")
    code, result, _ = check(project, markdown=False)
    assert code == 2 and "missing at head" in result["reason"]
    git(project, "switch", "-q", "main")
    (project / "README.md").write_text("only docs\n")
    git(project, "commit", "-qam", "docs")
    code, result, _ = check(project, "--base", "HEAD~1", markdown=False)
    assert code == 0 and result["verdict"] == "unchanged" and "identical" in result["reason"]
    assert result["head"]["val"] is None  # nothing was scored


def test_a_change_that_edits_the_judge_with_the_skill_cannot_be_judged(project):
    """A pull request that trims the skill (a regression) and, in the same change, loosens the gate in
    skillgit.yaml or rewrites the tasks was judged by its own rules: `unchanged`, exit 0. Now check refuses to
    judge it and names the files; the same skill edit on a base that already has the new judge is judged."""
    seed = (project / "SKILL.md").read_text()
    commit_skill(project, seed + "\n" + RULES, "human: house style")  # the skill branch's good skill
    git(project, "switch", "-q", "-c", "pr/loosen")
    config = project / "skillgit.yaml"
    config.write_text(config.read_text().replace("  gate_metric: hard\n",
                                                 "  gate_metric: hard\n  gate: significance\n  gate_margin: 2\n"))
    (project / "SKILL.md").write_text(seed)  # every rule sentence gone
    git(project, "commit", "-qam", "trim the skill; loosen the gate")
    code, result, markdown = check(project, "--base", "main")
    assert code == 2 and result["verdict"] == "cannot_judge", result["reason"]
    assert result["judge_changed"] == ["skillgit.yaml"] and "skillgit.yaml" in result["reason"]
    assert result["head"]["val"] is None and "**cannot judge** (exit 2)" in markdown  # nothing was scored

    git(project, "switch", "-q", "-c", "pr/tasks", "main")  # the tasks rewritten with the skill
    tasks = project / "tasks.jsonl"
    tasks.write_text("".join(line for n, line in enumerate(tasks.read_text().splitlines(True)) if n % 2))
    (project / "SKILL.md").write_text(seed)
    git(project, "commit", "-qam", "trim the skill; drop half the tasks")
    code, result, _ = check(project, "--base", "main", markdown=False)
    assert code == 2 and result["judge_changed"] == ["tasks.jsonl"], result["reason"]

    git(project, "switch", "-q", "-c", "pr/split", "main")  # the judge's change merged on its own first
    config.write_text(config.read_text().replace("  gate_metric: hard\n", "  gate_metric: hard\n  gate_repeats: 2\n"))
    git(project, "commit", "-qam", "two repeats")
    judged = git(project, "rev-parse", "HEAD")
    commit_skill(project, seed, "trim the skill")
    code, result, _ = check(project, "--base", judged, markdown=False)
    assert code == 1 and result["verdict"] == "regressed" and result["judge_changed"] == [], result["reason"]

    git(project, "switch", "-q", "-c", "pr/scorer", "main")  # a python scorer's source is the judge too
    (project / "judge.py").write_text("def score(item, output):\n    return float(output == item.expected)\n")
    git(project, "add", "judge.py")
    git(project, "commit", "-qm", "a python scorer")
    scorer = ("--set", "env.scorer.type=python", "--set", "env.scorer.callable=judge:score")
    base = git(project, "rev-parse", "HEAD")
    (project / "judge.py").write_text("def score(item, output):\n    return 1.0\n")
    commit_skill(project, seed, "trim the skill; every answer passes")
    code, result, _ = check(project, "--base", base, *scorer, markdown=False)
    assert code == 2 and result["judge_changed"] == ["judge.py"], result["reason"]


def test_the_base_is_measured_with_each_head_never_answered_by_an_old_scoring(project):
    """CI caches the call journal. The base's val scoring was answered from it by whatever check or run had scored
    that text before (possibly months earlier: a provider's drift since then read as HEAD's gain or loss), while
    HEAD was asked fresh. Now both sides are scored in a round of the (base, head) pair: a new HEAD re-measures
    the base; the same pair checked again pays nothing."""
    import sqlite3

    def calls() -> int:
        with sqlite3.connect(project / ".git" / "skillgit" / "cache" / "calls.sqlite") as db:
            return db.execute("SELECT count(*) FROM calls").fetchone()[0]

    seed = (project / "SKILL.md").read_text()
    base = git(project, "rev-parse", "HEAD")
    git(project, "switch", "-q", "-c", "pr/one")
    commit_skill(project, seed + "\nWrite codes in uppercase letters (AB-12).\n", "one rule")
    assert check(project, "--base", base, "--no-test", markdown=False)[0] in (0, 1)
    first = calls()  # 30 val items × 3 repeats per side (fewer when repeats come back identical)
    assert check(project, "--base", base, "--no-test", markdown=False)[0] in (0, 1)
    assert calls() == first  # the same pair again: replayed
    git(project, "switch", "-q", "-c", "pr/two", base)
    commit_skill(project, seed + "\nAlways give prices with 2 decimal places.\n", "another rule")
    assert check(project, "--base", base, "--no-test", markdown=False)[0] in (0, 1)
    assert calls() - first == first  # the base scored again with the new head, not only the head


# ---------------------------------------------------------------------------------------------- the workflow
def test_the_github_workflow_runs_check_on_skill_changes_and_posts_the_summary(project):
    path = templates_dir() / "github" / "skillgit-check.yml"
    text = path.read_text(encoding="utf-8")
    flow = yaml.safe_load(text)
    trigger = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "SKILL.md" in trigger["pull_request"]["paths"] and "skillgit.yaml" in trigger["pull_request"]["paths"]
    steps = flow["jobs"]["check"]["steps"]
    run = next(s for s in steps if s.get("name", "").startswith("skillgit check"))
    assert run["env"]["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    assert '--base "$BASE_SHA"' in run["run"] and '>> "$GITHUB_STEP_SUMMARY"' in run["run"]
    assert "exit $status" in run["run"]  # the job fails exactly when check does
    assert any(s.get("with", {}).get("fetch-depth") == 0 for s in steps)
    install = next(s for s in steps if s.get("name") == "Install skillgit")
    assert install["run"].startswith('echo "::error::') and install["run"].endswith("exit 1")  # set it first


MARKERS = ("# skill.path", "# config", "# env.tasks", "# skill.branch", "# api key", "# skillgit version")


def test_print_workflow_fills_the_branch_paths_key_and_source_from_the_project(make_repo):
    from skillgit.provenance import source
    from skillgit.review.workflow import UNPINNED, install_command

    config = ("skill:\n  path: skills/house\n  branch: master\nmodel:\n  student_backend: anthropic\n"
              "  student_model: claude-haiku-4-5\n  student:\n    api_key_env: TEAM_ANTHROPIC_KEY\n"
              "env:\n  tasks: data/tasks[v2].jsonl\n")
    root = make_repo({"skills/house/SKILL.md": "# House\n", "data/tasks[v2].jsonl": "", "skillgit.yaml": config})
    printed = run_cli("check", "--print-workflow", cwd=root)
    assert printed.returncode == 0, printed.stderr
    flow = yaml.safe_load(printed.stdout)
    trigger = flow.get("on", flow.get(True))
    assert trigger["pull_request"]["paths"] == ["skills/house/**", "skillgit.yaml", "data/tasks\\[v2\\].jsonl"]
    assert flow["env"]["SKILL_BRANCH"] == "master"
    steps = flow["jobs"]["check"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install skillgit")
    # the exact source of the skillgit that printed it (the same installation as this test's), never a bare name
    assert install["run"] == install_command(source())
    if install["run"] == UNPINNED:  # e.g. an editable install from a checkout with changes: says so on stderr
        assert "the workflow's install step cannot name this skillgit's source" in printed.stderr
    run = next(s for s in steps if s.get("name", "").startswith("skillgit check"))
    assert run["env"] == {"TEAM_ANTHROPIC_KEY": "${{ secrets.TEAM_ANTHROPIC_KEY }}",
                          "BASE_SHA": "${{ github.event.pull_request.base.sha }}"}
    # every other line is the shipped template's, byte for byte (its comments say how to change the source)
    text = (templates_dir() / "github" / "skillgit-check.yml").read_text(encoding="utf-8")
    unmarked = [line for line in text.splitlines() if not any(m in line for m in MARKERS)]
    assert [line for line in printed.stdout.splitlines() if not any(m in line for m in MARKERS)] == unmarked
    assert "To upgrade, print the workflow again with the newer skillgit" in printed.stdout


@pytest.mark.parametrize(("source", "run"), [
    ({"url": "https://git.example.org/team/skillgit.git", "vcs_info": {"vcs": "git", "commit_id": "a" * 40}},
     f'python -m pip install "skillgit @ git+https://git.example.org/team/skillgit.git@{"a" * 40}"'),
    ({"url": "https://files.example.org/skillgit-0.1.0-py3-none-any.whl",
      "archive_info": {"hashes": {"sha256": "b" * 64}}},
     f'python -m pip install "skillgit @ https://files.example.org/skillgit-0.1.0-py3-none-any.whl#sha256={"b" * 64}"'),
    ({"url": "file:///home/me/skillgit", "dir_info": {}}, None),  # only on that machine: the job fails, says so
    (None, None),  # installed from an index (no record): never guessed
])
def test_the_workflow_installs_the_exact_source_or_fails_saying_so(project, source, run):
    from skillgit.project import open_project
    from skillgit.provenance import Source, from_direct_url
    from skillgit.review.workflow import UNPINNED, install_warning, render_for

    src = Source("unknown", detail="no direct_url.json") if source is None else from_direct_url(source)
    flow = yaml.safe_load(render_for(open_project(project), src))
    install = next(s for s in flow["jobs"]["check"]["steps"] if s.get("name") == "Install skillgit")
    assert install["run"] == (run or UNPINNED)
    assert (install_warning(src) is None) == (run is not None)
    if run is None:
        assert "::error::" in install["run"] and install["run"].endswith("exit 1")


def test_print_workflow_on_the_demo_keeps_the_shipped_key_line(project):
    printed = run_cli_inproc("check", "--print-workflow", cwd=project)
    assert printed.returncode == 0, printed.stderr
    assert "OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}" in printed.stdout  # simulated: no key to name
    assert 'SKILL_BRANCH: "main"' in printed.stdout and '- "tasks.jsonl"' in printed.stdout
