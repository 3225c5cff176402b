"""`skillgit train --branch` and `skillgit pr`: a review branch trained with the simulated world (the real CLI),
a PR body whose numbers are the history's, pushing the head branch, and `gh` — a fake one on PATH that records
its argv, and none at all."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from skillgit.errors import SkillgitError
from skillgit.records import RunProgress
from skillgit.review import data
from skillgit.review import pr as pr_mod
from skillgit.store import Store
from tests.conftest import git, run_cli, run_cli_inproc
from tests.helpers import demo_project
from tests.test_review_report import SEED, _decide, build_history, hermetic, log_json, ok

BRANCH = "review/learned"


@pytest.fixture(scope="module")
def review(tmp_path_factory) -> dict:
    """A demo project trained onto a review branch; returns the paths, shas and the run's `train --json`."""
    base = tmp_path_factory.mktemp("review")
    with hermetic(base / "home"):
        root = demo_project(base / "p")
        main_before = git(root, "rev-parse", "main")
        skill_before = (root / "SKILL.md").read_bytes()
        proc = ok(run_cli_inproc("train", "--branch", BRANCH, "--set", "train.max_steps=4", "--json", cwd=root))
        # the review branch's own view of the history: the same config, skill.branch pointing at it
        config = (root / "skillgit.yaml").read_text().replace("branch: main", f"branch: {BRANCH}")
        (root / ".git" / "review.yaml").write_text(config)
    return {"root": root, "main_before": main_before, "skill_before": skill_before,
            "result": json.loads(proc.stdout), "config": root / ".git" / "review.yaml"}


# ---------------------------------------------------------------------------------------------- train --branch
def test_train_branch_leaves_the_skill_branch_where_it_was(review):
    root = review["root"]
    assert git(root, "rev-parse", "main") == review["main_before"]
    assert (root / "SKILL.md").read_bytes() == review["skill_before"]
    assert git(root, "status", "--porcelain") == ""
    head = git(root, "rev-parse", BRANCH)
    assert head != review["main_before"] and review["result"]["accepted"] >= 1
    git(root, "merge-base", "--is-ancestor", "main", BRANCH)  # the branch starts at main
    run = review["result"]["run"]
    progress = json.loads(git(root, "show", f"refs/skillgit/runs/{run}:progress.json"))
    assert progress["branch"] == BRANCH and progress["seed_rev"] == review["main_before"]
    # the base is recorded with the run (a note on its seed commit), so `pr` finds it in any clone
    note = [json.loads(x) for x in git(root, "notes", "--ref", "skillgit", "show", "main").splitlines()]
    assert {"kind": "review", "run": run, "base": "main", "head": BRANCH, "v": 1} in note


def test_train_branch_continues_a_descendant_and_refuses_the_rest(tmp_path):
    from skillgit.review import branch

    root = demo_project(tmp_path / "p")
    assert ok(run_cli_inproc("train", "--branch", "review/x", "--dry-run", cwd=root))
    assert git(root, "branch", "--list", "review/x") == ""  # a dry run creates nothing
    store = Store.open(root, "SKILL.md")
    made = branch.prepare(store, "review/x")
    assert (made.created, made.existed, made.start) == (True, False, git(root, "rev-parse", "main"))
    git(root, "commit", "-q", "--allow-empty", "-m", "work on the review branch")  # HEAD is main: move review/x
    git(root, "update-ref", "refs/heads/review/x", git(root, "rev-parse", "HEAD"))
    git(root, "reset", "-q", "--hard", "HEAD~1")
    again = branch.prepare(store, "review/x")  # exists and contains main: continued where it is
    assert (again.created, again.existed, again.start) == (False, True, git(root, "rev-parse", "review/x"))
    with pytest.raises(SkillgitError, match="candidates/"):
        branch.prepare(store, "candidates/r/0001")
    same = run_cli_inproc("train", "--branch", "main", cwd=root)
    assert same.returncode == 2 and "is the skill branch itself" in same.stderr
    (root / "README.md").write_text("main moved on\n")
    git(root, "commit", "-qam", "main moves")
    before = git(root, "for-each-ref")
    stale = run_cli_inproc("train", "--branch", "review/x", cwd=root)
    assert stale.returncode == 3 and "does not contain the tip of 'main'" in stale.stderr
    assert "git merge main" in stale.stderr and git(root, "for-each-ref") == before


# ---------------------------------------------------------------------------------------------- the body
def test_pr_body_has_every_section_and_the_history_numbers(review):
    root, result = review["root"], review["result"]
    run = result["run"]
    body = ok(run_cli_inproc("pr", cwd=root)).stdout
    for heading in ("## What skillgit learned", "### Scores", "### Accepted edits", "### Rejected alternatives",
                    "### Cost and tokens", "### Reproduce"):
        assert f"\n{heading}" in "\n" + body, heading
    assert f"on `{BRANCH}` (from `main`)" in body
    # seed / best / final as the run reported them, with intervals over the splits' items
    for name in ("seed", "best", "final"):
        s = result["scores"][name]
        assert f"| {name} | {s['val']:.4f} | " in body and f" | {s['test']:.4f} | " in body
    assert "n = 30 val and 60 test items" in body and "Wilson" in body
    # every decision with the numbers `skillgit log --json` shows for the review branch
    entries = [e for e in log_json(root, "--run", run, "--config", str(review["config"]))
               if e["verdict"] in ("accepted", "rejected")]
    assert entries and len(entries) == result["accepted"] + result["rejected"]
    accepted_part, _, rest = body.partition("### Rejected alternatives")
    rejected_part = rest.partition("</details>")[0]
    for e in entries:
        numbers = f"→ {e['score']:.4f} (Δ {e['delta']:+.4f})"
        part = accepted_part if e["verdict"] == "accepted" else rejected_part
        assert f"`{e['label']}`" in part and numbers in part, e["label"]
    assert "<details><summary>" in rest and "```diff" in accepted_part and "- why: " in accepted_part
    assert "Val items: " in accepted_part
    assert f"git show refs/skillgit/runs/{run}:config.yaml" in body and result["run"] in body
    digest = json.loads(git(root, "show", f"refs/skillgit/runs/{run}:progress.json"))["config_digest"]
    assert f"Config digest `{digest}`" in body
    # the audit trail a reviewer can run: plain git log shows the short notes (never the JSON records)
    assert f"Audit: `git log main..{BRANCH}`" in body and "--notes=skillgit" not in body


def test_pr_body_lists_the_items_each_accepted_edit_fixed_and_broke(make_repo):
    root = make_repo({"SKILL.md": SEED})
    shas = build_history(root)
    git(root, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)
    body = ok(run_cli_inproc("pr", "--run", "r1", "--head", "review/x", cwd=root)).stdout
    first, second = body.split("#### ")[1:3]
    assert first.startswith(f"1. `r1/0001` (`{shas['s1'][:10]}`) — val 0.2500 → 0.5000 (Δ +0.2500)")
    assert "flips not recorded" in first
    assert second.startswith(f"2. `r1/0002` (`{shas['s2'][:10]}`) — val 0.5000 → 0.8000 (Δ +0.3000)")
    assert "fixed (2): b, c · broke (1): a · unknown on one side (1): d" in second
    assert "**append**: Uppercase codes." in second and "why: because of step 2" in second
    assert "Train batch (the rollouts this step learned from, scored with the skill before its edits): 0.5000" in second
    assert "| seed | 0.2500 | 0.053–0.664 | 0.3000 | – |" in body  # no task file here: n from the gate's coverage
    rejected = body.partition("### Rejected alternatives (1)")[2]
    assert "`r1/0003` val 0.8000 → 0.2000 (Δ -0.6000), tag `rejected/r1/0003`: worse" in rejected


def test_pr_body_makes_model_text_inert(make_repo):
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    hostile = "<script>alert(1)</script> @everyone | ``` done"
    _decide(store, SEED + "```\nclosed the fence\n", 1, 1, True, 0.2, 0.4, {"a": 1.0}, {}, hostile)
    progress = RunProgress(run="r1", config_digest="x", branch="main", seed_rev=git(root, "rev-parse", "main~1"))
    store.save_run("r1", {"progress.json": json.dumps(progress.to_dict())}, "run")
    review = data.load_run(store, "r1")
    body = pr_mod.render_body(review, base="main", head="review/x", skill_path="SKILL.md")
    assert "<script>" not in body and "&lt;script>" in body
    assert "@everyone" not in body and "&#64;everyone" in body and "\\| \\`\\`\\` done" in body
    diff = body.partition("````diff\n")[2].partition("\n````")[0]  # a longer fence: the diff's ``` stays inside
    assert "+```" in diff and "+closed the fence" in diff
    assert pr_mod.code("a `b` c") == "``a `b` c``"


# ---------------------------------------------------------------------------------------------- push and gh
def _bin_with(tmp_path: Path, gh: bool) -> str:
    """A PATH with git (and a fake gh that records its argv, when asked) and nothing else."""
    folder = tmp_path / ("bin-gh" if gh else "bin")
    folder.mkdir()
    os.symlink(shutil.which("git"), folder / "git")
    if gh:
        script = folder / "gh"
        script.write_text(f"#!{sys.executable}\nimport json, sys\n"
                          f"open({str(tmp_path / 'gh-argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
                          "print('https://github.com/example/skills/pull/7')\n")
        script.chmod(0o755)
    return str(folder)


def test_pr_push_and_gh_create_the_pull_request(review, tmp_path):
    root = review["root"]
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    expected = ok(run_cli("pr", cwd=root)).stdout
    proc = ok(run_cli("pr", "--push", str(remote), "--gh", cwd=root, env={"PATH": _bin_with(tmp_path, gh=True)}))
    assert proc.stdout.strip() == "https://github.com/example/skills/pull/7"
    assert git(remote, "rev-parse", BRANCH) == git(root, "rev-parse", BRANCH)
    assert git(remote, "for-each-ref", "refs/notes/skillgit") != ""  # the evidence travels with the branch
    argv = json.loads((tmp_path / "gh-argv.json").read_text())
    # every value joined to its flag (`--base=…`): none can be read as another flag
    assert argv[:4] == ["pr", "create", "--base=main", f"--head={BRANCH}"]
    assert argv[4].startswith("--title=skillgit: ") and "SKILL.md" in argv[4]
    assert argv[5].startswith("--body-file=") and Path(argv[5].split("=", 1)[1]).read_text(encoding="utf-8") == expected
    assert git(root, "status", "--porcelain") == ""  # the body file lives under .git, not in the working tree


def test_pr_gh_missing_says_what_to_install_and_pushes_nothing(review, tmp_path):
    root = review["root"]
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    body = tmp_path / "body.md"
    proc = run_cli_inproc("pr", "--push", str(remote), "--gh", "--body-file", str(body), cwd=root,
                          env={"PATH": _bin_with(tmp_path, gh=False)})
    assert proc.returncode == 2, proc.stderr
    assert "`gh` (the GitHub CLI) is not installed" in proc.stderr
    assert "https://cli.github.com" in proc.stderr and "brew install gh" in proc.stderr
    assert "gh auth login" in proc.stderr and str(body) in proc.stderr
    assert body.read_text(encoding="utf-8").startswith("## What skillgit learned")
    assert git(remote, "for-each-ref") == ""


def test_pr_refuses_to_propose_a_branch_into_itself(demo_on_main):
    proc = run_cli_inproc("pr", "--gh", cwd=demo_on_main)
    assert proc.returncode == 2 and "there is no pull request to write" in proc.stderr and "--branch" in proc.stderr


def test_pr_with_a_head_branch_that_does_not_exist_fails_and_writes_nothing(demo_on_main, tmp_path):
    """`--head` naming no branch used to print (or write) a body for it anyway: now an error that names the branch
    and the fix, before any body is printed or written (with --body-file, --gh or --json alike)."""
    body, path = tmp_path / "body.md", _bin_with(tmp_path, gh=True)
    for extra in ([], ["--body-file", str(body)], ["--gh"], ["--json"]):
        proc = run_cli_inproc("pr", "--head", "review/missing", *extra, cwd=demo_on_main, env={"PATH": path})
        assert proc.returncode == 2, (extra, proc.stderr)
        assert "head branch 'review/missing' does not exist" in proc.stderr, proc.stderr
        assert "skillgit train --branch review/missing" in proc.stderr and "git branch" in proc.stderr
        assert proc.stdout == "" and not body.exists(), extra
    assert not (demo_on_main / ".git" / "skillgit" / "pr").exists() and not (tmp_path / "gh-argv.json").exists()


def test_pr_head_may_be_a_branch_only_a_remote_has_unless_it_is_to_be_pushed(demo_on_main, tmp_path):
    """A head branch that exists only on a remote (a collaborator's review branch, fetched) still gets its body, and
    `gh pr create --head` can open it; `--push` pushes a local branch, so it needs one and says so."""
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(demo_on_main, "remote", "add", "origin", str(remote))
    git(demo_on_main, "branch", "review/theirs", "main")
    git(demo_on_main, "push", "-q", "origin", "review/theirs")
    git(demo_on_main, "fetch", "-q", "origin")
    git(demo_on_main, "branch", "-D", "-q", "review/theirs")
    proc = run_cli_inproc("pr", "--head", "review/theirs", cwd=demo_on_main)
    assert proc.returncode == 0, proc.stderr
    assert "on `review/theirs`" in proc.stdout
    proc = run_cli_inproc("pr", "--head", "review/theirs", "--push", "origin", cwd=demo_on_main)
    assert proc.returncode == 2 and "'review/theirs' is not a local branch" in proc.stderr, proc.stderr
    assert "git switch review/theirs" in proc.stderr and proc.stdout == ""


@pytest.fixture
def demo_on_main(make_repo) -> Path:
    root = make_repo({"SKILL.md": SEED})
    build_history(root)
    return root


# ---------------------------------------------------------------------------------------------- GitHub's size limit
def synthetic_review(accepted: int, diff_lines: int, text_chars: int, rejected: int = 0,
                     stop_reason: str = "") -> data.RunReview:
    """A run of `accepted` accepted decisions (each a `diff_lines`-line diff and an edit of `text_chars`
    characters, some outside the BMP) and `rejected` rejected ones, built in memory: the body's size is the test."""
    from skillgit.records import StepKind, StepOutcome, UpdateRecord, Verdict
    from skillgit.types import Edit, EditResult

    decisions = []
    for n in range(accepted + rejected):
        edit = Edit("append", content=("rule 𝄞 " * (text_chars // 7 + 1))[:text_chars], rationale="why " * 50)
        outcome = StepOutcome(run="big", step=str(n + 1), kind=StepKind.STEP, epoch=1, seq=n + 1,
                              verdict=Verdict.ACCEPTED if n < accepted else Verdict.REJECTED, score_before=0.1,
                              score_after=0.2, reason="better " * 40, sha=f"{n + 1:040x}", parent=f"{n:040x}")
        diff = "".join(f"+line {i} of step {n + 1}: {'x' * 50}\n" for i in range(diff_lines))
        decisions.append(data.StepReview(outcome, UpdateRecord("patch", (EditResult(edit, "applied"),)),
                                       f"--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1 +1,{diff_lines} @@\n{diff}"))
    progress = RunProgress(run="big", config_digest="d", branch="review/big", status="stopped",
                           stop_reason=stop_reason)
    return data.RunReview(progress, "hard", 0.5, tuple(decisions), "review/big", "main", {})


def _pr(review: data.RunReview) -> pr_mod.PullRequest:
    return pr_mod.build(review, base="main", head="review/big", skill_path="SKILL.md")


def test_pr_body_shrinks_diffs_first_to_stay_under_githubs_limit():
    review = synthetic_review(accepted=30, diff_lines=300, text_chars=300)
    full = pr_mod.render_body(review, base="main", head="review/big", skill_path="SKILL.md")
    assert pr_mod.github_length(full) > pr_mod.GITHUB_BODY_LIMIT  # the whole evidence would not fit
    body = _pr(review).body
    assert pr_mod.github_length(body) <= pr_mod.BODY_BUDGET < pr_mod.GITHUB_BODY_LIMIT
    assert body.count("\n#### ") == 30  # every accepted edit is still there, its diff shortened
    assert "more lines: `skillgit show " in body and "### Reproduce" in body
    assert "more accepted edit(s)" not in body and "cut here" not in body


def test_pr_body_details_fewer_accepted_edits_after_the_smallest_setting():
    review = synthetic_review(accepted=400, diff_lines=5, text_chars=180, rejected=50)
    smallest = pr_mod.render_body(review, base="main", head="review/big", skill_path="SKILL.md",
                                  max_diff_lines=0, max_rejected=20, max_text=200)
    assert pr_mod.github_length(smallest) > pr_mod.BODY_BUDGET  # the old last resort: sent over the limit
    body = _pr(review).body
    assert pr_mod.github_length(body) <= pr_mod.BODY_BUDGET
    shown = body.count("\n#### ")
    assert 0 < shown < 400 and f"#### {shown}. `big/{shown:04d}`" in body  # the first ones, in order
    assert f"… and {400 - shown} more accepted edit(s)" in body and "`skillgit log --run big`" in body
    assert "### Accepted edits (400)" in body and "### Reproduce" in body and body.endswith("</sub>\n")
    assert body.count("<details>") == body.count("</details>")


def test_pr_body_is_cut_at_a_line_when_nothing_else_fits():
    review = synthetic_review(accepted=2, diff_lines=3, text_chars=50, stop_reason="budget " * 20_000)
    body = _pr(review).body
    assert pr_mod.github_length(body) <= pr_mod.BODY_BUDGET
    assert body.endswith("`skillgit pr --run big --body-file pr.md`.\n") and "cut here" in body
    cut = pr_mod.hard_cut("<details>\n```bash\n" + "echo x\n" * 100, "\nnote\n", 200)
    assert len(cut) <= 200 and cut.endswith("\n```\n\n</details>\n\nnote\n")  # open blocks closed


def test_gh_that_hangs_is_stopped_at_the_timeout_with_what_it_started(tmp_path):
    """`gh` runs in its own process group (skillgit/process.py), as every child: at the timeout it is killed with
    the processes it started (before: only gh itself, its child kept running)."""
    import time

    from skillgit.review.pr import PullRequest, create_with_gh

    folder, pid_file = tmp_path / "bin", tmp_path / "child.pid"
    folder.mkdir()
    gh = folder / "gh"
    gh.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    gh.chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{folder}{os.pathsep}{old}"
    try:
        with pytest.raises(SkillgitError) as err:
            create_with_gh(PullRequest("r1", "main", "skill", "t", "b"), tmp_path / "body.md", tmp_path, timeout_s=1)
    finally:
        os.environ["PATH"] = old
    assert "did not finish within 1 s" in err.value.message
    child = int(pid_file.read_text())
    for _ in range(50):  # (the kill is done when create_with_gh returns; a zombie may linger until reaped)
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        raise AssertionError("gh's child outlived the timeout")
