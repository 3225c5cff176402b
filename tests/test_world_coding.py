"""The simulated coding world (skillgit/world/coding.py, agent.py, agentic_teacher.py) and the agentic example
(examples/agentic/): the agent runs in a temporary copy of a fixture repository with a skill package installed — a
real subprocess where its output or its process is under test, its own steps in this process elsewhere (`agent`) —
then the task's real pytest verifier runs in that copy, a subprocess."""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skillgit import prompts
from skillgit.config import SimulatedCfg
from skillgit.types import Edit, RejectedEdit, Score, Trajectory
from skillgit.world import agent as world_agent
from skillgit.world import agent_profile
from skillgit.world.agent import AgentError, Session, decide, find_package, run_agent
from skillgit.world.agentic_teacher import answer, is_agentic, package_files, symptoms_of
from skillgit.world.coding import RECIPES, parse_request, read_coding, recipe_for, referenced_files
from skillgit.world.common import seeded_rng
from skillgit.world.textedit import apply_edit

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agentic"
TASKS = [json.loads(line) for line in (EXAMPLE / "tasks.jsonl").read_text().splitlines() if line.strip()]
BY_ID = {t["id"]: t for t in TASKS}
STARTER = EXAMPLE / "skill"
FULL = EXAMPLE / "reference_skill"
# One task per request kind and repository, covering every convention at least once.
SAMPLE = ("textkit-slugify", "textkit-fix-chunk", "textkit-parse-pairs", "ledger-add-days", "ledger-is-weekend",
          "ledger-round-half-up")


def load_package(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md"))}


def workspace(tmp: Path, task: dict, package: dict[str, str] | None, install: str = ".claude/skills/house") -> Path:
    ws = tmp / "ws"
    shutil.copytree(EXAMPLE / task["workspace"]["fixture"], ws)
    for rel, text in (package or {}).items():
        dest = ws / install / rel if install else ws / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    return ws


def agent(ws: Path, prompt: str, *, seed: int = 0, sample: int = 0, noise: float | None = None,
          fmt: str = "text", env: dict[str, str] | None = None, process: bool = False) -> subprocess.CompletedProcess:
    """The simulated agent's run in `ws`, as `python -m skillgit.world.agent` prints it. Where the process itself is
    under test — its stream-json, its text output (`process=True`), an environment of its own — it is that real
    process; elsewhere `agent.main`'s own steps run in this process (same session start, same `run_agent`, same
    output: what a test asks of the world is its runs, and an interpreter per run cost ~0.2 CPU-s under coverage)."""
    full_env = {**os.environ, **(env or {})}
    if noise is not None:
        full_env["SKILLGIT_AGENT_NOISE"] = str(noise)
    argv = [sys.executable, "-m", "skillgit.world.agent", "--seed", str(seed), "--sample", str(sample),
            "--output-format", fmt, prompt]
    if process or fmt != "text" or env:
        proc = subprocess.run(argv, check=False, cwd=ws, env=full_env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc
    agent_profile.run_session_start(agent_profile.load(full_env), ws, full_env)
    run = run_agent(ws, prompt, seed=seed, sample=sample,
                    noise=float(full_env.get("SKILLGIT_AGENT_NOISE", str(world_agent.NOISE))), env=full_env)
    return subprocess.CompletedProcess(argv, 0, run.final + "\n", "")


def verify(ws: Path, task: dict) -> tuple[bool, str]:
    argv = task["verify"]["command"].split()
    assert argv[0] == "python"
    proc = subprocess.run([sys.executable, *argv[1:]], check=False, cwd=ws, capture_output=True, text=True,
                          timeout=task["verify"]["timeout_s"])
    return proc.returncode == 0, proc.stdout


def attempt(tmp: Path, task_id: str, package: dict[str, str] | None, **kw) -> tuple[bool, str, str]:
    """(passed, verifier output, agent stdout) of one task run."""
    task = BY_ID[task_id]
    ws = workspace(tmp, task, package)
    out = agent(ws, task["prompt"], **kw).stdout
    passed, report = verify(ws, task)
    return passed, report, out


def score(tmp_factory, package: dict[str, str], ids, **kw) -> dict[str, bool]:
    def one(task_id: str) -> tuple[str, bool]:
        return task_id, attempt(tmp_factory.mktemp("run"), task_id, package, **kw)[0]

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, ids))


def snapshot(ws: Path) -> dict[str, str]:
    """The workspace's text files. Binary files (a coverage data file a subprocess drops under `--cov`, a
    cache) are not part of what the agent wrote and are left out, as `git diff` shows them as binary."""
    out: dict[str, str] = {}
    for p in sorted(ws.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            try:
                out[p.relative_to(ws).as_posix()] = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return out


# ---------------------------------------------------------------------------------------------- the example
def test_example_tasks_are_well_formed_and_parse():
    assert len(TASKS) >= 12 and len({t["id"] for t in TASKS}) == len(TASKS)
    fixtures = {t["workspace"]["fixture"] for t in TASKS}
    assert len(fixtures) >= 2
    for t in TASKS:
        assert t["verify"]["result"] == "pytest" and t["metadata"]["world"] == "simulated-coding"
        test_file = EXAMPLE / t["workspace"]["fixture"] / t["verify"]["command"].split()[-1]
        assert test_file.is_file() and "tests/verify/" in test_file.as_posix()
        request = parse_request(t["prompt"])
        assert request is not None and recipe_for(request) is not None, t["id"]
        # the prompt never names a convention: the skill has to carry them
        assert not re.search(r"docstring|__all__|ValueError|CHANGELOG|type hint|logging|test", t["prompt"],
                             re.IGNORECASE)
    assert "student_backend: agent" in (EXAMPLE / "skillgit.yaml").read_text()  # trains offline as shipped
    starter = (STARTER / "SKILL.md").read_text()
    assert starter.startswith("---\nname: ") and "\ndescription: " in starter


def test_grammar_and_recipes():
    r = parse_request("Add a function `pad(text, width)` to `pkg/mod.py` that shortens `text`. Empty text is "
                      "invalid. Lines without '=' are skipped and reported.")
    assert r is not None and (r.kind, r.name, r.params, r.module, r.test_path) == (
        "add", "pad", ("text", "width"), "pkg.mod", "tests/test_mod.py")
    assert r.invalid == "Empty text is invalid." and r.report
    assert parse_request("Fix `f` in `a/b.py`: it breaks.").kind == "fix"  # type: ignore[union-attr]
    assert parse_request("Change `f` in `a/b.py` so that it rounds halves away from zero.").kind == "change"  # type: ignore[union-attr]
    assert parse_request("Please make everything better.") is None
    assert parse_request("Add a function `f(1x)` to `a/b.py` that shortens it.") is None
    assert len({r.id for r in RECIPES}) == len(RECIPES)


# ---------------------------------------------------------------------------------------------- concepts
def test_concepts_follow_paraphrases_and_ignore_negated_harms():
    for text in ("Every public function needs a docstring.", "Document each public function you add."):
        assert "docstring" in read_coding(text).conventions
    for text in ("Add type hints to every parameter.", "Annotate the parameters and return type.",
                 "Use typed signatures."):
        assert "type_hints" in read_coding(text).conventions
    for text in ("Invalid input raises ValueError.", "Raise an error on invalid arguments."):
        assert "valueerror" in read_coding(text).conventions
    assert read_coding("Group entries under ### Added and ### Fixed.").conventions >= {"changelog_format",
                                                                                      "changelog"}
    assert read_coding("Print debugging output while you work.").harms == {"print_debug"}
    assert read_coding("Never print debugging output; use logging.").harms == frozenset()
    assert read_coding("Never print debugging output; use logging.").conventions == {"logging"}
    # vague wording conveys nothing
    assert not read_coding("Write clean, readable code. Make sure the new code is covered.").conventions


def test_references_count_only_when_pointed_at():
    refs = {"references/changelog.md": "see references/extra.md", "references/extra.md": "x",
            "references/other.md": "y"}
    assert referenced_files("Follow references/changelog.md.", refs) == ["references/changelog.md",
                                                                        "references/extra.md"]
    assert referenced_files("Update CHANGELOG.md and changelog.md.", refs) == []


def test_harms_override_and_slips_are_seeded():
    request = parse_request(BY_ID["textkit-slugify"]["prompt"])
    assert request is not None
    recipe = recipe_for(request)
    assert recipe is not None
    reading = read_coding("Add docstrings. Skip docstrings for small helpers. Raise ValueError on invalid input.")
    d = decide(request, recipe, reading, seeded_rng(0, "agent", "x"), noise=0.0)
    assert "docstring" not in d.conventions and "valueerror" in d.conventions and "no_docstring" in d.harms
    full = find_package(Path("/nonexistent"), {"SKILLGIT_SKILL_DIR": str(FULL)}).reading()
    slips = [decide(request, recipe, full, seeded_rng(0, "agent", f"s{i}"), noise=0.06).slipped for i in range(400)]
    rate = sum(1 for s in slips if s) / len(slips)
    assert 0.02 < rate < 0.12
    assert slips == [decide(request, recipe, full, seeded_rng(0, "agent", f"s{i}"), noise=0.06).slipped
                     for i in range(400)]


# ---------------------------------------------------------------------------------------------- the agent, for real
@pytest.fixture(scope="module")
def passes(tmp_path_factory):
    """`passes(package folder, ids)`: whether each task passed, each (package, task) run once per module: a run is
    a seeded function of both (seed 0, sample 0, each in a workspace of its own), so the sample test and the
    every-task test read the same runs instead of running the sample's 12 twice."""
    done: dict[tuple[Path, str], bool] = {}

    def results(folder: Path, ids) -> dict[str, bool]:
        missing = [i for i in ids if (folder, i) not in done]
        if missing:
            done.update({(folder, k): v for k, v in score(tmp_path_factory, load_package(folder), missing).items()})
        return {i: done[(folder, i)] for i in ids}

    return results


def test_starter_fails_and_full_skill_passes_on_a_sample(passes):
    starter = passes(STARTER, SAMPLE)
    full = passes(FULL, SAMPLE)
    assert sum(starter.values()) == 0, starter
    assert sum(full.values()) >= len(SAMPLE) - 1, full


@pytest.mark.slow
def test_starter_scores_low_and_full_skill_high_on_every_task(passes):
    ids = [t["id"] for t in TASKS]
    starter = passes(STARTER, ids)
    full = passes(FULL, ids)
    assert sum(starter.values()) / len(ids) <= 0.25, starter
    assert sum(full.values()) / len(ids) >= 0.85, full


def test_a_reference_file_counts_only_when_skill_md_points_at_it(tmp_path):
    package = load_package(FULL)
    assert "references/changelog.md" in package["SKILL.md"]
    unpointed = dict(package, **{"SKILL.md": package["SKILL.md"].replace(
        "as described in references/changelog.md", "for every change")})
    passed, report, _ = attempt(tmp_path / "a", "ledger-add-days", package, noise=0.0)
    assert passed, report
    passed, report, _ = attempt(tmp_path / "b", "ledger-add-days", unpointed, noise=0.0)
    assert not passed and "::test_changelog_format" in report and not re.search(r"::test_changelog\b(?!_)", report)


def test_paraphrased_skill_installed_as_agents_md_works(tmp_path):
    paraphrase = ("# House rules\n"
                  "Document each public function you add, and use typed signatures.\n"
                  "New public functions are re-exported: add them to the package's `__all__`.\n"
                  "Raise an error on invalid arguments instead of returning None.\n"
                  "Write a regression test in tests/test_<module>.py for every change.\n"
                  "Changelog: Keep a Changelog style, one bullet per change under ### Added, ### Changed or "
                  "### Fixed.\n"
                  "Use the logger of the module for warnings.\n")
    for i, task_id in enumerate(("textkit-slugify", "ledger-parse-rows", "textkit-fix-chunk")):
        task = BY_ID[task_id]
        ws = workspace(tmp_path / str(i), task, {"AGENTS.md": paraphrase}, install="")
        agent(ws, task["prompt"], noise=0.0)
        passed, report = verify(ws, task)
        assert passed, report


def test_a_harmful_instruction_hurts(tmp_path):
    package = load_package(FULL)
    harmful = dict(package, **{"SKILL.md": package["SKILL.md"] + "- Print debugging output in every function.\n"})
    for i, task_id in enumerate(("textkit-slugify", "ledger-fix-total")):
        passed, report, _ = attempt(tmp_path / f"ok{i}", task_id, package, noise=0.0)
        assert passed, report
        passed, report, _ = attempt(tmp_path / f"bad{i}", task_id, harmful, noise=0.0)
        assert not passed and "calls print()" in report


def _normalised(stream: str, ws: Path) -> list[dict]:
    events = [json.loads(line) for line in stream.splitlines()]
    for e in events:
        e.pop("duration_ms", None)
    return json.loads(json.dumps(events).replace(str(ws.resolve()), "<ws>"))


def test_runs_are_deterministic_and_never_open_the_verifier(tmp_path):
    task = BY_ID["textkit-parse-bool"]
    package = load_package(FULL)
    ws_a = workspace(tmp_path / "a", task, package)
    out_a = agent(ws_a, task["prompt"], seed=3, fmt="stream-json").stdout
    ws_b = workspace(tmp_path / "b", task, package)
    hidden = tmp_path / "verify-moved-away"
    shutil.move(str(ws_b / "tests" / "verify"), hidden)  # the verifier is not even there while the agent runs
    out_b = agent(ws_b, task["prompt"], seed=3, fmt="stream-json").stdout
    shutil.move(str(hidden), ws_b / "tests" / "verify")
    assert _normalised(out_a, ws_a) == _normalised(out_b, ws_b)
    assert snapshot(ws_a) == snapshot(ws_b)
    touched = [json.dumps(c["input"]) for e in _normalised(out_a, ws_a) if e["type"] == "assistant"
               for c in e["message"]["content"] if c["type"] == "tool_use"]
    assert touched and not any(re.search(r"verif|expected|solution|\.git/", t) for t in touched)
    # another seed or sample draws fresh noise but stays a valid run
    assert agent(ws_a, task["prompt"], seed=3, sample=1).returncode == 0


def test_stream_json_has_claude_code_shape(tmp_path):
    task = BY_ID["ledger-parse-rows"]
    ws = workspace(tmp_path, task, load_package(FULL))
    events = [json.loads(line) for line in agent(ws, task["prompt"], fmt="stream-json").stdout.splitlines()]
    assert events[0]["type"] == "system" and events[0]["subtype"] == "init"
    result = events[-1]
    assert result["type"] == "result" and result["subtype"] == "success" and result["is_error"] is False
    assert result["total_cost_usd"] == 0 and result["usage"]["output_tokens"] > 0 and result["result"]
    uses = {c["id"]: c for e in events if e["type"] == "assistant" for c in e["message"]["content"]
            if c["type"] == "tool_use"}
    results = [c for e in events if e["type"] == "user" for c in e["message"]["content"]]
    assert {c["name"] for c in uses.values()} >= {"Read", "Edit", "Write"}
    assert [r["tool_use_id"] for r in results] == list(uses)
    assert result["num_turns"] == sum(1 for e in events if e["type"] == "assistant")
    assert events[-2]["message"]["content"][0]["text"] == result["result"]
    text_out = agent(workspace(tmp_path / "t", task, load_package(FULL)), task["prompt"], process=True).stdout.strip()
    assert text_out == result["result"]


def test_the_agent_refuses_paths_outside_its_remit(tmp_path):
    session = Session(tmp_path.resolve(), "s")
    for rel in ("../x.py", ".git/config", "tests/verify/test_verify_x.py", "expected.txt", "solution/a.py"):
        with pytest.raises(AgentError):
            session.path(rel, reading=False)
    with pytest.raises(AgentError):
        session.path("tests/conftest.py", reading=True)
    assert session.path("tests/test_mod.py", reading=True) == tmp_path.resolve() / "tests" / "test_mod.py"


def test_package_discovery_order(tmp_path):
    (tmp_path / "AGENTS.md").write_text("agents")
    (tmp_path / "SKILL.md").write_text("root")
    assert find_package(tmp_path, {}).source == "AGENTS.md"
    skill = tmp_path / ".claude" / "skills" / "x"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("claude")
    assert find_package(tmp_path, {}).main == ("SKILL.md",) and find_package(tmp_path, {}).root == skill
    assert find_package(tmp_path, {"SKILLGIT_SKILL_DIR": str(FULL)}).opened() == ["SKILL.md",
                                                                                  "references/changelog.md"]
    gh = tmp_path / "g"
    (gh / ".github" / "instructions").mkdir(parents=True)
    (gh / ".github" / "copilot-instructions.md").write_text("a")
    (gh / ".github" / "instructions" / "py.instructions.md").write_text("b")
    assert find_package(gh, {}).main == ("copilot-instructions.md", "instructions/py.instructions.md")
    assert run_agent(tmp_path / "g", "Please make everything better.").final.startswith("I could not understand")


# ---------------------------------------------------------------------------------------------- the teacher
def _failing_trajectory(tmp_path: Path, task_id: str) -> Trajectory:
    passed, report, out = attempt(tmp_path, task_id, load_package(STARTER))
    assert not passed
    return Trajectory(task_id, BY_ID[task_id]["prompt"], out, None, Score(0.0, 0.2, report[-3000:]),
                      trace="--- a/x\n+++ b/textkit/strings.py\n+    return None\n")


def _reflect_prompt(package: dict[str, str], trajs: list[Trajectory], rejected: list[RejectedEdit] = ()) -> str:
    block = "\n".join(f'<file path="{p}">\n{t.rstrip()}\n</file>' for p, t in sorted(package.items()))
    return prompts.render("reflect", {"skill": prompts.block_skill(block), "budget": prompts.block_budget(4),
                                      "trajectories": prompts.block_trajectories(trajs, "failure"),
                                      "rejected_edits": prompts.block_rejected(list(rejected)),
                                      "meta_skill": prompts.block_meta_skill("")})[-1].content


def test_teacher_turns_failures_into_edits_including_reference_files(tmp_path):
    package = load_package(STARTER)
    trajs = [_failing_trajectory(tmp_path / "a", "ledger-add-days"),
             _failing_trajectory(tmp_path / "b", "textkit-fix-chunk")]
    text = _reflect_prompt(package, trajs)
    seen = package_files(prompts.child(text, "skill") or "")
    assert is_agentic(text) and {k: v.rstrip() for k, v in seen.items()} == {k: v.rstrip() for k, v in package.items()}
    cfg = SimulatedCfg(seed=0)
    answers = [answer("reflect", text, random.Random(s), cfg) for s in range(20)]
    assert all(a is not None for a in answers)
    reference_edits = []
    for a in answers:
        assert a is not None and set(a) >= {"reasoning", "edits", "failure_summary"}
        assert 0 < len(a["edits"]) <= 4 and "CHANGELOG.md" in a["failure_summary"]
        for e in a["edits"]:
            assert e["op"] in ("append", "insert_after", "replace", "delete") and e["file"]
            if e["file"].startswith("references/"):
                reference_edits.append((e, a["edits"]))
    assert reference_edits
    # a new reference file is (almost always) pointed at from SKILL.md in the same answer
    pointed = [(e, edits) for e, edits in reference_edits
               if any(x["file"] == "SKILL.md" and e["file"] in x["content"] for x in edits)]
    assert len(pointed) >= len(reference_edits) // 2
    # and applying such an answer makes the agent follow the reference
    e, edits = pointed[0]
    trained = dict(package)
    for x in edits:
        trained[x["file"]], _ = apply_edit(trained.get(x["file"], ""), x["op"], x["target"], x["content"])
    root = tmp_path / "pkg"
    for rel, content in trained.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    assert e["file"] in find_package(tmp_path, {"SKILLGIT_SKILL_DIR": str(root)}).opened()


def test_teacher_diagnoses_from_verifier_output_and_diff_and_respects_rejections():
    feedback = ("E   AssertionError: slugify is not in textkit.__all__\n"
                "E   AssertionError: CHANGELOG.md has no entry for slugify under '## Unreleased'\n"
                "E   AssertionError: CHANGELOG.md entry for slugify is not a bullet naming `slugify` ...\n"
                "E   AssertionError: textkit/strings.py calls print() (line 9)\n1 passed, 4 failed in 0.1s")
    assert symptoms_of(feedback, "") == ["export", "changelog_missing", "print"]
    package = {"SKILL.md": "---\nname: x\ndescription: y\n---\nPrint debugging output in every function.\n"}
    traj = Trajectory("t", "Add a function `f(x)` to `p/m.py` that shortens x.", "Done.", None,
                      Score(0.0, 0.2, feedback), trace="+++ b/p/m.py\n+    print('DEBUG f:', x)\n")
    text = _reflect_prompt(package, [traj])
    cfg = SimulatedCfg(seed=0, vague_rate=0.0, harmful_rate=0.0, off_target_rate=0.0)
    deletes = [a for s in range(30) if (a := answer("reflect", text, random.Random(s), cfg))
               and any(e["op"] == "delete" and "Print debugging" in e["target"] for e in a["edits"])]
    assert deletes  # the cause line is recognised and deleted on some seeds
    first = answer("reflect", text, random.Random(1), cfg)
    assert first is not None
    rejected = [RejectedEdit(Edit(op=e["op"], content=e["content"], target=e["target"]), -0.1, "worse")
                for e in first["edits"]]
    again = answer("reflect", _reflect_prompt(package, [traj], rejected), random.Random(1), cfg)
    assert again is not None
    assert not {(e["op"], e["content"]) for e in again["edits"] if e["content"]} & {
        (e["op"], e["content"]) for e in first["edits"] if e["content"]}


def test_teacher_leaves_other_stages_and_text_world_prompts_alone():
    assert answer("merge", "<stage>merge</stage>\n", random.Random(0), None) is None
    text_world = prompts.render("reflect", {
        "skill": prompts.block_skill("Normalise records."), "budget": prompts.block_budget(2),
        "trajectories": prompts.block_trajectories([Trajectory("i", "date 3/5/2024", "Answer: 3/5/2024",
                                                               "2024-03-05", Score(0.0, 0.0, "expected '2024-03-05'"))],
                                                   "failure"),
        "rejected_edits": prompts.block_rejected([]), "meta_skill": prompts.block_meta_skill("")})[-1].content
    assert answer("reflect", text_world, random.Random(0), None) is None


# ---------------------------------------------------------------------------------------------- end to end
def _run_for_teacher(tmp: Path, task_id: str, package: dict[str, str], sample: int) -> Trajectory:
    """A trajectory as the loop will render it: final message, verifier output tail, diff of the workspace."""
    task = BY_ID[task_id]
    ws = workspace(tmp, task, package)
    out = agent(ws, task["prompt"], sample=sample).stdout.strip()
    passed, report = verify(ws, task)
    fixture = EXAMPLE / task["workspace"]["fixture"]
    diff: list[str] = []
    for rel, text in snapshot(ws).items():
        if rel.startswith((".claude/", "tests/verify/")):
            continue
        before = (fixture / rel).read_text(encoding="utf-8") if (fixture / rel).is_file() else ""
        diff += difflib.unified_diff(before.splitlines(True), text.splitlines(True), f"a/{rel}", f"b/{rel}")
    counts = [int(n) for n in re.findall(r"(\d+) (?:passed|failed)", report)]
    soft = int(m.group(1)) / max(1, sum(counts)) if (m := re.search(r"(\d+) passed", report)) else 0.0
    return Trajectory(task_id, task["prompt"], out, None, Score(float(passed), soft, report[-3000:]),
                      trace="".join(diff))


@pytest.mark.slow
def test_teacher_and_agent_climb_from_the_starter_skill(tmp_path_factory):
    """A miniature of the training loop (reflect → apply → hard gate on val) with the simulated pair."""
    ids = sorted(BY_ID)
    random.Random(0).shuffle(ids)
    train, val = ids[:8], ids[8:]
    package = load_package(STARTER)
    cfg = SimulatedCfg(seed=0)

    def runs(ids: list[str], pkg: dict[str, str], sample: int) -> list[Trajectory]:
        # every run is a seeded function of (task, package, sample): running them side by side changes nothing
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda t: _run_for_teacher(tmp_path_factory.mktemp("r"), t, pkg, sample), ids))

    def val_score(pkg: dict[str, str]) -> float:
        return sum(t.score.hard for t in runs(val, pkg, 0)) / len(val)  # type: ignore[union-attr]

    def first_failures(pkg: dict[str, str], sample: int) -> list[Trajectory]:
        """The first 4 failing train runs in train order — what reflecting on all 8 runs' failures[:4] reads —
        without running the rest of train once 4 are found (the starter fails nearly every task)."""
        failures: list[Trajectory] = []
        for start in range(0, len(train), 4):
            failures += [t for t in runs(train[start:start + 4], pkg, sample) if t.score and t.score.hard < 1]
            if len(failures) >= 4:
                break
        return failures[:4]

    best = start = val_score(package)
    rejected: list[RejectedEdit] = []
    for step in range(1, 5):
        if best >= 0.5:  # what is asserted below is reached within 4 steps: the steps left change nothing
            break
        failures = first_failures(package, step)
        if not failures:
            break
        reply = answer("reflect", _reflect_prompt(package, failures, rejected), random.Random(step), cfg)
        assert reply is not None
        candidate = dict(package)
        for e in reply["edits"]:
            candidate[e["file"]], _ = apply_edit(candidate.get(e["file"], ""), e["op"], e["target"], e["content"])
        score_ = val_score(candidate)
        if score_ > best:
            package, best = candidate, score_
        else:
            rejected += [RejectedEdit(Edit(op=e["op"], content=e["content"], target=e["target"]), score_ - best,
                                      "not better on val") for e in reply["edits"]]
    assert start <= 0.125 and best >= 0.5


def test_python_is_parsed_one_thread_at_a_time():
    """The simulated agent runs in threads when in-process, and CPython 3.11's AST constructor keeps its recursion
    depth per interpreter: two threads in `ast.parse` at once can fail with "SystemError: AST constructor recursion
    depth mismatch" (it did, in CI). Every parse in skillgit goes through `agent_code.parse_module`, which holds a
    lock while it parses."""
    import ast
    import threading

    from skillgit.world import agent_code

    root = Path(agent_code.__file__).resolve().parents[1]
    direct = [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py"))
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if "ast.parse(" in line and "return ast.parse(source)" not in line]
    assert direct == []
    inside, overlap = [0], []
    real = ast.parse

    def counting(source, *args, **kwargs):
        inside[0] += 1
        overlap.append(inside[0])
        threading.Event().wait(0.002)  # a parse long enough for another thread to start one
        try:
            return real(source, *args, **kwargs)
        finally:
            inside[0] -= 1

    ast.parse = counting
    try:
        threads = [threading.Thread(target=agent_code.parse_module, args=("x = [i for i in range(3)]\n",))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        ast.parse = real
    assert len(overlap) == 8 and max(overlap) == 1
