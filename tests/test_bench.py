"""The benchmarks run: each script on a tiny setting (`--quick`, seconds) writes well-formed JSON with the keys
bench/README.md documents, and the latency server answers the real openai backend. No timing assertions: the
figures themselves are the scripts' business, not the test suite's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def run_script(name: str, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--quick", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "the results table goes to stdout"
    data = json.loads(out.read_text())
    assert data["benchmark"] == name
    assert {"nproc", "cpu", "python", "git"} <= set(data["machine"])
    return data


def test_simserver_serves_the_simulated_world_to_the_openai_backend():
    sys.path.insert(0, str(BENCH))
    try:
        import simserver
    finally:
        sys.path.remove(str(BENCH))
    from skillgit.config import load_config
    from skillgit.llm import factory
    from skillgit.llm.base import LLMError, Message, Request
    from skillgit.types import Item

    with simserver.SimServer(simserver.Settings(latency=0.0, completion_tokens=7)) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        cfg = load_config(None, [f"model.{role}.base_url={server.base_url}" for role in ("teacher", "student")]
                          + ["model.teacher_backend=openai", "model.student_backend=openai"])
        student = factory.build_student(cfg, None, environ={})
        reply = student.run("# Skill\nWrite dates as YYYY-MM-DD.\n", Item("a", "Normalise this record: date 3/5/2024"))
        assert reply.text and reply.usage.completion_tokens == 7
        teacher = factory.build_teacher(cfg, None, environ={}, max_retries=0)
        answer = teacher.complete(Request((Message("system", "s"), Message("user", "<stage>lr</stage>\n<stats>\n{}\n"
                                           "</stats>\n<bounds min=\"1\" max=\"3\"></bounds>")), stage="lr"))
        assert "num_edits" in json.loads(answer.text)
        assert [c["role"] for c in server.timeline] == ["student", "teacher"]
        assert server.timeline[1]["stage"] == "lr" and all(c["end"] >= c["start"] for c in server.timeline)
        other = load_config(None, [f"model.teacher.base_url={server.base_url}", "model.teacher_backend=openai",
                                   "model.teacher_model=no-such-model"])
        with pytest.raises(LLMError) as exc:
            factory.build_teacher(other, None, environ={}, max_retries=0).complete(
                Request((Message("user", "<stage>lr</stage>"),), stage="lr"))
        assert exc.value.kind == "not_found"


def test_overhead_script(tmp_path):
    data = run_script("overhead", tmp_path)
    step = data["variants"]["configured"]["steps"][0]
    for key in ("wall_s", "critical_path_s", "ratio", "waves", "model_busy_s", "outside_models_s", "outside_share",
                "git_s", "git_calls", "git_requests", "calls_by_stage", "limit_by_counts_s"):
        assert key in step, key
    assert step["calls_by_stage"]["rollout"] == data["config"]["batch_size"]
    assert {"ratio", "outside_share", "targets", "meets_targets"} <= set(data["summary"])


def test_scaling_script(tmp_path):
    data = run_script("scaling", tmp_path)
    assert [r["workers"] for r in data["rows"]] == data["config"]["workers"]
    for row in data["rows"]:
        assert {"wall_s", "critical_path_s", "ratio", "outside_share", "speedup", "calls"} <= set(row)
    assert data["same_calls_everywhere"] is True


@pytest.mark.slow
def test_calls_script(tmp_path):
    data = run_script("calls", tmp_path)
    assert any(p["phase"].startswith("step ") for p in data["phases"])
    assert {"rollout", "gate", "reflect"} <= set(data["per_step_mean_by_stage"])
    assert {"hits", "calls"} <= set(data["score_cache_saved"])
    assert isinstance(data["call_cache_saved"], dict)
    assert data["kills"] and all(k["killed"] for k in data["kills"])
    assert data["repeated_calls_after_resume"] == 0
    assert all(k["same_calls_as_uninterrupted"] and k["same_end_state"] for k in data["kills"])


@pytest.mark.slow
def test_scale_script(tmp_path):
    data = run_script("scale", tmp_path)
    assert data["decided"] >= data["config"]["steps"]
    assert len(data["bookkeeping"]) == 3
    assert {"writes_ms", "reads_ms", "git_calls", "git_requests", "step_ms"} <= set(data["bookkeeping"][0])
    assert data["log_s"] > 0 and data["log_lines"] >= data["decided"]
    assert {"bytes", "disk", "files"} <= set(data["git_dir"]["after_run"])
    assert data["refs"]["after_gc"]["refs"] <= data["refs"]["before_gc"]["refs"]
    assert data["status_s"] > 0 and data["rss"]["last_mb"] > 0 and "growth_kb_per_step" in data["rss"]
    assert data["first_log_after_run_s"] > 0 and data["first_status_after_run_s"] > 0
    assert data["log_miss_median_s"] > 0 and data["status_miss_median_s"] > 0
    assert data["cpu_median_s"]["log"] > 0 and data["cpu_median_s"]["help"] > 0
    # the project's top folder and its repository from one `git rev-parse` (it was two)
    for command in ("log", "status"):
        assert sum(c.startswith("rev-parse") for c in data["git_commands"][command]) == 1, data["git_commands"]


@pytest.mark.slow
def test_scale_counts_instructions_with_valgrind(tmp_path):
    """The load-independent figure of bench/scale.py: valgrind's count is read, and a bigger program executes more
    instructions."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    sys.path.insert(0, str(BENCH))
    try:
        import scale
    finally:
        sys.path.remove(str(BENCH))
    # (-S: no site, so each count is ~2 s under valgrind, not ~4)
    bare = scale.instructions(tmp_path, "-S", "-c", "pass")
    more = scale.instructions(tmp_path, "-S", "-c", "import json, email.parser")
    assert bare and more and 1e6 < bare < more and more > 1.05 * bare


@pytest.mark.slow
def test_mcp_start_script(tmp_path):
    pytest.importorskip("mcp")
    data = run_script("mcp_start", tmp_path)
    assert data["server_name"] == "skillgit" and data["rounds"] >= 2
    for kind in ("wall", "cpu"):
        figures = data[kind]
        assert figures["server_s"] > 0 and figures["import_mcp_s"] > 0
        lo, hi = figures["ratio_ci95"]
        assert lo <= figures["ratio"] <= hi
    assert data["heavy_at_answer"] == [] and data["added_to_sdk"] < data["modules_at_answer"]


@pytest.mark.slow
def test_sleep_scale_script(tmp_path):
    data = run_script("sleep_scale", tmp_path)
    rows = {(r["algo"], r["requests"]): r for r in data["rows"]}
    assert {algo for algo, _ in rows} == {"cluster", "miner", "reference"}
    for n in data["sizes"]:
        new = rows[("cluster", n)]
        assert new["agree"] is True and new["exact"] is True  # the validity check: same clusters as before
        assert {"cpu_s", "wall_s", "peak_mb", "grew_mb", "cpu_ratio", "mem_ratio"} <= set(new)
        assert rows[("miner", n)]["units"] == new["units"]
    harvest = data["harvest"]
    assert harvest["kept"] == harvest["units"] and harvest["incremental_read"] == 1  # only the new file read again
    assert {"cpu_s", "incremental_cpu_s", "peak_mb", "mb"} <= set(harvest)


@pytest.mark.slow
def test_ablations_script(tmp_path):
    data = run_script("ablations", tmp_path)
    text = data["worlds"]["text"]
    assert {"full", "no gate"} <= set(text["variants"])
    for v in text["variants"].values():
        assert len(v["runs"]) == text["seeds"]
        for key in ("test_final", "test_gain", "test_gain_ci", "accepted", "rejected", "losers",
                    "accepted_regressions", "repeated_applied", "repeated_proposed", "calls"):
            assert key in v, key
        ci = v["test_gain_ci"]
        assert ci["lo"] <= ci["mean"] <= ci["hi"] and ci["n"] == text["seeds"]
    assert "vs_full_ci" in text["variants"]["no gate"]


@pytest.mark.slow
def test_proposals_script(tmp_path):
    data = run_script("proposals", tmp_path)
    assert [r["proposals"] for r in data["rows"]] == data["config"]["proposals"]
    for row in data["rows"]:
        for key in ("val_seed", "val_final", "val_gain_ci", "calls", "waves", "waves_per_step", "gain_per_1k_calls",
                    "gain_per_10_waves", "waves_to_p1_final", "reached_p1_final", "overlapping_waves"):
            assert key in row, key
        assert row["waves"] <= row["calls"]
    first = data["runs"][str(data["config"]["proposals"][0])][0]
    assert first["decisions"] and first["waves"] >= first["decisions"][-1]["waves"] > 0
    assert data["rows"][0]["reached_p1_final"] == data["config"]["seeds"]  # P = 1 reaches its own final score


def test_local_llm_script_is_opt_in():
    # without --run it only prints its plan: no install, no download, no server (the suite never trains on it)
    proc = subprocess.run([sys.executable, str(BENCH / "local_llm.py")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "nothing done" in proc.stdout + proc.stderr and "SmolLM2" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_workspaces_script(tmp_path):
    data = run_script("workspaces", tmp_path)
    assert data["valid"] is True and all(data["checks"].values())  # same verdicts and diffs in every mode, etc.
    assert [r["mode"] for r in data["summary"]] == data["config"]["modes"] == ["worktree", "pooled", "pooled+paths"]
    for row in data["summary"]:
        for key in ("first_s", "wall_s", "open_s", "close_s", "diff_s", "agent_verify_s", "share", "ratio"):
            assert key in row, key
        assert row["share"]["lo"] <= row["share"]["mean"] <= row["share"]["hi"]
    assert data["repository"]["files"] >= data["config"]["files"] and data["slots"]["pooled"] == 1
    assert {"cow_copy_mb_s", "copy2_mb_s", "reflink"} <= set(data["cow"])


@pytest.mark.slow
def test_proposers_script(tmp_path):
    data = run_script("proposers", tmp_path)
    assert [r["arm"] for r in data["rows"]] == ["reflect", "agent", "both"]
    assert set(data["checks"]) == {"every_run_stopped_at_the_call_budget", "seeds_distinct", "waves_clean",
                                   "budgets_spent_equal_up_to_the_calls_in_flight", "same_seed_skill_score_per_seed"}
    assert data["valid"] is all(data["checks"].values())
    assert data["checks"]["every_run_stopped_at_the_call_budget"]  # the budget, not the step count, ended each run
    for row in data["rows"]:
        for key in ("accepted_edits", "accepted_edits_ci", "val_gain_ci", "test_gain_ci", "calls", "waves"):
            assert key in row, key
    runs = {r["arm"]: r for r in data["runs"]}
    assert set(runs["both"]["proposers"]) == {"reflect", "agent"} and set(runs["agent"]["proposers"]) == {"agent"}
    # each arm spent its budget; whether the overshoot stayed within the calls in flight is the bench's own
    # validity check (a loaded machine can break it: the bench must then say so, not the test fail)
    within = all(r["calls"] <= r["budget"] + r["max_in_flight"] for r in data["runs"])
    assert data["checks"]["budgets_spent_equal_up_to_the_calls_in_flight"] is within
    for run in data["runs"]:
        assert run["budget"] <= run["calls"]
        assert run["test_seed"] is not None and 0 < run["waves"] <= run["calls"]
    assert "load" in data and "valid" in data


def test_doctor_finds_a_teacher_and_student_behind_simserver_ready(make_repo, cli_inproc):
    """`skillgit doctor` against `bench/simserver.py`: its teacher probe (a JSON schema, no skillgit stage) was
    answered 400 ("does not start with a known <stage>NAME</stage> line") in every json_mode that sends a schema;
    a request naming a stage the simulated teacher does not know is still refused."""
    sys.path.insert(0, str(BENCH))
    try:
        import simserver
    finally:
        sys.path.remove(str(BENCH))
    from skillgit.llm.base import LLMError, Message, Request

    root = make_repo()
    with simserver.SimServer(simserver.Settings(latency=0.0)) as server:
        common = ["--set", "model.teacher_backend=openai", "--set", "model.student_backend=openai",
                  "--set", f"model.teacher.base_url={server.base_url}",
                  "--set", f"model.student.base_url={server.base_url}"]
        for mode in ("auto", "json_schema", "json_object"):
            proc = cli_inproc("doctor", "--json", *common, "--set", f"model.teacher.json_mode={mode}", cwd=root,
                              env={"OPENAI_API_KEY": "sk-simserver-not-a-key"})
            assert proc.returncode == 0, (mode, proc.stdout, proc.stderr)
            teacher, student = json.loads(proc.stdout)["roles"]
            assert teacher["status"] == "ok" and teacher["detail"].startswith("JSON via "), (mode, teacher)
            assert student["status"] == "ok", (mode, student)
        assert {c["role"] for c in server.timeline} == {"teacher", "student"}

        from skillgit.config import load_config
        from skillgit.llm import factory

        cfg = load_config(None, [f"model.teacher.base_url={server.base_url}", "model.teacher_backend=openai"])
        with pytest.raises(LLMError) as exc:
            factory.build_teacher(cfg, None, environ={}, max_retries=0).complete(
                Request((Message("user", "<stage>no_such_stage</stage>\nx"),), stage="x"))
        assert exc.value.kind == "bad_request"
