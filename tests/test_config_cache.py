"""The parsed skillgit.yaml kept across processes (`config_yaml.load_cached`, `.git/skillgit/cache/config.json`) and
YAML parsed by libyaml: both give exactly what the pure-Python parse gives, and errors read the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from skillgit import config_yaml
from skillgit.config import Config, load_config
from skillgit.errors import ConfigError
from skillgit.project import open_project

CONFIG = """\
skill: {path: SKILL.md, branch: main}
train: {num_epochs: 2, batch_size: 8, seed: 3}
env:
  split_ratio: 4:2:4   # a string (YAML 1.1 would read a sexagesimal integer)
  scorer: {type: numeric, tolerance: 1e-3}
evaluation: {gate: significance+per_item, gate_margin: .5}
prices: {sim-teacher: {input: 1.5, output: 2}}
"""


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The texts `config_yaml.yaml_load` parsed (the cache's seam: a hit parses nothing)."""
    seen: list[str] = []
    real = config_yaml.yaml_load
    monkeypatch.setattr(config_yaml, "yaml_load", lambda text, source="<string>": seen.append(text) or
                        real(text, source))
    return seen


def test_an_unchanged_config_is_read_from_the_cache_and_loads_the_same(make_repo, parses):
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": CONFIG})
    first = open_project(root).config
    cache = root / ".git" / "skillgit" / "cache" / "config.json"
    assert cache.is_file() and len(parses) == 1
    again = open_project(root).config
    assert again == first and len(parses) == 1  # answered from the file
    assert first.env.split_ratio == "4:2:4" and first.evaluation.gate_margin == 0.5
    kept = json.loads(cache.read_text())["value"]
    assert kept == _pure(CONFIG) and isinstance(kept["prices"]["sim-teacher"]["output"], int)

    # an edit of the same size within the same second is another text: parsed again
    (root / "skillgit.yaml").write_text(CONFIG.replace("seed: 3", "seed: 4"))
    assert open_project(root).config.train.seed == 4 and len(parses) == 2
    assert open_project(root).config.train.seed == 4 and len(parses) == 2


@pytest.mark.parametrize("damage", [b"not json", b"\xff\xfe", b'{"key": 1}', b"[]", b'{"value": {"train": 7}}'])
def test_a_damaged_or_foreign_cache_file_is_a_miss(make_repo, parses, damage):
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": CONFIG})
    expected = open_project(root).config
    cache = root / ".git" / "skillgit" / "cache" / "config.json"
    cache.write_bytes(damage)
    assert open_project(root).config == expected and len(parses) == 2
    assert json.loads(cache.read_text())["value"]["train"]["seed"] == 3  # rewritten


def test_a_repository_without_a_writable_cache_still_loads(make_repo, parses):
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": CONFIG})
    (root / ".git" / "skillgit").mkdir()
    (root / ".git" / "skillgit" / "cache").write_text("a file where the folder would be")
    assert open_project(root).config.train.seed == 3
    assert open_project(root).config.train.seed == 3 and len(parses) == 2
    assert [p.name for p in (root / ".git" / "skillgit").iterdir()] == ["cache"]  # no temporary file left


def test_only_plain_json_values_are_kept(tmp_path, parses):
    cache = tmp_path / "c.json"
    for text, value in [("{1: a, 2.5: b}", {1: "a", 2.5: "b"}), ("!!set {a, b}", {"a", "b"}),
                        ("x: !!binary aGk=", {"x": b"hi"}), ("x: .nan", None), ("x: -.inf", {"x": float("-inf")}),
                        ("x: !!timestamp 2024-01-02", None)]:
        got = config_yaml.load_cached(text, "t.yaml", cache)
        if value is not None:
            assert got == value and type(got) is type(value)
        assert not cache.exists(), text
        assert config_yaml.load_cached(text, "t.yaml", cache) == got or text == "x: .nan"
    assert len(parses) == 12  # none of them answered from a file


def test_a_text_that_does_not_load_raises_every_time(make_repo, parses):
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": "train:\n  seed: 1\n  seed: 2\n"})
    for _ in range(2):
        with pytest.raises(ConfigError) as info:
            open_project(root)
        assert "duplicate key 'seed'" in info.value.message and "skillgit.yaml:3:3" in info.value.message
    assert not (root / ".git" / "skillgit" / "cache" / "config.json").exists()


def test_a_config_outside_a_repositorys_top_is_not_cached(tmp_path, parses):
    path = tmp_path / "sub" / "skillgit.yaml"
    path.parent.mkdir()
    path.write_text(CONFIG)
    (tmp_path / ".git").mkdir()  # the repository's top is the parent: this file is not at it
    assert load_config(path) == load_config(path) != Config()
    assert len(parses) == 2 and not (tmp_path / ".git" / "skillgit").exists()


# ---------------------------------------------------------------------------------------------- libyaml
def _pure(text: str):
    pure, _ = config_yaml._loaders()
    return yaml.load(text, Loader=pure)  # noqa: S506 - a SafeLoader's constructor


def _corpus() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    files = [p for folder in ("examples", "templates", "skillgit") for p in sorted((root / folder).rglob("*.y*ml"))]
    return [p.read_text(encoding="utf-8") for p in files] + [
        "a: 0o17\nb: 0x1F\nc: 1_000\nd: 007\ne: 2024-01-02\nf: yes\ng: ~\nh: .Inf\ni: -.5e3\nj: 1e-6\nk: 2:1:7\n",
        "list: [1, 'two', {three: 3}]\nanchor: &a {x: 1}\nalias: *a\n",
        "block: |\n  kept\n  lines\nfolded: >\n  one\n  two\nplain: a b\n  c\n",
        "\ufeffbom: true\nunicode: \u00e9\u4e2d\U0001f600\nquoted: \"tab\\there\"\n", "", "# only a comment\n",
        "- 1\n- -1\n- +1\n- 1.\n- .1\n- 0\n- -0\n- 0.0\n- 1e5\n- 1E+5\n- 0b101\n- 12:30\n- null\n- Null\n- NULL\n"]


def test_libyaml_loads_every_document_as_the_pure_parser_does():
    if config_yaml._loaders()[1] is None:
        pytest.skip("PyYAML was built without libyaml")
    corpus = _corpus()
    assert len(corpus) > 8
    for text in corpus:
        fast = yaml.load(text, Loader=config_yaml._loaders()[1])  # noqa: S506 - a SafeLoader's constructor
        pure = _pure(text)
        assert fast == pure and repr(fast) == repr(pure), text[:80]
        assert config_yaml.yaml_load(text) == pure


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "a: 1\n b: 2\n", "a: 'open\n", "a:\n\t- 1\n",
                                  "a: 1\na: 2\n", "x: \x07\n", "[a, b]]\n"])
def test_an_error_reads_as_the_pure_parsers(text):
    with pytest.raises(ConfigError) as info:
        config_yaml.yaml_load(text, "f.yaml")
    with pytest.raises(yaml.YAMLError) as pure:
        _pure(text)
    mark = getattr(pure.value, "problem_mark", None) or getattr(pure.value, "context_mark", None)
    problem = getattr(pure.value, "problem", None) or getattr(pure.value, "context", None)
    opened, context = getattr(pure.value, "context_mark", None), getattr(pure.value, "context", None)
    since = (f" ({context} that starts at line {opened.line + 1}, column {opened.column + 1})"
             if getattr(pure.value, "problem", None) and context and opened is not None and opened is not mark
             else "")
    if mark is not None:
        assert info.value.message == f"f.yaml:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem}{since}"
    else:
        assert info.value.message.startswith("f.yaml: not valid YAML: ")
