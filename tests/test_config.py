"""Config loading: inheritance, overrides, validation messages, dumping with secrets masked, digests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from skillgit.config import (
    ALIASES,
    RUNTIME_ONLY_KEYS,
    Config,
    apply_overrides,
    config_from_dict,
    known_keys,
    load_config,
)
from skillgit.config_output import config_digest, dump_config
from skillgit.config_yaml import parse_overrides
from skillgit.errors import ConfigError, ExitCode


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(fn, *args, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    return info.value


# ---------------------------------------------------------------------------------------------- loading
def test_no_file_gives_defaults():
    assert load_config(None) == Config()


def test_file_values_aliases_and_scorer_shorthand(tmp_path):
    path = write(tmp_path / "skillgit.yaml", """
model:
  optimizer_backend: openai      # SkillOpt's name for the teacher
  optimizer_model: gpt-4o
  target_backend: anthropic
  target_model: claude-x
train: {num_epochs: 2, batch_size: 8}
env:
  split_ratio: 1:1:1             # unquoted: YAML 1.1 would read this as the integer 3661
  scorer: normalized
  workers: 3
""")
    cfg = load_config(path)
    assert (cfg.model.teacher_backend, cfg.model.teacher_model) == ("openai", "gpt-4o")
    assert (cfg.model.student_backend, cfg.model.student_model) == ("anthropic", "claude-x")
    assert (cfg.train.num_epochs, cfg.train.batch_size) == (2, 8)
    assert cfg.env.split_ratio == "1:1:1"
    assert cfg.env.scorer.type == "normalized"
    assert cfg.env.workers == 3


def test_aliases_stay_in_their_section():
    # normalize renames within one mapping; an alias into another section would need moving values.
    for old, new in ALIASES.items():
        assert old.rpartition(".")[0] == new.rpartition(".")[0]
        assert new in known_keys()


def test_alias_and_canonical_together_is_an_error():
    err = error_of(config_from_dict, {"model": {"optimizer_backend": "openai", "teacher_backend": "openai"}})
    assert "given twice" in err.message and "teacher_backend" in err.message


def test_lists_become_tuples_and_strings_split(tmp_path):
    cfg = config_from_dict({"env": {"scorer": {"type": "json_field", "fields": ["a", "b.c"]}},
                            "model": {"student_backend": "command", "student_model": "agent",
                                      "student": {"command": {"argv": "my-agent -p '{prompt}'"}}}})
    assert cfg.env.scorer.fields == ("a", "b.c")
    assert cfg.model.student.command.argv == ("my-agent", "-p", "{prompt}")
    assert hash(cfg.env) and hash(cfg.model)  # no lists left inside: sections stay hashable


def test_yaml_scalars_are_yaml12_like(tmp_path):
    path = write(tmp_path / "c.yaml", "env:\n  scorer:\n    type: numeric\n    tolerance: 1e-3\n"
                                      "model:\n  teacher:\n    api_version: 2024-06-01\n")
    cfg = load_config(path)
    assert cfg.env.scorer.tolerance == pytest.approx(0.001)
    assert cfg.model.teacher.api_version == "2024-06-01"  # a date would not be a string


# ---------------------------------------------------------------------------------------------- _base_
def test_base_inheritance_deep_merges_relative_to_including_file(tmp_path):
    write(tmp_path / "shared" / "base.yaml", "train: {num_epochs: 9, batch_size: 7}\n"
                                             "env: {scorer: {type: regex, pattern: 'x+'}}\n")
    write(tmp_path / "shared" / "more.yaml", "_base_: base.yaml\ntrain: {num_epochs: 5}\n")
    child = write(tmp_path / "proj" / "skillgit.yaml",
                  "_base_: [../shared/more.yaml, ../shared/extra.yaml]\ntrain: {seed: 3}\n")
    write(tmp_path / "shared" / "extra.yaml", "train: {num_epochs: 6}\n")
    cfg = load_config(child)
    # base: 9 → more: 5 → extra (later in the list) wins: 6; batch_size survives the merge; child adds seed.
    assert (cfg.train.num_epochs, cfg.train.batch_size, cfg.train.seed) == (6, 7, 3)
    assert (cfg.env.scorer.type, cfg.env.scorer.pattern) == ("regex", "x+")


def test_scorer_string_in_child_merges_with_mapping_in_base(tmp_path):
    write(tmp_path / "base.yaml", "env: {scorer: {type: regex, pattern: 'a+', case_sensitive: false}}\n")
    child = write(tmp_path / "child.yaml", "_base_: base.yaml\nenv: {scorer: contains}\n")
    scorer = load_config(child).env.scorer
    assert (scorer.type, scorer.case_sensitive) == ("contains", False)


def test_base_cycle_is_detected(tmp_path):
    write(tmp_path / "a.yaml", "_base_: b.yaml\n")
    write(tmp_path / "b.yaml", "_base_: a.yaml\n")
    err = error_of(load_config, tmp_path / "a.yaml")
    assert "cycle" in err.message and "a.yaml -> b.yaml -> a.yaml" in err.message
    assert err.code == ExitCode.USAGE


def test_missing_base_names_the_including_file(tmp_path):
    child = write(tmp_path / "child.yaml", "_base_: nope.yaml\n")
    err = error_of(load_config, child)
    assert "nope.yaml" in err.message and "child.yaml" in err.message


def test_base_must_be_names(tmp_path):
    err = error_of(load_config, write(tmp_path / "c.yaml", "_base_: {a: 1}\n"))
    assert "_base_" in err.message


# ---------------------------------------------------------------------------------------------- bad input
def test_missing_config_file(tmp_path):
    err = error_of(load_config, tmp_path / "absent.yaml")
    assert "not found" in err.message and "absent.yaml" in err.message


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path / "skillgit.yaml", "train:\n  num_epochs: 2\n bad indent: [\n")
    err = error_of(load_config, path)
    assert "not valid YAML" in err.message and f"{path}:3:" in err.message
    assert err.hint


def test_duplicate_yaml_key_is_an_error(tmp_path):
    err = error_of(load_config, write(tmp_path / "c.yaml", "train:\n  seed: 1\n  seed: 2\n"))
    assert "duplicate key 'seed'" in err.message and ":3:" in err.message


def test_top_level_must_be_a_mapping(tmp_path):
    err = error_of(load_config, write(tmp_path / "c.yaml", "- a\n- b\n"))
    assert "mapping" in err.message


@pytest.mark.parametrize("data, key, guess", [
    ({"train": {"batchsize": 3}}, "train.batchsize", "train.batch_size"),
    ({"batch_size": 3}, "batch_size", "train.batch_size"),
    ({"evaluation": {"gate_metrc": "hard"}}, "evaluation.gate_metrc", "evaluation.gate_metric"),
    ({"model": {"student": {"temprature": 0}}}, "model.student.temprature", "model.student.temperature"),
])
def test_unknown_key_suggests_closest(data, key, guess):
    err = error_of(config_from_dict, data)
    assert err.message == f"unknown config key '{key}'"
    assert f"did you mean '{guess}'?" in err.hint


def test_unknown_key_without_close_match_lists_section():
    err = error_of(config_from_dict, {"budget": {"zzzzzz": 1}})
    assert "max_calls" in err.hint and "max_cost_usd" in err.hint


def test_wrong_type_names_key_value_and_kind():
    err = error_of(config_from_dict, {"train": {"num_epochs": "four"}})
    assert err.message == "train.num_epochs: expected an integer, got 'four'"
    assert "num_epochs: 4" in err.hint


@pytest.mark.parametrize("data, fragment", [
    ({"train": {"batch_size": 2.5}}, "train.batch_size: expected an integer, got 2.5"),
    ({"train": {"num_epochs": True}}, "train.num_epochs: expected an integer, got True"),
    ({"evaluation": {"gate_margin": "big"}}, "evaluation.gate_margin: expected a number, got 'big'"),
    ({"optimizer": {"use_slow_update": "maybe"}}, "optimizer.use_slow_update: expected true or false, got 'maybe'"),
    ({"skill": {"branch": True}}, "skill.branch: expected a string, got True"),
    ({"env": {"scorer": {"fields": 3}}}, "env.scorer.fields: expected a list, got 3"),
    ({"train": 5}, "train: expected a mapping"),
    ({"prices": {"gpt": {"input": "cheap"}}}, "prices.gpt.input: expected a number, got 'cheap'"),
    ({"train": {"seed": None}}, "train.seed: a value is required, got None"),
])
def test_type_errors(data, fragment):
    assert fragment in error_of(config_from_dict, data).message


@pytest.mark.parametrize("data, fragment, hint", [
    ({"model": {"teacher_backend": "opnai"}}, "'opnai' is not one of simulated, openai, azure, anthropic",
     "did you mean 'openai'?"),
    ({"model": {"teacher_backend": "command"}}, "model.teacher_backend: 'command' is not one of", ""),
    ({"model": {"student": {"api": "completions"}}}, "model.student.api: 'completions' is not one of chat, responses",
     ""),
    ({"model": {"teacher": {"json_mode": "schema"}}}, "model.teacher.json_mode: 'schema'", ""),
    ({"optimizer": {"lr_scheduler": "step"}}, "constant, linear, cosine, autonomous", ""),
    ({"optimizer": {"skill_update_mode": "rewrite"}}, "optimizer.skill_update_mode: 'rewrite'", ""),
    ({"evaluation": {"gate": "loose"}}, "evaluation.gate: 'loose' is not one of strict, paired", ""),
    ({"evaluation": {"gate_metric": "hardd"}}, "evaluation.gate_metric", "did you mean 'hard'?"),
    ({"env": {"scorer": "regexp"}}, "env.scorer.type: 'regexp'", "did you mean 'regex'?"),
    ({"model": {"student": {"command": {"preset": "gemini"}}}}, "model.student.command.preset: 'gemini'", ""),
])
def test_enum_errors(data, fragment, hint):
    err = error_of(config_from_dict, data)
    assert fragment in err.message
    assert hint in err.hint


@pytest.mark.parametrize("data, fragment", [
    ({"train": {"batch_size": 0}}, "train.batch_size: must be >= 1, got 0"),
    ({"gradient": {"minibatch_size": 0}}, "gradient.minibatch_size: must be >= 1"),
    ({"gradient": {"merge_batch_size": 1}}, "gradient.merge_batch_size: must be >= 2"),
    ({"evaluation": {"gate_repeats": 0}}, "evaluation.gate_repeats: must be between 1 and 500"),
    ({"evaluation": {"mixed_weight": 1.5}}, "evaluation.mixed_weight: must be between 0 and 1"),
    ({"model": {"simulated": {"noise": 1}}}, "model.simulated.noise: must be >= 0 and < 1, got 1.0"),
    ({"model": {"simulated": {"noise": -0.1}}}, "model.simulated.noise"),
    ({"optimizer": {"min_learning_rate": -1}}, "optimizer.min_learning_rate: must be >= 0"),
    ({"optimizer": {"learning_rate": 2, "min_learning_rate": 3}}, "must be <= optimizer.learning_rate (2), got 3"),
    ({"env": {"split_ratio": "2:0:7"}}, "env.split_ratio: the val part must be > 0"),
    ({"env": {"split_ratio": "0:1:1"}}, "env.split_ratio: the train part must be > 0"),
    ({"env": {"split_ratio": "2-1-7"}}, "env.split_ratio: expected 'train:val:test'"),
    ({"env": {"split_ratio": "a:b:c"}}, "env.split_ratio: parts must be non-negative numbers"),
    ({"env": {"scorer": {"type": "regex", "pattern": "(unclosed"}}}, "env.scorer.pattern: not a valid regular"),
    ({"env": {"scorer": {"timeout_s": 0}}}, "env.scorer.timeout_s: must be > 0"),
    ({"skill": {"path": "../outside.md"}}, "skill.path: must be relative"),
    ({"skill": {"branch": "bad..name"}}, "skill.branch: 'bad..name' is not a valid branch name"),
])
def test_range_and_syntax_errors(data, fragment):
    assert fragment in error_of(config_from_dict, data).message


def test_two_part_ratio_means_no_test_split():
    assert config_from_dict({"env": {"split_ratio": "3:1"}}).env.split_ratio == "3:1"


def test_rewrite_mode_with_zero_learning_rate_is_rejected_with_hint():
    data = {"optimizer": {"skill_update_mode": "rewrite_from_suggestions", "learning_rate": 0,
                          "min_learning_rate": 0}}
    err = error_of(config_from_dict, data)
    assert err.message.startswith("optimizer.learning_rate: 0 with skill_update_mode 'rewrite_from_suggestions'")
    assert "skill_update_mode: patch" in err.hint
    data["optimizer"]["skill_update_mode"] = "patch"
    assert config_from_dict(data).optimizer.learning_rate == 0  # allowed for patch mode


@pytest.mark.parametrize("scorer, fragment", [
    ({"type": "python"}, "env.scorer.callable: the python scorer needs"),
    ({"type": "python", "callable": "no_colon"}, "env.scorer.callable: expected 'module:function'"),
    ({"type": "command"}, "env.scorer.command: the command scorer needs"),
    ({"type": "command", "command": "   "}, "env.scorer.command"),
])
def test_scorer_cross_field_checks(scorer, fragment):
    assert fragment in error_of(config_from_dict, {"env": {"scorer": scorer}}).message


def test_command_student_needs_argv_or_preset():
    base = {"model": {"student_backend": "command", "student_model": "agent"}}
    err = error_of(config_from_dict, base)
    assert err.message.startswith("model.student.command.argv:") and "preset" in err.hint
    with_preset = config_from_dict(apply_overrides(base, ["model.student.command.preset=claude"]))
    assert with_preset.model.student.command.preset == "claude"


def test_config_from_dict_rejects_base():
    assert "_base_" in error_of(config_from_dict, {"_base_": "x.yaml"}).message


# ---------------------------------------------------------------------------------------------- overrides
def test_overrides_are_yaml_scalars(tmp_path):
    path = write(tmp_path / "c.yaml", "env: {scorer: {type: regex, pattern: 'a+'}}\n")
    cfg = load_config(path, ["evaluation.use_gate=no", "train.batch_size=12", "env.split_ratio=1:1:1",
                             "env.scorer.tolerance=1e-3", "model.target_backend=openai",
                             "model.student_model=gpt-4o-mini", "env.scorer.fields=[a, b]",
                             "train.max_steps=", "skill.path=My Skill.md"])
    assert cfg.evaluation.use_gate is False
    assert cfg.train.batch_size == 12
    assert cfg.env.split_ratio == "1:1:1"
    assert cfg.env.scorer.tolerance == pytest.approx(1e-3)
    assert cfg.model.student_backend == "openai"  # alias key in an override
    assert cfg.env.scorer.fields == ("a", "b")
    assert cfg.train.max_steps is None
    assert cfg.skill.path == "My Skill.md"
    assert cfg.env.scorer.pattern == "a+"  # untouched by unrelated overrides


def test_bool_given_as_string_via_set():
    assert load_config(None, ["optimizer.use_meta_skill=false"]).optimizer.use_meta_skill is False
    assert load_config(None, ["optimizer.use_meta_skill='yes'"]).optimizer.use_meta_skill is True


def test_scorer_shorthand_override_keeps_other_scorer_keys(tmp_path):
    path = write(tmp_path / "c.yaml", "env: {scorer: {type: contains, pattern: 'x'}}\n")
    scorer = load_config(path, ["env.scorer=regex"]).env.scorer
    assert (scorer.type, scorer.pattern) == ("regex", "x")


@pytest.mark.parametrize("item, fragment", [
    ("train.batch_size", "is not key=value"),
    ("=3", "is not key=value"),
    ("train..x=1", "is not a dotted key"),
    ("_base_=x.yaml", "_base_ cannot be overridden"),
])
def test_bad_override_syntax(item, fragment):
    assert fragment in error_of(load_config, None, [item]).message


def test_override_with_unknown_key_suggests():
    err = error_of(load_config, None, ["train.epochs=3"])
    assert err.message == "unknown config key 'train.epochs'" and "train.num_epochs" in err.hint


def test_override_wrong_type_names_key():
    assert error_of(load_config, None, ["train.num_epochs=four"]).message == \
        "train.num_epochs: expected an integer, got 'four'"


def test_parse_overrides_cfg_options_form():
    assert parse_overrides(["train.batch_size=8 evaluation.gate=paired", "env.scorer.pattern='a b'",
                            "skill.path=My Skill.md"]) == \
        ["train.batch_size=8", "evaluation.gate=paired", "env.scorer.pattern='a b'", "skill.path=My Skill.md"]
    assert parse_overrides(["a.b=1 c.d='x y'"]) == ["a.b=1", "c.d=x y"]
    with pytest.raises(ConfigError):
        parse_overrides(["novalue"])


# ---------------------------------------------------------------------------------------------- dump / digest
def test_dump_round_trips(tmp_path):
    cfg = load_config(None, ["env.split_ratio=1:1:1", "env.scorer.pattern=^(yes|no)\\.$", "env.scorer.type=regex",
                             "model.student.command.argv=[a, '{prompt}']", "model.teacher.api_version=2024-06-01",
                             "prices={gpt-4o: {input: 2.5, output: 10}}", "train.max_steps=7"])
    text = dump_config(cfg, mask_secrets=False)
    again = load_config(write(tmp_path / "dumped.yaml", text))
    assert again == cfg
    assert list(yaml.safe_load(text))[:3] == ["skill", "model", "train"]  # schema order, not alphabetical


def test_dump_masks_secrets_but_not_variable_names_or_numbers():
    cfg = load_config(None, ["model.student.command.argv=[agent, --key, sk-abcdefghijklmnop1234]",
                             "model.teacher.api_key_env=MY_KEY_VAR", "model.teacher.max_tokens=512"])
    text = dump_config(cfg)
    assert "sk-abcdefghijklmnop1234" not in text and "***" in text
    assert "MY_KEY_VAR" in text  # the *name* of the variable is not a secret
    assert "max_tokens: 512" in text
    assert "sk-abcdefghijklmnop1234" in dump_config(cfg, mask_secrets=False)


def test_redact_masks_secret_keys_at_any_depth():
    data = {"api_key": "abcdefghijklmnopqrstu", "nested": {"password": "hunter2", "db_token": ["x" * 20]},
            "max_tokens": 100, "name": "plain", "api_key_env": "OPENAI_API_KEY", "empty_secret": ""}
    from skillgit.redact import redact_mapping  # the one redaction module

    out = redact_mapping(data)
    assert out["api_key"] == "***"
    assert out["nested"]["password"] == "***"
    assert out["nested"]["db_token"] == ["***"]
    assert (out["max_tokens"], out["name"], out["api_key_env"], out["empty_secret"]) == \
        (100, "plain", "OPENAI_API_KEY", "")
    assert data["api_key"] == "abcdefghijklmnopqrstu"  # the input is not modified


def test_digest_is_stable_and_sensitive():
    a, b = load_config(None), load_config(None)
    assert config_digest(a) == config_digest(b)
    assert len(config_digest(a)) == 12 and int(config_digest(a), 16) >= 0
    changed = load_config(None, ["train.seed=1"])
    assert config_digest(changed) != config_digest(a)


def test_digest_can_ignore_runtime_only_keys():
    a = load_config(None)
    b = load_config(None, ["model.student.concurrency=2", "env.workers=1", "budget.max_calls=10"])
    assert config_digest(a) != config_digest(b)
    assert config_digest(a, RUNTIME_ONLY_KEYS) == config_digest(b, RUNTIME_ONLY_KEYS)
    c = load_config(None, ["train.batch_size=3"])
    assert config_digest(a, RUNTIME_ONLY_KEYS) != config_digest(c, RUNTIME_ONLY_KEYS)
    for key in RUNTIME_ONLY_KEYS:
        assert key in known_keys()


def test_every_leaf_default_passes_validation():
    # The defaults themselves must satisfy the rules (a default that fails would make every config fail).
    cfg = config_from_dict({})
    assert dataclasses.asdict(cfg) == dataclasses.asdict(Config())


def test_digest_survives_a_release_that_adds_a_key_at_its_default(monkeypatch):
    # A user upgrades skillgit while a run is unfinished; the new version has one more config key, at its default.
    # Before, the digest hashed every key, so `train --resume` no longer matched the run and started a new one.
    import functools

    import skillgit.config_output as config_module

    cfg = load_config(None, ["train.seed=3"])
    before = config_digest(cfg, RUNTIME_ONLY_KEYS)
    plain_to_dict = Config.to_dict

    def with_new_key(self):
        data = plain_to_dict(self)
        data["train"] = {**data["train"], "a_key_added_later": 7}
        return data

    def forget_defaults():  # the defaults are read once per process
        getattr(config_module, "_default_leaves", functools.lru_cache(None)(dict)).cache_clear()

    monkeypatch.setattr(Config, "to_dict", with_new_key)
    forget_defaults()
    try:
        assert config_digest(cfg, RUNTIME_ONLY_KEYS) == before
        assert config_digest(load_config(None, ["train.seed=4"]), RUNTIME_ONLY_KEYS) != before
    finally:
        forget_defaults()


def test_other_modules_use_only_the_configs_public_names():
    """config_layers.py composes the config's pieces (read_file, normalize, deep_merge, build): through public,
    documented names, as every other module does; it called four private ones."""
    import ast

    package = Path(__file__).resolve().parent.parent / "skillgit"
    private = []
    for path in package.rglob("*.py"):
        if path.name == "config.py" and path.parent == package:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and node.module == "skillgit" for a in node.names if a.name == "config"}
        aliases |= {a.asname for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names
                    if a.name == "skillgit.config" and a.asname}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "skillgit.config":
                private += [f"{path.name}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("_")]
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in aliases):
                private.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    assert private == []
