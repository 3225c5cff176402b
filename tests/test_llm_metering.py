"""Metering wrappers: every call booked in the run's ledger under the right stage and role, errors counted,
and a student's stage bound per object so phases on different threads never book under each other's stage."""

from __future__ import annotations

import threading

import pytest

from skillgit.config import config_from_dict
from skillgit.llm.base import LLMError, Message, Reply, Request
from skillgit.llm.factory import build_student, build_teacher
from skillgit.llm.metering import MeteredLLM, MeteredStudent, UsageSink, bind_stage
from skillgit.loop.ledger import Ledger
from skillgit.types import Item, Usage
from tests.fake_servers import (
    fake_server_fixture,  # noqa: F401 (the fake_server fixture)
    server_error,
)


def test_the_ledger_is_a_usage_sink():
    assert isinstance(Ledger(), UsageSink)


def test_metered_llm_books_by_request_stage_and_counts_errors(fake_server):
    fake_server.script(server_error(500))
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "local",
                                      "teacher": {"base_url": fake_server.openai_base_url}}})
    ledger = Ledger()
    llm = MeteredLLM(build_teacher(cfg, None, environ={}, max_retries=0), ledger, "teacher")
    with pytest.raises(LLMError):
        llm.complete(Request((Message("user", "hi"),), stage="reflect"))
    llm.complete(Request((Message("user", "hi"),), stage="reflect"))
    llm.complete(Request((Message("user", "hi"),)))  # no stage: booked under the role
    snap = ledger.snapshot()
    assert snap["errors"] == {"reflect": 1}
    assert snap["by_stage"]["reflect"]["calls"] == 1 and snap["by_stage"]["teacher"]["calls"] == 1
    assert snap["by_role"]["teacher"]["prompt_tokens"] == 24  # 12 per answered call
    assert llm.cache_identity == "openai:local" and llm.json_mode_in_use == "json_schema"  # forwarded


class _Slow:
    """A student that holds each run until both phases are in flight (a seam we own, not a model)."""

    id = "slow"

    def __init__(self, parties: int):
        self.barrier = threading.Barrier(parties, timeout=5)

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        self.barrier.wait()
        if item.id == "bad":
            raise LLMError("agent failed", kind="agent")
        return Reply(item.input, Usage(1, 10, 2), cached=item.id == "again")


def test_student_stages_are_bound_per_object_not_shared():
    ledger = Ledger()
    inner = _Slow(parties=4)
    base = MeteredStudent(inner, ledger)
    gate, test = base.for_stage("gate:val"), base.for_stage("test")
    assert (base.stage, gate.stage, test.stage) == ("rollout", "gate", "test")
    assert base.for_stage("rollout") is base and gate.inner is inner and gate.sink is ledger
    assert bind_stage(base, "test").stage == "test" and bind_stage(inner, "test") is inner  # unmetered: as is
    with pytest.raises(AttributeError):
        base.stage = "gate"  # type: ignore[misc]  # no shared mutable stage any more
    # four runs in flight at once on different threads, each phase with its own stage
    calls = [(gate, Item("a", "x")), (test, Item("b", "y")), (gate, Item("again", "z")), (test, Item("bad", "w"))]
    errors: list[BaseException] = []

    def go(student: MeteredStudent, item: Item) -> None:
        try:
            student.run("skill", item)
        except LLMError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=call) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    snap = ledger.snapshot()
    assert snap["by_stage"] == {"gate": Usage(1, 10, 2).to_dict(), "test": Usage(1, 10, 2).to_dict()}
    assert snap["saved_calls"] == {"gate": 1} and snap["errors"] == {"test": 1} and len(errors) == 1
    assert snap["by_role"]["student"]["calls"] == 2


def test_metered_student_forwards_identity(fake_server):
    cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "small",
                                      "student": {"base_url": fake_server.openai_base_url}}})
    student = MeteredStudent(build_student(cfg, None, environ={}), Ledger())
    assert student.id.startswith("chat:openai:small@127.0.0.1:")
    assert student.cache_identity == "chat:openai:small"
    # the simulation has no cache identity of its own: readers fall back to `id` (cache.model_identity)
    simulated = MeteredStudent(build_student(config_from_dict({}), None, environ={}), Ledger())
    assert not hasattr(simulated, "cache_identity") and simulated.id.startswith("chat:simulated:sim-student")
