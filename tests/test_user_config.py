"""The user config (`~/.config/skillgit/config.yaml`, `$XDG_CONFIG_HOME`) under the project's, and `-c key=value`
as git users expect it (issue 23, item 19): merged with the project winning, shown with where each key came from,
errors naming the file and the key; `-c FILE` still works, with a deprecation hint; `--config FILE` is the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgit import config_layers
from skillgit.cli import config_shorthand
from skillgit.errors import ConfigError
from skillgit.project import open_project
from tests.conftest import run_cli, run_cli_inproc

USER = """\
model:
  teacher_model: gpt-4o
prices:
  gpt-4o: {prompt: 2.5, completion: 10}
budget:
  max_cost_usd: 5
  max_calls: 400
"""


def user_config(home_config: Path, text: str = USER) -> Path:
    path = home_config / "skillgit" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def xdg(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def test_user_config_path_honours_xdg_home_and_the_override(tmp_path):
    assert config_layers.user_config_path({"HOME": "/h"}) == Path("/h/.config/skillgit/config.yaml")
    assert config_layers.user_config_path({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path("/x/skillgit/config.yaml")
    # a relative XDG_CONFIG_HOME is invalid by the spec: ignored
    assert config_layers.user_config_path({"HOME": "/h", "XDG_CONFIG_HOME": "rel"}) == \
        Path("/h/.config/skillgit/config.yaml")
    assert config_layers.user_config_path({"SKILLGIT_USER_CONFIG": str(tmp_path / "u.yaml")}) == tmp_path / "u.yaml"
    assert config_layers.user_config_path({"SKILLGIT_USER_CONFIG": ""}) is None


def test_user_config_is_merged_under_the_project_and_the_project_wins(make_repo, xdg):
    user = user_config(xdg)
    root = make_repo({"SKILL.md": "# S\n", "skillgit.yaml": "budget:\n  max_cost_usd: 2\n"})
    project = open_project(root, None, ["budget.max_calls=7"])
    cfg = project.config
    assert cfg.model.teacher_model == "gpt-4o"  # from the user config
    assert cfg.prices["gpt-4o"] == {"prompt": 2.5, "completion": 10.0}
    assert cfg.budget.max_cost_usd == 2.0  # the project wins over the user
    assert cfg.budget.max_calls == 7  # the command line wins over both
    assert project.origins["model.teacher_model"] == str(user)
    assert project.origins["budget.max_cost_usd"] == str(root / "skillgit.yaml")
    assert project.origins["budget.max_calls"] == config_layers.COMMAND_LINE
    assert "train.batch_size" not in project.origins  # a default


def test_a_project_without_skillgit_yaml_still_gets_the_user_config(make_repo, xdg):
    user_config(xdg)
    root = make_repo()
    assert open_project(root).config.budget.max_cost_usd == 5.0


def test_the_user_config_can_be_turned_off(make_repo, xdg, monkeypatch):
    user_config(xdg)
    monkeypatch.setenv("SKILLGIT_USER_CONFIG", "")
    assert open_project(make_repo()).config.budget.max_cost_usd is None


@pytest.mark.parametrize("text, words", [
    ("skill:\n  path: X.md\n", ["skill", "project setting", "skillgit.yaml"]),
    ("model:\n  teacher_modl: x\n", ["model.teacher_modl", "did you mean 'model.teacher_model'"]),
    ("budget:\n  max_calls: -3\n", ["budget.max_calls", "-3"]),
    ("budgte:\n  max_calls: 3\n", ["budgte", "did you mean 'budget'"]),
    ("model: [1\n", ["not valid YAML"]),
])
def test_user_config_errors_name_the_file_and_the_key(make_repo, xdg, text, words):
    path = user_config(xdg, text)
    with pytest.raises(ConfigError) as err:
        open_project(make_repo())
    said = f"{err.value.message} {err.value.hint}"
    assert str(path) in said
    for word in words:
        assert word in said


def test_a_bad_value_from_the_project_file_names_that_file(make_repo, xdg):
    root = make_repo({"SKILL.md": "# S\n", "skillgit.yaml": "budget:\n  max_calls: -3\n"})
    with pytest.raises(ConfigError) as err:
        open_project(root)
    assert err.value.message.startswith(str(root / "skillgit.yaml") + ": budget.max_calls")


def test_sleep_reads_the_user_config_too(make_repo, xdg):
    from skillgit.sleep.settings import open_sleep_project

    user_config(xdg)
    root = make_repo({"SKILL.md": "# S\n", "skillgit.yaml": "sleep:\n  home: \"~\"\n"})
    assert open_sleep_project(root).config.model.teacher_model == "gpt-4o"


def test_config_show_says_where_each_key_came_from(make_repo, xdg):
    user = user_config(xdg)
    root = make_repo({"SKILL.md": "# S\n", "skillgit.yaml": "budget:\n  max_cost_usd: 2\n"})
    proc = run_cli_inproc("config", "show", "--show-origin", "-c", "train.batch_size=4", cwd=root)
    assert proc.returncode == 0, proc.stderr
    lines = dict((line.split("\t")[1], line.split("\t")[0]) for line in proc.stdout.splitlines())
    assert lines["model.teacher_model=gpt-4o"] == str(user).replace(str(Path.home()), "~", 1)
    assert lines["budget.max_cost_usd=2.0"] == str(root / "skillgit.yaml").replace(str(Path.home()), "~", 1)
    assert lines["train.batch_size=4"] == config_layers.COMMAND_LINE
    assert lines["skill.path=SKILL.md"] == "default"
    as_json = json.loads(run_cli_inproc("config", "show", "--show-origin", "--json", cwd=root).stdout)
    assert {"origin": "default", "key": "skill.path", "value": "SKILL.md"} in as_json


def test_doctor_lists_the_config_files_in_effect(make_repo, xdg):
    user = user_config(xdg)
    root = make_repo()
    proc = run_cli_inproc("doctor", "--json", cwd=root)
    report = json.loads(proc.stdout)
    assert {"origin": str(user), "keys": sorted(["model.teacher_model", "prices.gpt-4o.prompt",
                                                 "prices.gpt-4o.completion", "budget.max_cost_usd",
                                                 "budget.max_calls"])} in report["config"]
    text = run_cli_inproc("doctor", cwd=root).stdout
    assert f"{user}: budget.max_calls" in text and "config show --show-origin" in text


def test_dash_c_sets_a_key_as_git_does(make_repo):
    root = make_repo()
    proc = run_cli("config", "show", "--json", "-c", "train.batch_size=7", "-c", "budget.max_calls=9", cwd=root)
    assert proc.returncode == 0, proc.stderr
    cfg = json.loads(proc.stdout)
    assert cfg["train"]["batch_size"] == 7 and cfg["budget"]["max_calls"] == 9
    assert "deprecated" not in proc.stderr
    # history commands take keys too (here: which skill branch `log` reads)
    assert run_cli("log", "-c", "skill.branch=main", cwd=root).returncode == 0


def test_dash_c_with_a_file_still_works_and_says_it_is_deprecated(make_repo):
    root = make_repo()
    (root / "other.yaml").write_text("train:\n  batch_size: 9\n")
    proc = run_cli_inproc("config", "show", "--json", "-c", "other.yaml", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["train"]["batch_size"] == 9
    assert "warning: `-c FILE` is deprecated" in proc.stderr and "--config FILE" in proc.stderr
    proc = run_cli_inproc("config", "show", "--json", "--config", "other.yaml", "-c", "train.batch_size=3", cwd=root)
    assert json.loads(proc.stdout)["train"]["batch_size"] == 3 and "deprecated" not in proc.stderr


@pytest.mark.parametrize("argv, expected, deprecated", [
    (["train", "-c", "a.b=1"], ["train", "-c", "a.b=1"], False),
    (["train", "-c", "cfg.yaml"], ["train", "--config=cfg.yaml"], True),
    (["train", "-ccfg.yaml"], ["train", "--config=cfg.yaml"], True),
    (["train", "-ca.b=1"], ["train", "-ca.b=1"], False),
    (["train", "--", "-c", "cfg.yaml"], ["train", "--", "-c", "cfg.yaml"], False),
    (["train", "-c"], ["train", "-c"], False),  # click says the value is missing
    # before the command, as `git -c k=v commit`: moved after it (before `--`)
    (["-c", "a.b=1", "sleep", "run"], ["sleep", "run", "-c", "a.b=1"], False),
    (["-c", "a.b=1", "-c", "c=2", "train", "--", "x"], ["train", "-c", "a.b=1", "-c", "c=2", "--", "x"], False),
])
def test_config_shorthand(argv, expected, deprecated):
    assert config_shorthand(argv) == (expected, deprecated)


def test_dash_c_before_the_command_and_on_a_command_without_keys(make_repo):
    root = make_repo()
    proc = run_cli_inproc("-c", "train.batch_size=5", "config", "show", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["train"]["batch_size"] == 5
    proc = run_cli_inproc("sleep", "harvest", "-c", "a.b=1", cwd=root)
    assert proc.returncode == 2 and "error: `skillgit sleep harvest` takes no config keys" in proc.stderr


def test_origins_name_the_base_file_that_set_a_key(make_repo, xdg):
    root = make_repo({"SKILL.md": "# S\n", "skillgit.yaml": "_base_: shared/base.yaml\ntrain:\n  num_epochs: 2\n",
                      "shared/base.yaml": "train:\n  batch_size: 12\n  num_epochs: 9\n"})
    project = open_project(root)
    assert project.config.train.batch_size == 12 and project.config.train.num_epochs == 2
    assert project.origins["train.batch_size"] == str(root / "shared" / "base.yaml")
    assert project.origins["train.num_epochs"] == str(root / "skillgit.yaml")


def test_each_config_file_is_parsed_once_per_load(make_repo, xdg, monkeypatch):
    """The origins come from the same parse as the values (each file of a `_base_` chain was read and parsed a
    second time to mark them)."""
    from skillgit import config_yaml

    root = make_repo({"SKILL.md": "# S\n", "skillgit.yaml": "_base_: shared/base.yaml\ntrain:\n  num_epochs: 2\n",
                      "shared/base.yaml": "train:\n  batch_size: 12\n"})
    sources: list[str] = []
    parse = config_yaml.yaml_load

    def counted(text: str, source: str = "<string>"):
        sources.append(source)
        return parse(text, source)

    monkeypatch.setattr(config_yaml, "yaml_load", counted)
    project = open_project(root)
    assert sorted(sources) == sorted([str(root / "skillgit.yaml"), str(root / "shared" / "base.yaml")])
    assert project.origins["train.batch_size"] == str(root / "shared" / "base.yaml")
