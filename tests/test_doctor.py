"""`skillgit doctor` through the real CLI (a subprocess) against the local fake server."""

from __future__ import annotations

import json

import yaml

from skillgit.cli.doctor import check_role
from skillgit.config import config_from_dict
from tests.fake_servers import (
    Behaviour,
    FakeLLMServer,
    fake_server_fixture,  # noqa: F401 (the fake_server fixture)
    unauthorized,
)

KEY = "sk-doctor-0123456789abcdefghij"


def json_ok(body: dict) -> str:
    """A model that follows the JSON instruction."""
    return '{"status": "ok"}'


def write_config(root, data: dict) -> None:
    (root / "skillgit.yaml").write_text(yaml.safe_dump(data))


def test_doctor_ok_for_both_roles(make_repo, cli, fake_server):
    fake_server.handler = json_ok
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
    assert "ok (JSON via json_schema" in out and "ok (answered" in out
    # exactly one tiny call per role, no retries: a structured one for the teacher, a plain one for the student
    assert [r.api for r in fake_server.requests] == ["chat", "anthropic"]
    chat, messages = (r.json for r in fake_server.requests)
    assert chat["max_tokens"] == 256 and chat["response_format"]["type"] == "json_schema"
    assert "tool_choice" not in messages and "tools" not in messages and messages["max_tokens"] == 256
    assert KEY not in out + proc.stderr


def test_a_plain_text_student_is_ok(fake_server, tmp_path):
    """Students are never asked for JSON (issue 23 item 16): a model that only ever answers "OK" is a fine
    student, while as a teacher it is not."""
    cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "tiny",
                                      "student": {"base_url": fake_server.openai_base_url},
                                      "teacher_backend": "openai", "teacher_model": "tiny",
                                      "teacher": {"base_url": fake_server.openai_base_url}}})
    row = check_role(cfg, "student", tmp_path, environ={})
    assert row["status"] == "ok" and row["detail"].startswith("answered 'OK'") and "json_mode" not in row
    assert "response_format" not in fake_server.requests[-1].json
    assert check_role(cfg, "teacher", tmp_path, environ={})["status"] == "error"  # the teacher still needs JSON


def test_doctor_missing_key_fails_with_hint_and_json(make_repo, cli_inproc, fake_server):
    root = make_repo()
    write_config(root, {"model": {"teacher_backend": "openai", "teacher_model": "gpt-4o-mini"}})
    proc = cli_inproc("doctor", "--json", cwd=root)
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


def test_doctor_table_shows_the_fix(make_repo, cli_inproc):
    root = make_repo()
    proc = cli_inproc("doctor", "--set", "model.teacher_backend=anthropic",
                      "--set", "model.teacher_model=claude-haiku-4-5", cwd=root)
    assert proc.returncode == 4
    assert "ANTHROPIC_API_KEY" in proc.stdout and "error" in proc.stdout
    assert "offline simulation" in proc.stdout  # the student is still the simulated default


def test_check_role_reports_rejected_key_and_unknown_price(fake_server, tmp_path):
    fake_server.handler = json_ok
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


def test_a_server_that_cannot_give_json_is_not_ok(fake_server, tmp_path):
    # the default fake model answers "OK" whatever it is asked: reachable, but useless to the teacher
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "tiny",
                                      "teacher": {"base_url": fake_server.openai_base_url}}})
    row = check_role(cfg, "teacher", tmp_path, environ={})
    assert row["status"] == "error" and row["json_mode"] == "json_schema"
    assert "not with JSON via json_schema" in row["detail"] and "'OK'" in row["detail"]
    assert "json_mode" in row["fix"]
    assert len(fake_server.requests) == 1  # one call: doctor does not spend a repair round

    prompt_only = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "tiny",
                                              "teacher": {"base_url": fake_server.openai_base_url,
                                                          "json_mode": "prompt"}}})
    row = check_role(prompt_only, "teacher", tmp_path, environ={})
    assert row["status"] == "error" and "instruction-following model" in row["fix"]


def test_doctor_reports_the_json_mode_the_server_accepted(make_repo, cli_inproc):
    # llama.cpp-like: json_schema is refused with a 500 naming it; the schema-in-json_object form works
    with FakeLLMServer(json_ok, reject_formats={"json_schema": 500}) as server:
        root = make_repo()
        write_config(root, {"model": {"teacher_backend": "openai", "teacher_model": "local",
                                      "teacher": {"base_url": server.openai_base_url}}})
        proc = cli_inproc("doctor", "--json", cwd=root)
        kinds = [r.format_kind for r in server.requests]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    teacher = json.loads(proc.stdout)["roles"][0]
    assert teacher["status"] == "ok" and teacher["json_mode"] == "json_object_schema"
    assert teacher["detail"].startswith("JSON via json_object_schema")
    assert kinds == ["json_schema", "json_object+schema"]


def test_doctor_explains_a_reply_cut_by_the_token_limit(fake_server, tmp_path):
    # what a reasoning model returns when its budget ran out: no text, finish_reason "length"
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "tiny",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": ""}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 256, "total_tokens": 276}}
    fake_server.script(Behaviour(raw=json.dumps(body).encode(), headers={"content-type": "application/json"}))
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "tiny",
                                      "teacher": {"base_url": fake_server.openai_base_url}}})
    row = check_role(cfg, "teacher", tmp_path, environ={})
    assert row["status"] == "error" and "empty reply" in row["detail"] and "finish_reason=length" in row["detail"]
    assert "256-token limit" in row["fix"] and "reasoning" in row["fix"]
