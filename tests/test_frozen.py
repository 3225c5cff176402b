"""`skillgit.frozen.Frozen`: equality, hashing and repr as `@dataclass(frozen=True)` generates them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from skillgit.config import Config, EnvCfg
from skillgit.frozen import Frozen
from skillgit.types import Edit, Usage


@dataclass(frozen=True, eq=False, repr=False)
class Ours(Frozen):
    name: str
    size: int = 0
    options: dict[str, Any] = field(default_factory=dict, hash=False)
    secret: str = field(default="", repr=False)
    scratch: float = field(default=0.0, compare=False)
    child: Any = None


@dataclass(frozen=True)
class Generated:  # the same fields, with dataclasses' own methods
    name: str
    size: int = 0
    options: dict[str, Any] = field(default_factory=dict, hash=False)
    secret: str = field(default="", repr=False)
    scratch: float = field(default=0.0, compare=False)
    child: Any = None


CASES = [dict(name="a"), dict(name="a", size=2, secret="s", scratch=1.5), dict(name="b", child=("x", 1)),
         dict(name="a", scratch=9.0), dict(name="c", child=None, size=-1)]


def _ours(**kw: Any) -> Ours:
    return Ours(**kw)


def _generated(**kw: Any) -> Generated:
    return Generated(**kw)


@pytest.mark.parametrize("left", CASES)
@pytest.mark.parametrize("right", CASES)
def test_equality_and_hash_are_the_generated_ones(left, right):
    assert (_ours(**left) == _ours(**right)) == (_generated(**left) == _generated(**right))
    assert (_ours(**left) != _ours(**right)) == (_generated(**left) != _generated(**right))
    assert hash(_ours(**left)) == hash(_generated(**left))


def test_repr_is_the_generated_one_with_the_class_name():
    for kw in CASES:
        assert repr(_ours(**kw)).replace("Ours(", "Generated(", 1) == repr(_generated(**kw))
    assert "secret" not in repr(Ours("a", secret="hidden")) and "hidden" not in repr(Ours("a", secret="hidden"))


def test_another_class_is_never_equal_and_unhashable_values_refuse_a_hash():
    assert Ours("a") != Generated("a") and Ours("a") != ("a", 0) and Ours("a").__eq__("a") is NotImplemented
    with pytest.raises(TypeError):
        hash(Ours("a", child=[1]))  # as the generated __hash__ does
    with pytest.raises(dataclasses.FrozenInstanceError):
        Ours("a").name = "b"  # type: ignore[misc]


def test_a_self_containing_value_shows_as_an_ellipsis():
    box: list[Any] = []
    ours, generated = Ours("a", child=box), Generated("a", child=box)
    box.append(ours)
    assert repr(ours) == "Ours(name='a', size=0, options={}, scratch=0.0, child=[...])"
    box[0] = generated
    assert repr(generated) == "Generated(name='a', size=0, options={}, scratch=0.0, child=[...])"


def test_the_schema_and_records_compare_hash_and_show_as_before():
    assert Config() == Config()
    with pytest.raises(TypeError):
        hash(Config())  # its `prices` is a dict, as before
    assert dataclasses.replace(Config(), env=EnvCfg(workers=3)) != Config()
    assert EnvCfg(options={"a": 1}) == EnvCfg(options={"a": 1}) and hash(EnvCfg(options={"a": 1})) == hash(EnvCfg())
    assert repr(Usage(calls=2)) == ("Usage(calls=2, prompt_tokens=0, completion_tokens=0, cached_tokens=0, "
                                    "reasoning_tokens=0, cost_usd=0.0)")
    assert Edit("append", "x") == Edit("append", "x") and {Edit("append", "x"), Edit("append", "x")} == {
        Edit("append", "x")}
