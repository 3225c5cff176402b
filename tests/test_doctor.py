"""`skillgit doctor` through the real CLI (a subprocess) against the local fake server."""

from __future__ import annotations

import json

import yaml

from skillgit.config import config_from_dict
from skillgit.cli.doctor import check_role
from tests.fake_servers import fake_server_fixture  # noqa: F401 (the fake_server fixture)
from tests.fake_servers import unauthorized

KEY = "sk-doctor-0123456789abcdefghij"


def write_config(root, data: dict) -> None:
    (root / "skillgit.yaml").write_text(yaml.safe_dump(data))


def test_doctor_ok_for_both_roles(make_repo, cli, fake_server):
    root = make_repo()
    write_config(root, {"model": {
        "teacher_backend": "openai", "teacher_model": "local-teacher",
        "teacher": {"base_url": fake_server.openai_base_url},
        "student_backend": "anthropic", "student_model": "claude-haiku-4-5",
        "student": {"base_url": fake_server.anthropic_base_url}}})
    proc = cli("doctor", cwd=root, env={"ANTHROPIC_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "teacher" in out and "student" in out and "local-teacher" in out and "claude-haiku-4-5" in out
    assert out.count("ok (answered 'OK'") == 2
    # exactly one tiny call per role, no retries
    assert [r.api for r in fake_server.requests] == ["chat", "anthropic"]
    assert fake_server.requests[0].json["max_tokens"] == 32
    assert KEY not in out + proc.stderr


def test_doctor_missing_key_fails_with_hint_and_json(make_repo, cli, fake_server):
    root = make_repo()
    write_config(root, {"model": {"teacher_backend": "openai", "teacher_model": "gpt-4o-mini"}})
    proc = cli("doctor", "--json", cwd=root)
    assert proc.returncode == 4, proc.stderr  # ExitCode.BACKEND
    report = json.loads(proc.stdout)
    assert report["ok"] is False
    teacher, student = report["roles"]
    assert teacher["role"] == "teacher" and teacher["status"] == "error"
    assert "OPENAI_API_KEY" in teacher["fix"] and ".env" in teacher["fix"]
    assert teacher["endpoint"] == "https://api.openai.com/v1"
    assert student["backend"] == "simulated" and student["status"] == "ok"
    assert "offline simulation" in student["detail"]
    assert "teacher backend not ready" in proc.stderr
    assert fake_server.requests == []


def test_doctor_table_shows_the_fix(make_repo, cli):
    root = make_repo()
    proc = cli("doctor", "--set", "model.teacher_backend=anthropic", "--set", "model.teacher_model=claude-haiku-4-5",
               cwd=root)
    assert proc.returncode == 4
    assert "ANTHROPIC_API_KEY" in proc.stdout and "error" in proc.stdout
    assert "offline simulation" in proc.stdout  # the student is still the simulated default


def test_check_role_reports_rejected_key_and_unknown_price(fake_server, tmp_path):
    fake_server.script(unauthorized())
    cfg = config_from_dict({"model": {
        "teacher_backend": "openai", "teacher_model": "my-model",
        "teacher": {"base_url": "http://llm.example.invalid/v1"},
        "student_backend": "openai", "student_model": "my-model",
        "student": {"base_url": fake_server.openai_base_url, "api_key_env": "MY_KEY"}}})
    row = check_role(cfg, "student", tmp_path, environ={"MY_KEY": KEY})
    assert row["status"] == "error" and "401" in row["detail"] and "MY_KEY" in row["fix"]
    ok = check_role(cfg, "student", tmp_path, environ={"MY_KEY": KEY})
    assert ok["status"] == "ok" and ok["fix"] == ""  # a local server costs nothing: price known
    remote = check_role(cfg, "teacher", tmp_path, environ={"OPENAI_API_KEY": KEY})
    assert remote["status"] == "error" and remote["endpoint"].startswith("http://llm.example.invalid")
    assert remote["fix"] and "base_url" in remote["fix"]

    # an Azure deployment is priced by its model name; an unknown one is flagged, not counted as free
    azure = config_from_dict({"model": {"teacher_backend": "azure", "teacher_model": "my-finetune",
                                        "teacher": {"azure_endpoint": fake_server.azure_endpoint}}})
    row = check_role(azure, "teacher", tmp_path, environ={"AZURE_OPENAI_API_KEY": KEY})
    assert row["status"] == "ok" and "price unknown" in row["fix"] and "prices.my-finetune" in row["fix"]


def test_check_role_command_student_without_binary(tmp_path):
    cfg = config_from_dict({"model": {"student_backend": "command", "student": {"command": {"preset": "codex"}}}})
    row = check_role(cfg, "student", tmp_path, environ={"PATH": str(tmp_path)})
    assert row["status"] == "error" and "'codex' not found" in row["detail"]
    assert "model.student.command.argv" in row["fix"]
