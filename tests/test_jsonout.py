"""Tolerant JSON extraction and the one repair round of complete_json."""

from __future__ import annotations

import pytest

from skillgit.llm.base import LLMError, Message, Reply, Request
from skillgit.llm.jsonout import JsonResult, complete_json, extract_json
from skillgit.types import Usage

SCHEMA = {"type": "object", "properties": {"edits": {"type": "array"}}, "required": ["edits"]}
REQ = Request((Message("system", "You are a teacher."), Message("user", "<stage>reflect</stage>\nPropose edits.")),
              stage="reflect", json_schema=SCHEMA)


@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ('  \n{"a": [1, 2]}\n', {"a": [1, 2]}),
    ('Here you go:\n```json\n{"a": 1}\n```\nHope that helps.', {"a": 1}),
    ('```\n{"a": "x"}\n```', {"a": "x"}),
    ('Sure! The answer is {"a": {"b": "}"}} and that is all.', {"a": {"b": "}"}}),
    ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
    ('<think>maybe {"wrong": true</think>{"a": 2}', {"a": 2}),
    ('first {not json} then {"a": 3}', {"a": 3}),
    ('{"s": "a comma, inside ,}"}', {"s": "a comma, inside ,}"}),
])
def test_extract_json_accepts(text, expected):
    obj, error = extract_json(text)
    assert error is None and obj == expected


def test_extract_json_accepts_raw_control_characters_in_strings():
    # what small local models really send: literal newlines and tabs inside a string value (strict json.loads
    # refuses them with "Invalid control character")
    text = '{"skill": "# Title\n\nLine one\n\tindented", "n": 1}'
    assert "\n" in text and "\\n" not in text  # raw characters, not escapes
    obj, error = extract_json(text)
    assert error is None and obj == {"skill": "# Title\n\nLine one\n\tindented", "n": 1}
    fenced, error = extract_json('Here:\n```json\n{"a": "x\ny",}\n```')  # raw newline and a trailing comma
    assert error is None and fenced == {"a": "x\ny"}


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("I cannot help with that.", "no JSON object"),
    ('{"a": 1', "invalid JSON"),
    ("[1, 2, 3]", "expected a JSON object"),
    ('{"a": tru}', "invalid JSON"),
])
def test_extract_json_rejects_with_a_reason(text, fragment):
    obj, error = extract_json(text)
    assert obj is None and fragment in error


class Replies:
    """An LLM answering with scripted texts (or raising scripted errors); records requests."""

    def __init__(self, *items):
        self.items = list(items)
        self.requests: list[Request] = []

    id = "replies:model"

    def complete(self, request):
        self.requests.append(request)
        item = self.items.pop(0)
        if isinstance(item, Exception):
            raise item
        return Reply(item, Usage(calls=1, prompt_tokens=10, completion_tokens=5, cost_usd=0.001))


def test_first_reply_good():
    llm = Replies('{"edits": []}')
    result = complete_json(llm, REQ)
    assert result == JsonResult({"edits": []}, '{"edits": []}', None, Usage(1, 10, 5, 0, 0, 0.001), 1)
    assert result.ok and llm.requests[0] is REQ


def test_one_repair_round_with_the_bad_text_and_the_error():
    llm = Replies("I would add a rule about units.", 'Fixed: {"edits": [{"op": "append"}]}')
    result = complete_json(llm, REQ)
    assert result.obj == {"edits": [{"op": "append"}]} and result.error is None
    assert result.attempts == 2 and result.usage.calls == 2 and result.usage.prompt_tokens == 20
    repair = llm.requests[1]
    assert repair.messages[:2] == REQ.messages
    assert repair.messages[2] == Message("assistant", "I would add a rule about units.")
    assert repair.messages[3].role == "user"
    assert "no JSON object" in repair.messages[3].content and '"edits"' in repair.messages[3].content
    assert repair.json_schema == SCHEMA and repair.stage == "reflect"


def test_gives_up_after_one_repair_without_raising():
    llm = Replies("no json here", "still none")
    result = complete_json(llm, REQ)
    assert result.obj is None and not result.ok
    assert "no JSON object" in result.error and result.text == "still none"
    assert result.attempts == 2 and result.usage.calls == 2 and len(llm.requests) == 2


def test_validator_failures_trigger_repair_and_are_recorded():
    def validate(obj):
        if not isinstance(obj.get("edits"), list):
            return "edits must be a list"
        if any("op" not in e for e in obj["edits"]):
            raise ValueError("every edit needs an op")
        return None

    llm = Replies('{"edits": "append"}', '{"edits": [{"content": "x"}]}')
    result = complete_json(llm, REQ, validate=validate)
    assert result.obj is None and result.error == "ValueError: every edit needs an op"
    assert "edits must be a list" in llm.requests[1].messages[-1].content

    ok = complete_json(Replies('{"edits": "x"}', '{"edits": [{"op": "append"}]}'), REQ, validate=validate)
    assert ok.obj == {"edits": [{"op": "append"}]} and ok.attempts == 2


def test_api_errors_propagate():
    boom = LLMError("HTTP 401", kind="auth")
    with pytest.raises(LLMError) as info:
        complete_json(Replies(boom), REQ)
    assert info.value is boom
    # a failure in the repair call propagates as well (the caller decides what an API failure means)
    with pytest.raises(LLMError):
        complete_json(Replies("bad", LLMError("HTTP 500", kind="server", retryable=True)), REQ)


def test_a_reply_cut_off_at_the_output_limit_is_asked_again_shorter_without_quoting_it():
    # a small local model rambling inside a string until max_tokens (bench/local_llm.py saw this)
    cut = Reply('{"edits": [{"op": "append", "content": "Always answer with the full', trace="finish_reason=length")

    class CutThenGood(Replies):
        def complete(self, request):
            self.requests.append(request)
            return cut if len(self.requests) == 1 else Reply('{"edits": []}')

    llm = CutThenGood()
    result = complete_json(llm, REQ)
    assert result.obj == {"edits": []} and result.attempts == 2
    retry = llm.requests[1]
    assert retry.messages[:2] == REQ.messages and len(retry.messages) == 3  # the cut-off text is not sent back
    assert "cut off at the output limit" in retry.messages[2].content and "short" in retry.messages[2].content

    class AlwaysCut(Replies):
        def complete(self, request):
            self.requests.append(request)
            return Reply('{"edits": [', trace="stop_reason=max_tokens")

    failed = complete_json(AlwaysCut(), REQ)
    assert failed.obj is None and failed.error == "cut off at the output limit before the JSON object was complete"
    # a complete object in a reply that also hit the limit is used as it is
    class Whole(Replies):
        def complete(self, request):
            self.requests.append(request)
            return Reply('{"edits": []} and then more prose that ran out', trace="finish_reason=length")

    assert complete_json(Whole(), REQ).obj == {"edits": []}
