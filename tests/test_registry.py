"""The backend registry: one list of backend names, read by config validation, the factory and its errors;
backend modules (and the simulated world) imported only when asked for."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from skillgit.config import Config, ModelCfg, config_from_dict
from skillgit.errors import ConfigError
from skillgit.llm import factory, registry


def test_names_per_role_come_from_one_table():
    assert registry.names_for("teacher") == ("simulated", "openai", "azure", "anthropic", "agent",
                                             "handoff")  # issue 24
    assert registry.names_for("student") == ("simulated", "openai", "azure", "anthropic", "command", "agent")
    assert set(registry.names()) == set(registry.names_for("student")) | {"handoff"}
    with pytest.raises(ValueError):
        registry.names_for("critic")


@pytest.mark.parametrize("name", registry.names())
def test_every_entry_loads_a_backend_that_agrees_with_the_table(name):
    backend = registry.get(name)
    assert backend.name == name and backend.summary
    assert set(backend.roles) == {role for role in registry.ROLES if name in registry.names_for(role)}
    assert backend.agent == (name in ("command", "agent"))  # only the agents return a Student directly
    assert registry.get(name) is backend  # loaded once
    assert backend.to_dict()["roles"] == sorted(backend.roles)


def test_config_validation_uses_the_registry_lists():
    with pytest.raises(ConfigError) as info:
        config_from_dict({"model": {"teacher_backend": "command"}})
    assert "command" in info.value.message
    assert all(name in info.value.message for name in registry.names_for("teacher"))
    with pytest.raises(ConfigError) as info:
        config_from_dict({"model": {"student_backend": "antropic"}})
    assert "did you mean 'anthropic'" in info.value.hint
    assert config_from_dict({"model": {"student_backend": "command", "student": {"command": {"preset": "codex"}}}})


def test_factory_errors_name_the_allowed_backends():
    # built directly: config loading rejects these names too, the factory must not rely on that
    cfg = Config(model=ModelCfg(teacher_backend="command"))
    with pytest.raises(ConfigError) as info:
        factory.build_teacher(cfg, None, environ={})
    assert info.value.message == "model.teacher_backend: 'command' cannot be used for the teacher"
    assert info.value.hint == "allowed for the teacher: " + ", ".join(registry.names_for("teacher"))
    with pytest.raises(ConfigError, match="unknown backend 'mock'") as info:
        factory.build_student(Config(model=ModelCfg(student_backend="mock")), None, environ={})
    assert info.value.hint.endswith(", ".join(registry.names_for("student")))


def test_describe_goes_through_each_backend():
    cfg = config_from_dict({"model": {
        "teacher_backend": "anthropic", "teacher_model": "claude-haiku-4-5",
        "student_backend": "command", "student": {"command": {"preset": "generic", "argv": ["my-agent", "{prompt}"]}}}})
    assert factory.describe(cfg, "teacher", None, environ={"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}) == \
        {"backend": "anthropic", "model": "claude-haiku-4-5", "endpoint": "http://127.0.0.1:1"}
    assert factory.describe(cfg, "student", None, environ={})["endpoint"] == "my-agent {prompt}"
    sim = config_from_dict({})
    assert factory.describe(sim, "teacher", None, environ={})["endpoint"] == "offline simulation"
    azure = config_from_dict({"model": {"teacher_backend": "azure", "teacher_model": "dep"}})
    assert factory.describe(azure, "teacher", None, environ={})["endpoint"] == "(no endpoint)"


def test_the_simulated_world_is_built_from_its_own_module():
    cfg = config_from_dict({})
    teacher = factory.build_teacher(cfg, None, environ={})
    student = factory.build_student(cfg, None, environ={})
    assert type(teacher.inner).__module__ == "skillgit.world.teacher"
    assert student.id.startswith("chat:simulated:sim-student")
    assert registry.get("simulated").build.__module__ == "skillgit.world.backend"


def test_importing_config_and_factory_imports_no_sdk_and_no_world():
    code = ("import json, sys; import skillgit.config, skillgit.llm.factory, skillgit.llm.registry, "
            "skillgit.llm.metering; print(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(proc.stdout)
    assert not [m for m in loaded if m.split(".")[0] in ("openai", "anthropic")]
    assert not [m for m in loaded if m.startswith("skillgit.world")]
    assert "skillgit.llm.openai_backend" not in loaded and "skillgit.llm.command" not in loaded
