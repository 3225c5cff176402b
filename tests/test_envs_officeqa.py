"""OfficeQA (issue 26): the published CSV and transformed-text corpus read from the shipped sample, the tool runtime
(search, read, list, answer) played turn by turn, the benchmark's answer matching (reward.py rules) with
hand-checked values, a transcript the teacher reads shortened by the agent-trace rules, and a 1-step `skillgit
train` through the real CLI and the real openai SDK against a scripted student on 127.0.0.1."""

from __future__ import annotations

import json
import re

import pytest

from skillgit import envs
from skillgit.agents.trace import RESULT_CHARS
from skillgit.config import SimulatedCfg
from skillgit.envs.officeqa import match
from skillgit.errors import ConfigError
from skillgit.llm.base import Reply
from skillgit.resources import example_dir
from skillgit.types import Item, Usage
from skillgit.world import SimulatedTeacher
from tests.conftest import git, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler, request_messages
from tests.test_envs import point_at

SAMPLE = example_dir("envs") / "officeqa"

# What a scripted researcher does for each question (a part of it): its actions in order; after the last one it
# keeps searching (so UID0005's episode runs out of turns without an answer).
PLANS = {
    "in the calendar year 1940?": ["search national defense expenditures 1940", "read treasury_bulletin_1941_01 2",
                            "answer 2602 million"],
    "the highest?": ["search national defense 1953 month", "read treasury_bulletin_1954_02.txt 1",
                     "Action: answer March 1953"],
    "total sum of expenditures": ["search national defense 1953", "read treasury_bulletin_1954_02 1",
                                  "answer <FINAL_ANSWER>44,463</FINAL_ANSWER>"],
    "2-year Treasury notes": ["list", "search tenders 2-year notes July 1984", "read treasury_bulletin_1982_08 2",
                              "answer [10102000000, 4.7]"],
    "exceed those": ["search defense", "read treasury_bulletin_1941_01 9"],
}
EXPECTED = {"UID0001": (1.0, 1.0), "UID0002": (0.0, 0.0), "UID0003": (1.0, 1.0), "UID0004": (0.0, 0.5),
            "UID0005": (0.0, 0.0)}


def scripted_action(prompt: str) -> str:
    plan = next((steps for key, steps in PLANS.items() if key in prompt.split("\n> ")[0]), [])
    done = len(re.findall(r"^> ", prompt, re.M))
    return plan[done] if done < len(plan) else "search defense"


class Researcher:
    id = "scripted-researcher"

    def __init__(self):
        self.prompts: list[str] = []

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        self.prompts.append(item.input)
        return Reply(scripted_action(item.input), Usage(calls=1, prompt_tokens=10, completion_tokens=3))


def items(options: dict | None = None) -> tuple[envs.Env, dict[str, Item]]:
    env = envs.get("officeqa", options or {"max_turns": 6})
    return env, {i.id: i for i in env.load(SAMPLE / "officeqa.csv")}


def test_the_published_csv_and_the_transformed_corpus_are_read():
    env, loaded = items()
    assert list(loaded) == ["UID0001", "UID0002", "UID0003", "UID0004", "UID0005"]
    assert loaded["UID0004"].expected == "[10102000000, 4.73]" and loaded["UID0003"].metadata["difficulty"] == "hard"
    corpus = env.corpus(loaded["UID0001"])
    assert {doc: len(pages) for doc, pages in corpus.pages.items()} == {
        "treasury_bulletin_1941_01": 3, "treasury_bulletin_1954_02": 1, "treasury_bulletin_1982_08": 3}
    assert corpus.pages["treasury_bulletin_1941_01"][1].startswith("## Summary of fiscal operations")
    assert [(doc, page) for doc, page, _ in corpus.search("national defense 1940")][:2] == [
        ("treasury_bulletin_1941_01", 2), ("treasury_bulletin_1954_02", 1)]


def test_a_missing_corpus_names_where_it_looked(tmp_path):
    (tmp_path / "officeqa.csv").write_text("uid,question,answer\nU1,q,1\n")
    with pytest.raises(ConfigError, match="no corpus folder next to the questions"):
        envs.get("officeqa").load(tmp_path / "officeqa.csv")
    with pytest.raises(ConfigError, match="env.options.corpus: not a folder"):
        envs.get("officeqa", {"corpus": "nowhere"}).load(tmp_path / "officeqa.csv")


def test_answers_are_matched_by_the_benchmarks_rules():
    assert match("2,602", "2602 million") == 1.0  # commas and unit words aside
    assert match("36080 million", "36,080") == 1.0
    assert match("April 1953", "March 1953") == 0.0  # the truth's words must be in the answer
    assert match("April 1953", "april 1953") == 1.0
    assert match("[10102000000, 4.73]", "[10102000000, 4.7]") == 0.5  # tolerance 0: one of two values
    assert match("[10102000000, 4.73]", "[10102000000, 4.7]", tolerance=0.05) == 1.0
    assert match("44,463", "In 1953 the total was 44,463.") == 1.0  # a year in the answer is not the value
    assert match("[0.096, \u2212184.143]", "[0.096, -184.143]") == 1.0  # unicode minus
    assert match("Federal Old-Age (OASI) Trust Fund", "federal old-age trust fund") == 1.0
    assert match("0", "0.0") == 1.0 and match("12", "") == 0.0


def test_an_episode_uses_the_tools_and_the_teacher_reads_the_whole_transcript():
    env, loaded = items()
    player = Researcher()
    won = env.run(player, "SKILL", loaded["UID0001"])
    assert won.score is not None and (won.score.hard, won.score.soft) == (1.0, 1.0)
    assert won.usage.calls == 3 and len(player.prompts) == 3
    assert player.prompts[0].startswith("Question: What were the total expenditures") and "`search QUERY`" in \
        player.prompts[0]
    assert "> search national defense expenditures 1940\n[treasury_bulletin_1941_01 page 2]" in player.prompts[1]
    trace = won.trace.splitlines()
    assert "→ action: read treasury_bulletin_1941_01 2" in trace
    assert any(line.startswith("← [treasury_bulletin_1941_01 page 2 of 3]") for line in trace)
    assert all(len(line) < RESULT_CHARS + 40 for line in trace)  # the page is cut as an agent's tool result is
    assert trace[-2:] == ["← Answer recorded: 2602 million", "· episode ended after 3 actions; reward 1"]
    assert "2,602" not in won.score.feedback or "2602 million" in won.score.feedback

    half = env.run(Researcher(), "SKILL", loaded["UID0004"])
    assert half.score is not None and (half.score.hard, half.score.soft) == (0.0, 0.5)
    assert half.score.feedback == ("the answer '[10102000000, 4.7]' does not match; 50% of the values in the expected "
                                   "answer found (after 4 actions)")
    assert "4.73" not in half.score.feedback
    lost = env.run(Researcher(), "SKILL", loaded["UID0005"])
    assert lost.score is not None and lost.score.feedback == \
        "no answer after 6 actions (the task needs `answer TEXT` to finish)"
    assert "treasury_bulletin_1941_01 has pages 1 to 3." in lost.trace
    assert "41,861" not in lost.trace and "41861" not in lost.trace


def test_tolerance_is_an_option_checked_like_any_config_key():
    default = envs.get("officeqa")  # 0: the published evaluation's (reward.py's score_answer, the AgentBeats judge)
    assert default.tolerance == 0.0 and default.options_default["tolerance"] == 0.0
    env, loaded = items({"max_turns": 6, "tolerance": 0.05})
    assert env.run(Researcher(), "SKILL", loaded["UID0004"]).score.hard == 1.0
    with pytest.raises(ConfigError, match="env.options.tolerance"):
        envs.get("officeqa", {"tolerance": "5%"}).load(SAMPLE / "officeqa.csv")


def test_one_training_step_on_the_sample_through_the_cli(tmp_path):
    folder, key = tmp_path / "proj", {"OPENAI_API_KEY": "sk-test-envs"}
    proc = run_cli_inproc("init", str(folder), "--env", "officeqa", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    teacher = llm_handler(SimulatedTeacher(SimulatedCfg(seed=1)))

    def handle(body: dict) -> str:
        if "teacher" in str(body.get("model")):
            return teacher(body)
        return scripted_action([text for role, text in request_messages(body) if role == "user"][-1])

    with FakeLLMServer(handle) as server:
        point_at(folder, server)
        git(folder, "add", "-A")
        git(folder, "commit", "-qm", "train on officeqa")
        trained = run_cli_inproc("train", "--set", "train.max_steps=1", "--set", "env.options.max_turns=6", "--json",
                                 cwd=folder, env=key)
        assert trained.returncode == 0, trained.stderr[-3000:]
        scored, members = {}, {}
        for split in ("train", "val", "test"):
            proc = run_cli_inproc("eval", "--split", split, "--json", "--set", "env.options.max_turns=6", cwd=folder,
                                  env=key)
            assert proc.returncode == 0, proc.stderr[-2000:]
            assert json.loads(proc.stdout)["env_metric"] == envs.get("officeqa").metric
            scored.update({row["id"]: (row["hard"], row["soft"]) for row in json.loads(proc.stdout)["items"]})
            members[split] = [row["id"] for row in json.loads(proc.stdout)["items"]]
        table = run_cli_inproc("eval", "--env", "--json", "--set", "env.options.max_turns=6", cwd=folder, env=key)
        printed = run_cli_inproc("eval", "--env", "--set", "env.options.max_turns=6", cwd=folder, env=key)
        read = "\n".join(json.dumps(r.json, ensure_ascii=False) for r in server.requests
                         if "teacher" in str(r.json.get("model")))
    assert json.loads(trained.stdout)["steps"] == 1
    assert scored == {item: (hard, pytest.approx(soft)) for item, (hard, soft) in EXPECTED.items()}
    assert "→ action: search" in read and re.search(r"episode \w+ after \d+ action", read)  # whole episodes

    # `eval --env`: the paper's metric per split, hand-checked against the items each split holds
    assert table.returncode == 0, table.stderr[-2000:]
    paper = json.loads(table.stdout)
    assert paper["env"] == "officeqa" and paper["env_metric"] == envs.get("officeqa").metric
    for split, ids in members.items():
        row = paper["splits"][split]
        assert row["n"] == len(ids) and row["errors"] == 0
        assert row["hard"] == pytest.approx(sum(EXPECTED[i][0] for i in ids) / len(ids), abs=1e-4)
        assert row["soft"] == pytest.approx(sum(EXPECTED[i][1] for i in ids) / len(ids), abs=1e-4)
        assert row["interval"][0] <= row["hard"] <= row["interval"][1]
    assert printed.returncode == 0 and "officeqa — accuracy: the answer's numbers match" in " ".join(
        printed.stdout.split())
    assert all(split in printed.stdout for split in ("train", "val", "test"))

    # the PR body and the HTML report name the environment's metric
    git(folder, "branch", "review/officeqa", "main")  # a head that is not the base (a run on main has no PR of its own)
    body = run_cli_inproc("pr", "--head", "review/officeqa", cwd=folder)
    assert body.returncode == 0, body.stderr[-2000:]
    assert f"Scored by the environment `officeqa`: {envs.get('officeqa').metric}." in body.stdout
    report = run_cli_inproc("report", "-o", str(tmp_path / "report.html"), cwd=folder)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "environment officeqa: accuracy: the answer&#x27;s numbers match" in (tmp_path / "report.html").read_text()
