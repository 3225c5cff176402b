"""`skillgit sleep run` end to end on the offline simulated world — A SIMULATION OF THE PIPELINE.

The simulated student only understands the simulated world's records, so the sessions written here are ones in
which a person asked their agent (Claude Code and Codex session files, in their real on-disk formats) to normalise
such records, sometimes corrected it, and accepted an answer: the accepted answer IS the world's expected output
(`generate_tasks`). Harvest, scrub, mining, the review gate, the splits, the training loop, the gate, git and the
report are all real; only the models are the simulated world.
"""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillgit.config import SimulatedCfg
from skillgit.errors import SkillgitError
from skillgit.sleep import replay as R
from skillgit.sleep import state as S
from skillgit.sleep.approval import command_key
from skillgit.sleep.handoff import HandoffLLM, HandoffPending, pending_prompts, request_from_file
from skillgit.sleep.mine import MinedTask, read_tasks
from skillgit.sleep.night import NightOptions, gather, night_folder, run_night
from skillgit.sleep.settings import SleepSettings, open_sleep_project
from skillgit.store.git import GitRepo
from skillgit.world import default_skill, generate_tasks
from tests.conftest import git
from tests.sleep_reference import checking
from tests.test_sleep_harvest import ClaudeSession


@pytest.fixture(autouse=True)
def _grouping_is_the_pairwise_one(monkeypatch):
    """Every grouping these tests make is also checked against the pairwise algorithm mining used before it
    scaled (tests/sleep_reference.py): same clusters, same mean similarities."""
    mined = importlib.import_module("skillgit.sleep.mine")  # the package exports a function of that name

    monkeypatch.setattr(mined, "cluster", checking(mined.cluster))


DATE = "2026-01-02"
SEED = 0
WORLD = SimulatedCfg(seed=SEED)

CONFIG = """\
# a skillgit project on the offline SIMULATED world (a simulation of the sleep pipeline)
skill: {path: SKILL.md, branch: main}
model:
  teacher_backend: simulated
  student_backend: simulated
  simulated: {seed: %(seed)d, num_rules: 6, noise: 0.05}
train: {num_epochs: 3, batch_size: 16, seed: 0}
gradient: {minibatch_size: 4, analyst_workers: 2, merge_batch_size: 4}
optimizer: {learning_rate: 3, min_learning_rate: 1}
# these nights mine 24-36 tasks, so val holds about 10: too few for the default significance test (a step must
# fix 5 items with none broken; `train` warns), so the nights gate with strict + per_item (better, nothing broken)
evaluation: {gate_metric: hard, gate: strict+per_item}
env: {workers: 4, scorer: {type: exact}}
sleep:
  max_steps: %(steps)d
"""


def natural(item) -> str:
    """What an agent without the house style answers: the record's values as they came."""
    return "Answer: " + " | ".join(part.split(" ", 1)[1] for part in item.input.split(": ", 1)[1].split("; "))


def make_project(root: Path, *, steps: int = 4, extra: str = "") -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "SKILL.md").write_text(default_skill(), encoding="utf-8")
    (root / "skillgit.yaml").write_text(CONFIG % {"seed": SEED, "steps": steps} + extra, encoding="utf-8")
    git(root, "add", "SKILL.md", "skillgit.yaml")
    git(root, "commit", "-q", "-m", "skill")
    return root


class CodexSession:
    """Writes a Codex CLI rollout file in the on-disk shape of tests/fixtures/transcripts/codex (an interactive
    `codex_cli_rs` session: `session_meta`, `event_msg/user_message`, assistant `response_item` messages)."""

    def __init__(self, session_id: str, cwd: Path, *, day: str = "2026-01-01", start_minute: int = 0) -> None:
        self.session_id, self.day, self.tick = session_id, day, start_minute * 60
        self.records = [{"timestamp": self._ts(), "type": "session_meta", "payload": {
            "id": session_id, "timestamp": self._ts(), "cwd": str(cwd), "originator": "codex_cli_rs",
            "cli_version": "0.46.0", "source": "cli", "model_provider": "openai", "git": {"branch": "main"}}}]

    def _ts(self) -> str:
        self.tick += 1
        return f"{self.day}T{11 + self.tick // 3600:02d}:{self.tick // 60 % 60:02d}:{self.tick % 60:02d}.000Z"

    def user(self, text: str) -> CodexSession:
        self.records.append({"timestamp": self._ts(), "type": "event_msg",
                             "payload": {"type": "user_message", "message": text, "images": []}})
        return self

    def say(self, text: str) -> CodexSession:
        self.records.append({"timestamp": self._ts(), "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}})
        return self

    def write(self, home: Path) -> Path:
        y, m, d = self.day.split("-")
        target = home / ".codex" / "sessions" / y / m / d / f"rollout-{self.day}T11-00-00-{self.session_id}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return target


def write_sessions(home: Path, repo: Path, items: list, *, per_session: int = 4, day: str = "2026-01-01",
                   first: int = 0) -> int:
    """Claude Code and (every other one) Codex sessions in which a person has the agent normalise `items`: every
    other request is first answered naturally, corrected, then answered in the house style; the person accepts
    the answer ("thanks"). Returns the number of sessions written."""
    count = 0
    for start in range(0, len(items), per_session):
        name = f"norm-{first + count}"
        session: ClaudeSession | CodexSession = (
            CodexSession(name, repo, day=day, start_minute=count) if count % 2
            else ClaudeSession(name, repo, day=day, start_minute=(count % 50) + 1))
        for k, item in enumerate(items[start:start + per_session]):
            session.user(item.input)
            if (start + k) % 2:
                session.say(natural(item)).user("no, that's not our house style, fix the fields")
            session.say(item.expected).user("thanks")
        session.write(home)
        count += 1
    return count


@pytest.fixture
def night(tmp_path):
    repo = make_project(tmp_path / "repo")
    home = tmp_path / "home"
    items = generate_tasks(WORLD, 36)
    write_sessions(home, repo, items)
    return repo, home, items


def branch_tip(repo: Path, branch: str) -> str:
    return git(repo, "rev-parse", f"refs/heads/{branch}")


# ---------------------------------------------------------------------------------------------- the night
def test_a_night_lands_a_gated_improvement_on_its_branch_and_touches_nothing_else(night):
    repo, home, items = night
    main_before = branch_tip(repo, "main")
    skill_before = (repo / "SKILL.md").read_text()
    sp = open_sleep_project(repo, None, [])
    sp = sp.__class__(sp.project, sp.settings.with_options(home=str(home)), sp.data, sp.overrides)

    record = run_night(sp, NightOptions(DATE))

    assert record.status == "finished" and record.branch == f"sleep/{DATE}" and record.run == f"sleep-{DATE}"
    assert record.harvest.sessions == 9 and record.tasks.approval == "offline"  # 5 Claude Code, 4 Codex
    assert record.tasks.used == 36 and record.tasks.test > 0  # ≥ 10 tasks: a test split too
    assert record.accepted >= 1
    assert record.score("final", "val") > record.score("seed", "val")
    # the skill branch, the checked-out file and the user's status are exactly as before
    assert branch_tip(repo, "main") == main_before
    assert (repo / "SKILL.md").read_text() == skill_before
    assert git(repo, "status", "--porcelain") == ""  # .skillgit/sleep ignores itself
    # the night's branch grew from main by gated commits of the night's run only
    tip = branch_tip(repo, f"sleep/{DATE}")
    assert record.tip == tip and tip != main_before
    assert git(repo, "merge-base", "--is-ancestor", main_before, tip, check=False) == ""
    trailers = git(repo, "log", "--format=%(trailers:key=Skillgit-Run,valueonly)", f"main..sleep/{DATE}").split()
    assert set(trailers) == {f"sleep-{DATE}"}
    # the report, in the working tree and on the sleep ref, without transcript text
    report = (repo / ".skillgit" / "sleep" / f"{DATE}.md").read_text()
    assert "36 (" in report and "accepted" in report and "simulation" in report
    assert items[0].input not in report and items[0].expected not in report
    repo_ = GitRepo.open(repo)
    assert S.read(repo_, S.night_md(DATE)) == report
    saved = S.night(repo_, DATE)
    assert saved is not None and saved.accepted == record.accepted and saved.edits == record.edits
    assert any(e.accepted and e.edits for e in saved.edits)
    # the harvest state is on the ref, not in the home folder: a second night finds nothing new
    assert S.load(repo_).harvest.files
    assert not any(p.name.startswith(".skillgit") for p in home.iterdir())


def test_mined_tasks_carry_the_accepted_answers_and_split_stably(night):
    repo, home, items = night
    sp = open_sleep_project(repo, None, [])
    sp = sp.__class__(sp.project, sp.settings.with_options(home=str(home)), sp.data, sp.overrides)
    g = gather(sp, GitRepo.open(repo), write=True, date=DATE)
    by_input = {t.prompt: t for t in g.pool}
    assert len(g.pool) == 36 and g.reviewed is False
    for item in items:
        assert by_input[item.input].expected == item.expected  # the accepted answer, after any correction
    loaded = read_tasks(g.path)
    assert [t.id for t in loaded.tasks] == [t.id for t in g.pool] and not loaded.reviewed
    assert (g.path.parent / ".gitignore").read_text().strip().endswith("*")

    settings = SleepSettings()
    first = R.choose(g.pool, settings, simulated=True, agentic=False)
    again = R.choose(list(reversed(g.pool)), settings, simulated=True, agentic=False)
    assert first.counts() == again.counts() and first.val == tuple(sorted(again.val, key=lambda t: t.id))
    # a task keeps its split when the pool grows (no test split either way below 10 tasks)
    small = R.choose(g.pool[:8], settings, simulated=True, agentic=False)
    grown = R.choose(g.pool[:9], settings, simulated=True, agentic=False)
    assert {t.id for t in small.val} <= {t.id for t in grown.val} and not grown.test
    assert all(R.share(t.id) < settings.val_share for t in first.val)
    # the second gather finds no new session and adds nothing
    g2 = gather(sp, GitRepo.open(repo), write=True, date=DATE)
    assert g2.harvest.sessions == () and g2.new == () and len(g2.pool) == 36


def test_the_accepted_answer_is_the_last_one_a_person_accepted_and_kept():
    from skillgit.sleep.mine import instance_id, split_units
    from skillgit.sleep.model import Session, ToolCall, Turn

    def units(*turns: tuple[str, str]):
        return split_units(Session("claude", "s", turns=tuple(
            Turn(role, text, tool_calls=(ToolCall("Bash", "git checkout -- a.py", command="git checkout -- a.py"),)
                 if text == "<revert>" else ()) for role, text in turns)))

    corrected = units(("user", "Normalise: code ab-12"), ("assistant", "ab-12"), ("user", "no, uppercase"),
                      ("assistant", "AB-12"), ("user", "thanks"), ("assistant", "You're welcome!"))
    assert corrected[0].accepted_answer == "AB-12" and corrected[0].outcome == "failed"  # corrected first
    taken_back = units(("user", "Normalise: code ab-12"), ("assistant", "AB-12"), ("user", "thanks"),
                       ("user", "no wait, that's wrong"))
    assert taken_back[0].accepted_answer is None
    reverted = units(("user", "Tidy a.py"), ("assistant", "<revert>"), ("assistant", "Done."), ("user", "great"))
    assert reverted[0].accepted_answer is None
    chained = units(("user", "Normalise: date 3/5/2024"), ("assistant", "2024-03-05"),
                    ("user", "thanks! now please normalise this record: code ab-12"), ("assistant", "AB-12"))
    assert [u.accepted_answer for u in chained] == ["2024-03-05", None]
    assert instance_id("Normalise:  code AB-12") == instance_id("normalise: code ab-12") != instance_id("code ab-13")


def test_tasks_the_night_cannot_score_are_left_out_with_their_reason():
    settings = SleepSettings()
    record = generate_tasks(WORLD, 2)
    tasks = [
        MinedTask("t-ok-1", "text", record[0].input, expected=record[0].expected),
        MinedTask("t-ok-2", "text", record[1].input, expected=record[1].expected),
        MinedTask("t-rubric", "text", "How does parse_date handle DST?", verify={"rubric": "…"}),
        MinedTask("t-agentic", "agentic", "Fix the date test", verify={"command": "pytest", "timeout_s": 60}),
        MinedTask("t-real", "text", "Summarise the release notes", expected="Three fixes."),
    ]
    chosen = R.choose(tasks, settings, simulated=True, agentic=False)
    assert chosen.used == 2 and chosen.usable
    assert chosen.excluded == {
        "agentic task: the simulated student only answers text records": 1,
        "not a simulated-world record (the simulated student reads nothing else)": 1,
        "text task without an accepted answer (the simulated judge cannot judge without a reference)": 1}
    real = R.choose(tasks, settings, simulated=False, agentic=False)
    assert real.used == 4 and real.judged == 1  # the rubric task is judged by the teacher
    assert "agentic task: this skillgit's task loader does not read agentic rows yet" in real.excluded
    capped = R.choose(tasks, SleepSettings(max_tasks=2), simulated=False, agentic=False)
    assert capped.used == 2 and any("sleep.max_tasks = 2" in k for k in capped.excluded)
    assert not R.choose(tasks[:1], settings, simulated=True, agentic=False).usable
    rows = chosen.rows("train") + chosen.rows("val")
    assert all(r["metadata"]["world"] == "simulated" and r["expected"] for r in rows)
    # agentic tasks replay once the task loader reads their rows — and only with a command to verify them, one a
    # person approved (tests/test_probe12_commands.py)
    tasks.append(MinedTask("t-agentic-rubric", "agentic", "Tidy up", verify={"rubric": "is it tidy?"}))
    with_loader = R.choose(tasks, settings, simulated=False, agentic=True,
                           approved=frozenset(k for k in map(command_key, tasks) if k))
    assert with_loader.used == 5 and with_loader.excluded == {
        "agentic task without a test command (judging an agent's workspace by rubric needs the agent student to "
        "hand its diff to the judge: not yet)": 1}


def test_split_files_read_back_through_the_task_loader_text_rows_stay_text(tmp_path):
    from skillgit.config import EnvCfg

    items = generate_tasks(WORLD, 12)
    tasks = [MinedTask(f"t{i}", "text", it.input, expected=it.expected, verify={"rubric": "judge it"})
             for i, it in enumerate(items)]
    chosen = R.choose(tasks, SleepSettings(), simulated=True, agentic=False)
    splits = R.load_splits(R.write_splits(tmp_path / "night", chosen), EnvCfg())
    assert splits.counts == chosen.counts() and splits.test  # 12 tasks: a test split too
    loaded = {i.id: i for i in (*splits.train, *splits.val, *splits.test)}
    for task in tasks:
        item = loaded[task.id]
        assert item.input == task.prompt and item.expected == task.expected
        # a row with `verify` is an agentic row to the loader: a text task's rubric travels in its metadata
        assert "verify" not in item.metadata and item.metadata["rubric"] == "judge it"
        assert item.metadata["world"] == "simulated"


def test_a_budget_stops_the_night_and_the_same_command_resumes_it(night):
    repo, home, _ = night
    sp = open_sleep_project(repo, None, [])
    stopped = run_night(sp.__class__(sp.project, sp.settings.with_options(home=str(home), max_calls=5), sp.data,
                                     sp.overrides), NightOptions(DATE))
    assert stopped.status == "stopped" and "budget.max_calls" in stopped.reason
    assert stopped.accepted + stopped.rejected == 0
    folder = night_folder(GitRepo.open(repo), DATE)
    frozen = (folder / "val.jsonl").read_text()
    # the same night again, without the budget: it resumes on the frozen splits and finishes
    resumed = run_night(sp.__class__(sp.project, sp.settings.with_options(home=str(home)), sp.data, sp.overrides),
                        NightOptions(DATE))
    assert resumed.status == "finished" and (folder / "val.jsonl").read_text() == frozen
    assert resumed.harvest.sessions == 9  # what the first run of the night harvested still counts


# ---------------------------------------------------------------------------------------------- handoff
def night_through_handoff(sp, folder: Path, repo: Path, date: str, on_waiting) -> tuple[Any, int]:
    """Run the night with `--handoff folder` until it finishes: after each stop for answers (exit 5, prompts
    pending), `on_waiting(the night's waiting record)` checks it and answers. (the finished record, rounds)"""
    rounds = 0
    while True:
        try:
            return run_night(sp, NightOptions(date, yes=True, handoff=folder)), rounds
        except HandoffPending as exc:
            rounds += 1
            assert exc.code == 5 and exc.pending and rounds < 20
            waiting = S.night(GitRepo.open(repo), date)
            assert waiting is not None and waiting.status == "waiting" and waiting.handoff is not None
            on_waiting(waiting)


def answer_pending(folder: Path, agent) -> list[str]:
    """Answer every pending handoff prompt in `folder` as `agent` (the person's own agent) would; their stages."""
    stages = []
    for prompt in pending_prompts(folder):
        request = request_from_file(prompt.with_name(prompt.name.replace(".prompt.md", ".request.json")))
        stages.append(request.stage)
        prompt.with_name(prompt.name.replace(".prompt.md", ".answer.json")).write_text(agent.complete(request).text)
    return stages


def test_handoff_writes_prompts_stops_and_resumes_from_the_answers(night, tmp_path):
    from skillgit.llm.factory import build_teacher

    repo, home, _ = night
    sp = open_sleep_project(repo, None, [])
    sp = sp.__class__(sp.project, sp.settings.with_options(home=str(home), max_steps=1), sp.data, sp.overrides)
    folder = tmp_path / "handoff"
    # the handoff prompts are meant for an agent: unreviewed tasks are refused without --yes
    with pytest.raises(SkillgitError, match="not reviewed"):
        run_night(sp, NightOptions(DATE, handoff=folder))
    assert not folder.exists()

    agent = build_teacher(sp.config, repo)  # stands in for the person's own agent answering the prompts
    consumed: set[str] = set()

    def answer(waiting) -> None:
        assert waiting.handoff.pending >= 1
        # the answers of earlier rounds were read by now: the journal keeps them, so their files can go, and
        # a prompt that was answered once is never asked again (its file would come back)
        for number in consumed:
            for path in folder.glob(f"{number}.*"):
                path.unlink()
        pending = pending_prompts(folder)
        numbers = {p.name[:4] for p in pending}
        assert numbers and not numbers & consumed
        for prompt in pending:
            text = prompt.read_text()
            answer = prompt.with_name(prompt.name.replace(".prompt.md", ".answer.json"))
            assert "## Answer format (JSON schema)" in text and answer.name in text
            request = request_from_file(prompt.with_name(prompt.name.replace(".prompt.md", ".request.json")))
            answer.write_text(agent.complete(request).text)
        consumed.update(numbers)

    record, rounds = night_through_handoff(sp, folder, repo, DATE, answer)
    assert rounds >= 2  # reflect, then merge/rank: each round asked only what was new
    assert record.status == "finished" and record.handoff is not None and record.handoff.pending == 0
    assert record.usage.cost_usd == 0
    assert record.accepted + record.rejected == 1 and not pending_prompts(folder)


def test_handoff_llm_numbers_prompts_stably(tmp_path):
    from skillgit.llm.base import Message, Request

    llm = HandoffLLM(tmp_path / "h")
    first = Request((Message("system", "s"), Message("user", "<stage>reflect</stage>\nA")), stage="reflect",
                    json_schema={"type": "object"})
    second = Request((Message("system", "s"), Message("user", "<stage>merge</stage>\nB")), stage="merge")
    for request in (first, second, first):
        with pytest.raises(HandoffPending):
            llm.complete(request)
    assert sorted(p.name for p in pending_prompts(tmp_path / "h")) == ["0001.prompt.md", "0002.prompt.md"]
    (tmp_path / "h" / "0002.answer.json").write_text('{"edits": []}')
    assert llm.complete(second).text == '{"edits": []}' and llm.complete(second).usage.total_tokens == 0
    assert json.loads((tmp_path / "h" / "0001.request.json").read_text())["json_schema"] == {"type": "object"}


def test_the_night_branch_is_never_the_skill_branch(night):
    repo, home, _ = night
    sp = open_sleep_project(repo, None, [])
    bad = sp.__class__(sp.project, sp.settings.with_options(home=str(home), branch="main"), sp.data, sp.overrides)
    with pytest.raises(SkillgitError, match="names the skill branch"):
        run_night(bad, NightOptions(DATE))
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", "refs/heads/sleep/" + DATE],
                          capture_output=True).returncode != 0


def test_a_handoff_night_whose_step_ends_an_epoch_asks_the_meta_skill_once(night, tmp_path):
    """Step 1 ends the epoch (batch 64): the handoff stop after the meta-skill answer saved the updated memory, and
    before, the resumed night updated it again from that text — a new question each time it stopped."""
    from skillgit.llm.factory import build_teacher

    repo, home, _ = night
    sp = open_sleep_project(repo, None, ["train.batch_size=64"])
    sp = sp.__class__(sp.project, sp.settings.with_options(home=str(home), max_steps=1), sp.data, sp.overrides)
    folder = tmp_path / "handoff"
    agent = build_teacher(sp.config, repo)
    stages: list[str] = []
    for _ in range(20):
        try:
            record = run_night(sp, NightOptions(DATE, yes=True, handoff=folder))
            break
        except HandoffPending:
            stages += answer_pending(folder, agent)
    assert record.status == "finished", record.reason
    assert stages.count("meta_skill") == 1, stages
