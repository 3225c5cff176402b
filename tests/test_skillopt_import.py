"""`skillgit config import` (issue 27): SkillOpt's own config files (tests/fixtures/skillopt: unmodified copies of
microsoft/SkillOpt's configs, MIT, plus one written here in its format) become a skillgit.yaml that validates and
trains; every SkillOpt key is accounted for — mapped, or listed with why — and no key value is ever written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillgit.config import load_config
from skillgit.errors import ConfigError
from skillgit.skillopt_import import STATUSES, import_skillopt, render
from tests.conftest import run_cli, run_cli_inproc

CONFIGS = Path(__file__).parent / "fixtures" / "skillopt" / "configs"
BASE = CONFIGS / "_base_" / "default.yaml"
SEARCHQA = CONFIGS / "searchqa" / "default.yaml"
SOFT_GATE = CONFIGS / "features" / "soft_gate.yaml"
LOCAL = CONFIGS / "local" / "codex_managed_identity.yaml"
SIM = ["--set", "model.teacher_backend=simulated", "--set", "model.teacher_model=sim-teacher",
       "--set", "model.student_backend=simulated", "--set", "model.student_model=sim-student"]


def skillopt_leaves(path: Path) -> dict[str, Any]:
    """Every section.key of a SkillOpt config with its _base_ chain merged (child wins), read independently."""
    data = yaml.safe_load(path.read_text())
    base = data.pop("_base_", None)
    merged = skillopt_leaves(path.parent / base) if base else {}
    for section, keys in data.items():
        for key, value in keys.items():
            key = {"codex_path": "codex_exec_path"}.get(key, key)  # SkillOpt's legacy alias (fixture LOCAL)
            merged[f"{section}.{key}"] = value
    return merged


def by_key(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k["key"]: k for k in report["keys"]}


@pytest.mark.parametrize("source", [SEARCHQA, SOFT_GATE, LOCAL], ids=lambda p: p.parent.name)
def test_every_skillopt_key_is_mapped_or_listed_with_why(source):
    imp = import_skillopt(source)
    keys = [o.key for o in imp.outcomes]
    assert sorted(keys) == sorted(skillopt_leaves(source))  # each key exactly once, the base's included
    assert {o.status for o in imp.outcomes} <= set(STATUSES)
    for outcome in imp.outcomes:
        if outcome.status in ("mapped", "approximated"):
            assert outcome.targets, outcome
        else:
            assert outcome.reason and not outcome.targets, outcome
    text = render(imp)
    for outcome in imp.by_status("refused", "unused", "approximated"):
        assert f"#   {outcome.key} = " in text and outcome.reason.split(":")[0] in text
    for outcome in imp.by_status("blank", "default"):
        assert outcome.key in text


def test_searchqa_maps_roles_sections_and_refuses_what_skillgit_lacks(tmp_path):
    proc = run_cli_inproc("config", "import", str(SEARCHQA), "--out", "skillgit.yaml", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    cfg = load_config(tmp_path / "skillgit.yaml")  # the written file validates
    assert (cfg.model.teacher_backend, cfg.model.student_backend) == ("azure", "azure")  # azure_openai/openai_chat
    assert (cfg.model.teacher_model, cfg.model.student_model) == ("gpt-5.5", "gpt-5.5")
    assert cfg.model.teacher.reasoning_effort == cfg.model.student.reasoning_effort == "medium"
    assert cfg.model.teacher.api_version == "2024-12-01-preview" and cfg.model.student.max_tokens == 16384
    assert (cfg.train.num_epochs, cfg.train.batch_size, cfg.train.seed) == (4, 40, 42)
    assert (cfg.gradient.minibatch_size, cfg.gradient.merge_batch_size, cfg.optimizer.learning_rate) == (8, 8, 4)
    assert cfg.optimizer.slow_update_samples == 20 and cfg.optimizer.lr_control_mode == "scheduled"
    assert cfg.env.split_dir == "data/searchqa_split" and cfg.env.workers == 24
    assert cfg.skill.path == "skillopt/envs/searchqa/skills/initial.md"
    keys = by_key(report)
    assert keys["model.optimizer"]["targets"] == ["model.teacher_model"]
    assert keys["optimizer.learning_rate"] == {"key": "optimizer.learning_rate", "value": 4, "status": "mapped",
                                               "targets": ["optimizer.learning_rate"], "reason": ""}
    for key, words in {"train.train_size": "env.split_ratio", "env.name": "env.tasks", "env.max_turns": "one turn",
                       "model.minimax_model": "minimax_chat"}.items():
        assert keys[key]["status"] in ("refused", "unused") and words in keys[key]["reason"], keys[key]
    assert keys["model.azure_openai_endpoint"]["status"] == "blank"
    assert keys["train.accumulation"]["status"] == "default"
    assert "train.train_size" in proc.stderr and "refused" in proc.stderr
    assert report["counts"]["mapped"] > 25 and sum(report["counts"].values()) == len(report["keys"])
    # the file says where it came from and what it left behind
    text = (tmp_path / "skillgit.yaml").read_text()
    assert "searchqa/default.yaml" in text and "#   env.max_turns = 1: " in text


def test_soft_gate_weight_is_turned_into_skillgits_hard_weight():
    imp = import_skillopt(SOFT_GATE)
    assert imp.data["evaluation"]["gate_metric"] == "soft"
    # SkillOpt: (1 - w) * hard + w * soft; skillgit's mixed_weight is the weight of hard
    assert imp.data["evaluation"]["mixed_weight"] == 0.5
    local = import_skillopt(LOCAL)
    assert local.data["evaluation"] == {"use_gate": True, "gate_metric": "mixed", "eval_test": True,
                                        "mixed_weight": 0.75}


def test_written_config_keeps_no_key_and_maps_managed_identity_and_codex(tmp_path):
    imp = import_skillopt(LOCAL)
    text = render(imp)
    assert "sk-literal-key" not in text and "sk-literal-key" not in json.dumps(imp.to_dict())
    keys = {o.key: o for o in imp.outcomes}
    assert keys["model.azure_openai_api_key"].status == "refused"
    assert "AZURE_OPENAI_API_KEY" in keys["model.azure_openai_api_key"].reason
    teacher, student = imp.data["model"]["teacher"], imp.data["model"]["student"]
    assert teacher["auth_mode"] == "managed_identity"  # SkillOpt's aad is its ManagedIdentityCredential
    assert teacher["managed_identity_client_id"].startswith("5f1c0b0e")
    assert teacher["azure_endpoint"] == "https://contoso.openai.azure.com/"
    assert imp.data["model"]["student_backend"] == "command" and student["command"]["preset"] == "codex"
    assert student["command"]["sandbox"] == "read-only" and student["command"]["timeout_s"] == 300
    assert keys["model.codex_exec_path"].status == "refused"  # from the legacy alias codex_path
    # a value skillgit's validation refuses is listed with the validation's words, not written
    assert keys["gradient.merge_batch_size"].status == "refused" and ">= 2" in keys["gradient.merge_batch_size"].reason
    assert "merge_batch_size" not in imp.data["gradient"]
    assert keys["env.retrieval_top_k"].status == "refused" and "searchqa" in keys["env.retrieval_top_k"].reason
    assert keys["model.target_azure_openai_api_version"].status == "unused"
    (tmp_path / "skillgit.yaml").write_text(text)
    assert load_config(tmp_path / "skillgit.yaml").model.teacher.auth_mode == "managed_identity"


def test_a_role_backend_without_equivalent_is_an_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError) as info:
        import_skillopt(SEARCHQA, ["model.target_backend=cursor_exec"])
    assert "model.target_backend" in info.value.message and "cursor_exec" in info.value.message
    assert "--cfg-options model.target_backend=" in info.value.hint and "claude_code_exec" in info.value.hint
    proc = run_cli_inproc("config", "import", str(SEARCHQA), "--cfg-options", "model.backend=copilot_chat",
                          cwd=tmp_path)
    assert proc.returncode == 2 and "model.optimizer_backend" in proc.stderr and "hint:" in proc.stderr
    assert not (tmp_path / "skillgit.yaml").exists()


def test_cfg_options_and_backend_names_follow_skillopt():
    imp = import_skillopt(SEARCHQA, ["model.backend=claude", "train.num_epochs=2"])
    assert imp.data["model"]["teacher_backend"] == imp.data["model"]["student_backend"] == "anthropic"
    assert imp.data["train"]["num_epochs"] == 2
    qwen = import_skillopt(SEARCHQA, ["model.backend=qwen_chat", "model.qwen_chat_base_url=http://127.0.0.1:8000/v1"])
    assert qwen.data["model"]["teacher_backend"] == "azure"  # SkillOpt keeps openai_chat as the optimizer
    assert qwen.data["model"]["student_backend"] == "openai"
    assert qwen.data["model"]["student"]["base_url"] == "http://127.0.0.1:8000/v1"


def test_an_existing_file_is_not_overwritten_without_force(tmp_path):
    (tmp_path / "skillgit.yaml").write_text("train: {num_epochs: 9}\n")
    proc = run_cli_inproc("config", "import", str(SEARCHQA), cwd=tmp_path)
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert (tmp_path / "skillgit.yaml").read_text() == "train: {num_epochs: 9}\n"


def test_imported_config_is_accepted_by_train_dry_run_and_an_offline_run(tmp_path):
    project = tmp_path / "demo"
    assert run_cli("demo", "--dir", str(project), "--steps", "1", cwd=tmp_path).returncode == 0
    shutil.copytree(CONFIGS / "_base_", project / "skillopt" / "_base_")
    (project / "skillopt" / "mine.yaml").write_text(
        "_base_: _base_/default.yaml\n"
        "train: {num_epochs: 1, batch_size: 8}\n"
        "gradient: {minibatch_size: 4, analyst_workers: 2, merge_batch_size: 4}\n"
        "env: {name: demo, skill_init: SKILL.md, split_mode: ratio, data_path: tasks.jsonl, workers: 4}\n")
    proc = run_cli("config", "import", "skillopt/mine.yaml", "--out", "skillgit.yaml", "--force", cwd=project)
    assert proc.returncode == 0, proc.stderr
    cfg = load_config(project / "skillgit.yaml")
    assert cfg.model.teacher_backend == "azure" and cfg.env.tasks == "tasks.jsonl" and cfg.skill.path == "SKILL.md"
    dry = run_cli("train", "--dry-run", "--json", cwd=project)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["total_calls"] > 0 and plan["steps"] >= 1
    run = run_cli("train", *SIM, "--set", "train.max_steps=1", "--json", cwd=project)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "finished" and result["steps"] == 1
