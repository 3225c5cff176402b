"""What harvest's speed work must not change: the session digest (`sleep/harvest_digest.py`) changes exactly when
a session's turns do and keeps an older state's digests valid; the reader's lean paths read what its general path
reads; the scanner finds what it found before."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillgit.sleep import HarvestState, harvest
from skillgit.sleep.harvest import FileState, SessionMark
from skillgit.sleep.harvest_digest import DIGEST_PREFIX, digest, digest_v1, same
from skillgit.sleep.model import Session, SkillUse, ToolCall, ToolResult, Turn
from tests.test_sleep_harvest import ClaudeSession, make_repo


def _session() -> Session:
    call = ToolCall("Bash", "pytest -q", "pytest -q", ("tests/a.py",), False, "t1")
    result = ToolResult("1 failed", True, "t1", 1)
    return Session("claude", "s1", turns=(
        Turn("user", "fix it", timestamp="2025-01-01T00:00:00Z"),
        Turn("assistant", "ran", (call,), (result,), "2025-01-01T00:00:01Z", (SkillUse("x", "skill", "tool", "p"),)),
    ))


def test_the_digest_changes_with_every_field_a_turn_serialises_and_only_with_them():
    base = _session()
    user, agent = base.turns
    call, result, skill = agent.tool_calls[0], agent.tool_results[0], agent.skills[0]
    variants = [
        (replace(user, role="assistant"), agent), (replace(user, text="fix it!"), agent),
        (replace(user, timestamp=None), agent), (replace(user, timestamp=""), agent),
        (user, replace(agent, text="")), (user, replace(agent, tool_calls=())),
        *((user, replace(agent, tool_calls=(replace(call, **{k: v}),))) for k, v in (
            ("name", "bash"), ("summary", "pytest"), ("command", None), ("command", ""), ("paths", ()),
            ("paths", ("tests/a.p", "y")), ("writes", True), ("call_id", "t2"))),
        *((user, replace(agent, tool_results=(replace(result, **{k: v}),))) for k, v in (
            ("output", "1 failed "), ("is_error", False), ("call_id", ""), ("exit_code", None), ("exit_code", 0))),
        *((user, replace(agent, skills=(replace(skill, **{k: v}),))) for k, v in (
            ("name", "y"), ("kind", "instructions"), ("how", "read"), ("path", None), ("path", ""))),
        (user, replace(agent, skills=())), (user,), (user, agent, Turn("user", "more")),
    ]
    seen = {digest(base)}
    for turns in variants:
        found = digest(replace(base, turns=turns))
        assert found not in seen, f"two different sessions share a digest: {turns}"
        seen.add(found)
    # a field moved across a boundary ("fix it" + "ran" vs "fix i" + "tran") is another session
    shifted = (replace(user, text="fix i"), replace(agent, text="tran"))
    assert digest(replace(base, turns=shifted)) not in seen
    # what is not serialised does not count: the session's other fields, a reader's cut margins
    cut = replace(agent, tool_results=(replace(result, cut=(3, "raw", "raw")),))
    assert digest(replace(base, session_id="s2", cwd="/x", turns=(user, cut))) == digest(base)
    assert digest(base).startswith(DIGEST_PREFIX) and same(digest(base), base, digest(base))


def test_a_state_written_with_the_older_digests_finds_its_unchanged_sessions_unchanged(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    written = ClaudeSession("aaaa0001", repo).user("fix the parser").say("done").bash("pytest", "1 passed").write(home)
    first = harvest(["claude"], home, repo, [], HarvestState(), remote_lookup=None)
    session = first.sessions[0]
    # the state an older skillgit saved: the same marks, with the JSON digest of the turns
    older = HarvestState({key: FileState(f.fingerprint, {sid: SessionMark(digest_v1(session), m.turns)
                                                         for sid, m in f.sessions.items()})
                          for key, f in first.state.files.items()})
    older = HarvestState.from_json(older.to_json())
    assert not next(iter(older.files.values())).sessions["aaaa0001"].digest.startswith(DIGEST_PREFIX)
    os.utime(written, ns=(written.stat().st_atime_ns, written.stat().st_mtime_ns + 10**9))  # read again
    again = harvest(["claude"], home, repo, [], older, remote_lookup=None)
    assert again.files_read == 1 and again.sessions == ()
    mark = next(iter(again.state.files.values())).sessions["aaaa0001"]
    assert mark.digest == digest(session)  # the state moves to the new digest
    # a session that grew since the older state is found, from its first new turn
    (ClaudeSession("aaaa0001", repo).user("fix the parser").say("done").bash("pytest", "1 passed")
     .user("now the docs").say("ok").write(home))
    grown = harvest(["claude"], home, repo, [], older, remote_lookup=None)
    assert [s.session_id for s in grown.sessions] == ["aaaa0001"]
    assert grown.first_new_turn["claude:aaaa0001"] == len(session.turns)


def test_a_lone_surrogate_in_a_transcript_does_not_stop_the_harvest(tmp_path):
    # JSON may spell a lone surrogate (`\ud800`); the digest of such a session raised UnicodeEncodeError and
    # stopped the whole harvest
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    target = ClaudeSession("bbbb0001", repo).user("fix \ud800 this").say("ok").write(home)
    assert "\\ud800" in target.read_text()
    ClaudeSession("bbbb0002", repo).user("and this one").say("ok").write(home)
    result = harvest(["claude"], home, repo, [], HarvestState(), remote_lookup=None)
    assert sorted(s.session_id for s in result.sessions) == ["bbbb0001", "bbbb0002"]
    again = harvest(["claude"], home, repo, [], HarvestState.from_json(result.state.to_json()), remote_lookup=None)
    assert again.sessions == () and again.files_unchanged == 2
    assert json.loads(result.state.to_json())  # the state stays JSON


def _exit_reference(text: str) -> int | None:
    from skillgit.sleep.readers._common import _EXIT_CODE

    match = _EXIT_CODE.search(text)
    return int(match.group(1)) if match else None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["exit", "EXIT", "Exıt", "EXİT", "exited", " with", " code", " status", "proceſs ",
                                 "process ", "Process exited with code", ": ", " ", "-", "2", "17", "é", "…", "→",
                                 "\n", "xexit", "exit_code", "ı", "ſ", "K"]), max_size=14).map("".join))
def test_the_exit_code_is_the_regex_search_whatever_the_characters_around_it(text):
    # the reader finds "exit" on a one-byte-per-character copy of the text; a search of the whole text is the
    # definition (non-ASCII text included: `(?i)` matches ı and İ for i, ſ for s)
    from skillgit.sleep.readers._common import exit_code_in

    assert exit_code_in(text) == _exit_reference(text)
    assert exit_code_in("ü " + text) == _exit_reference("ü " + text)


def test_the_exit_code_of_text_that_is_not_ascii():
    from skillgit.sleep.readers._common import exit_code_in

    assert exit_code_in("… FAILED tests/test_ü.py\nExit code 2") == 2
    assert exit_code_in("→ proceſs exited with code 3") == 3
    assert exit_code_in("EXİT CODE 4 …") == 4 and exit_code_in("exıt status 5") == 5
    assert exit_code_in("ééé exit\u00a0code 6") == _exit_reference("ééé exit\u00a0code 6")
    assert exit_code_in("… nothing to see") is None


def _json_line_reference(line: str) -> object:
    """What the reader made of a line before its fast path: json.loads, else json.loads of the stripped line."""
    if not line or line.isspace():
        return "blank"
    for text in (line, line.strip()):
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        return obj if isinstance(obj, dict) else "malformed"
    return "malformed"


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(['{"a": 1}', '{"type":"user","x":[1,{"y":"\\u00e9\\n"}]}', "{", "}", " ", "\t",
                                 "\n", "\r", "\x0c", "\u00a0", "\u2028", "[1]", '"s"', "x", "{}", ",", '{"a":',
                                 "NaN", '"\\ud800"', "1e999"]), max_size=6).map("".join))
def test_a_jsonl_line_is_read_as_json_loads_read_it(line):
    from collections import Counter

    from skillgit.sleep.readers._common import _json_line

    counts: Counter[str] = Counter()
    got = _json_line(line, counts)
    expected = _json_line_reference(line)
    if expected == "blank":
        assert got is None and not counts
    elif expected == "malformed":
        assert got is None and counts["<malformed>"] == 1
    else:
        assert got == expected and not counts


_JSONL_PIECES = [
    b'{"a": 1}', b'{"type":"user","x":[1,{"y":"\\u00e9\\n"}],"n":-0.0}', b"{", b"}", b" ", b"\t", b"\n", b"\r",
    b"\r\n", b"\x0c", b"\xc2\xa0", b"\xe2\x80\xa8", b"[1]", b'"s"', b"x", b"{}", b",", b'{"a":', b'{"a":NaN}',
    b'{"a":-Infinity}', b'{"a":1e999}', b'{"a":"\\ud800"}', b'{"a":"\\ud83d\\ude00"}',
    b'{"a":123456789012345678901234567890}', b'{"a":-9223372036854775809}', b'{"a":0.1e-400}', b'{"a":1,"a":2}',
    b'{"a":"\xff"}', b'{"\xe2\x82\xac":"\xed\xa0\x80"}', b"\xef\xbb\xbf", b"\xe2\x82", b'{"a":"x\ty"}',
    b'{"a":"\\q"}', b'{"a":01}', b'{"a":1}{"b":2}', b'{"a":' + b"[" * 40 + b"]" * 40 + b"}",
    b"[" * 3000 + b"]" * 3000, b'{"z":3.141592653589793238462643383279}', b'{"big":1E+308,"t":true}', b'{"a":\r1}',
    b'{"a":\r\n1}']


def _fast_decoders() -> dict[str, object]:
    """The decoders `read_jsonl` may hand lines to: jiter's (the default install) and msgspec's (the `fast` extra,
    which the `test` extra installs; a venv without it tests jiter's alone)."""
    from skillgit.sleep.readers._common import _jiter_decoder

    jiter = _jiter_decoder()
    assert jiter is not None  # the openai and anthropic SDKs install it
    try:
        import msgspec
    except ImportError:
        return {"jiter": jiter}
    return {"jiter": jiter, "msgspec": msgspec.json.Decoder().decode}


class _Decoding:
    """`read_jsonl` with the named decoder for the duration of a `with` block (no fixture: hypothesis reuses none)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        from skillgit.sleep.readers import _common

        self.saved = list(_common._DECODE), list(_common._JITER)
        decode = _fast_decoders().get(self.name, _fast_decoders()["jiter"])
        _common._DECODE[:] = [decode]
        _common._JITER[:] = [decode if decode is _fast_decoders()["jiter"] else None]

    def __exit__(self, *exc: object) -> None:
        from skillgit.sleep.readers import _common

        _common._DECODE[:], _common._JITER[:] = self.saved


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_JSONL_PIECES), max_size=10).map(b"".join), st.sampled_from(["msgspec", "jiter"]))
@example(b'{\r}\n{"a":1}', "msgspec")
@example(b'{"a":"\xff"}\n{"a":NaN}\r\n', "msgspec")
@example(b'{\r}\n{"a":1}', "jiter")
@example(b'{"a":"\xff"}\n{"a":NaN}\r\n', "jiter")
@example(b'{"a":"\\u00e9\\ud83d\\ude00"}\n', "jiter")  # jiter 0.4 read \u escapes wrongly: JITER_MIN
def test_a_jsonl_file_is_read_as_its_text_definition_reads_it(tmp_path_factory, data, decoder):
    # read_jsonl reads bytes and decodes most lines with msgspec or jiter; its definition reads the file as text and
    # each line with json.loads: the same records (equal and of the same types, key order included) and counts
    from collections import Counter

    from skillgit.sleep.readers._common import read_jsonl, read_jsonl_text

    path = tmp_path_factory.mktemp("jsonl") / "s.jsonl"
    path.write_bytes(data)
    fast_counts: Counter[str] = Counter()
    slow_counts: Counter[str] = Counter()
    with _Decoding(decoder):
        fast = list(read_jsonl(path, fast_counts))
    slow = list(read_jsonl_text(path, slow_counts))
    assert repr(fast) == repr(slow) and fast_counts == slow_counts


def test_without_msgspec_lines_go_to_jiter_and_read_as_the_definition_reads_them(monkeypatch, tmp_path):
    # the default install (no `fast` extra) decodes with jiter, which the SDKs install; the shipped transcripts and
    # every odd piece read alike
    from collections import Counter

    from skillgit.sleep.readers import _common

    jiter = _fast_decoders()["jiter"]
    monkeypatch.setitem(__import__("sys").modules, "msgspec", None)  # `import msgspec` fails as without the extra
    monkeypatch.setattr(_common, "_DECODE", [])
    monkeypatch.setattr(_common, "_JITER", [None])
    assert _common._decoder() is jiter and _common._JITER[0] is jiter
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(b"\n".join(_JSONL_PIECES))
    files = sorted((Path(__file__).parent / "fixtures" / "transcripts").rglob("*.jsonl"))
    for file in [*files, odd]:
        fast_counts: Counter[str] = Counter()
        slow_counts: Counter[str] = Counter()
        fast, slow = list(_common.read_jsonl(file, fast_counts)), list(_common.read_jsonl_text(file, slow_counts))
        assert repr(fast) == repr(slow) and fast_counts == slow_counts
    monkeypatch.setattr(_common, "JITER_MIN", (999, 0))  # an older jiter than the one checked is not used
    assert _common._jiter_decoder() is None


def test_jiter_is_not_used_under_a_lowered_integer_digit_limit(tmp_path):
    # jiter reads integers of up to 4,300 digits whatever the limit; json.loads refuses those over
    # sys.get_int_max_str_digits(): under a lowered limit the line must be refused as the definition refuses it
    import sys
    from collections import Counter

    from skillgit.sleep.readers._common import read_jsonl, read_jsonl_text

    path = tmp_path / "big.jsonl"
    path.write_text('{"n": ' + "7" * 2000 + '}\n{"a": 1}\n', encoding="utf-8")
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(1000)
    try:
        fast_counts: Counter[str] = Counter()
        slow_counts: Counter[str] = Counter()
        with _Decoding("jiter"):
            fast = list(read_jsonl(path, fast_counts))
        slow = list(read_jsonl_text(path, slow_counts))
    finally:
        sys.set_int_max_str_digits(before)
    assert fast == slow == [{"a": 1}] and fast_counts == slow_counts == {"<malformed>": 1}


def test_jsonl_is_decoded_by_msgspec_where_the_definition_allows():
    from collections import Counter

    from skillgit.sleep.readers import _common

    assert _common._decoder() is not None  # a fast decoder is installed (msgspec with the `fast` extra, else jiter)
    # what goes the definition's way: lines holding \r, non-objects, what msgspec rejects and json accepts
    assert _common._text_lines(b'{"a":1}\r{"b":\r\n2}\n') == ['{"a":1}\n', '{"b":\n', "2}\n"]
    assert _common._text_lines(b"{}\r") == ["{}\n"] and _common._text_lines(b"\xff{}\n") == ["\ufffd{}\n"]
    path = Path(__file__).parent / "fixtures" / "transcripts" / "claude"
    for file in sorted(path.rglob("*.jsonl")):
        fast_counts: Counter[str] = Counter()
        slow_counts: Counter[str] = Counter()
        assert list(_common.read_jsonl(file, fast_counts)) == list(_common.read_jsonl_text(file, slow_counts))
        assert fast_counts == slow_counts


def test_without_msgspec_every_line_is_read_by_the_definition(monkeypatch, tmp_path):
    # msgspec is the optional `fast` extra: a plain `pip install` reads the same records without it
    from collections import Counter

    from skillgit.sleep.readers import _common

    monkeypatch.setattr(_common, "_DECODE", [None])
    files = sorted((Path(__file__).parent / "fixtures" / "transcripts" / "claude").rglob("*.jsonl"))
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(b"".join(_JSONL_PIECES))
    for file in [*files, odd]:
        plain_counts: Counter[str] = Counter()
        text_counts: Counter[str] = Counter()
        plain, text = list(_common.read_jsonl(file, plain_counts)), list(_common.read_jsonl_text(file, text_counts))
        assert repr(plain) == repr(text) and plain_counts == text_counts


def test_records_are_copied_as_dataclasses_replace_copies_them():
    from skillgit.sleep import scrub

    session = _session()
    user, agent = session.turns
    assert scrub._PLAIN  # the fast copy is in use (a record with __post_init__ or slots would take replace)
    for record, changes in ((session, {"cwd": "/x"}), (agent, {"text": "t", "skills": ()}),
                            (agent.tool_calls[0], {"summary": "s", "paths": ("p",)}),
                            (agent.tool_results[0], {"output": "o", "cut": None}), (agent.skills[0], {"path": None})):
        before = replace(record)
        copy = scrub._with(record, **changes)
        assert copy == replace(record, **changes) and type(copy) is type(record) and copy is not record
        assert record == before and record.__dict__ == before.__dict__  # the original is left as it was


def test_the_reader_makes_the_records_their_init_makes():
    from dataclasses import fields

    from skillgit.sleep.readers import _common

    assert _common._PLAIN  # the records are made by filling their __dict__ (see `_new`)
    call = _common.tool_call("Edit", {"file_path": "a.py", "path": "b.py", "old_string": "x"}, "e1")
    assert set(vars(call)) == {f.name for f in fields(ToolCall)}
    assert call == ToolCall("Edit", "a.py", None, ("a.py", "b.py"), True, "e1") and hash(call) == hash(
        ToolCall("Edit", "a.py", None, ("a.py", "b.py"), True, "e1"))
    result = _common.tool_result("a" * 3000 + "\nExit code 2", False, "t1")
    assert set(vars(result)) == {f.name for f in fields(ToolResult)}
    assert result == ToolResult(result.output, True, "t1", 2) and result.cut is not None
    assert _common.tool_result("ok", call_id="t2") == ToolResult("ok", False, "t2", None)


def test_an_excerpt_nothing_is_masked_in_comes_back_as_the_reader_cut_it_and_one_with_a_mask_does_not():
    from skillgit.sleep.readers._common import tool_result
    from skillgit.sleep.scrub import build_scrubber

    scrubber = build_scrubber(environ={}, homes=[])
    clean = tool_result("x" * 1000 + "y" * 1500 + "z" * 1000, call_id="t")
    secret = tool_result("x" * 1000 + "y" * 1500 + ' token = "ghp_' + "a1B2c3D4e5" * 4 + '" ' + "z" * 1000,
                         call_id="t")
    session = Session("claude", "s", turns=(Turn("user", "go"), Turn("assistant", "", (), (clean, secret))))
    out, counts = scrubber.scrub_session(session)
    kept_clean, kept_secret = out.turns[1].tool_results
    assert kept_clean.output == clean.output and kept_clean.cut is None and kept_clean == clean
    assert counts.secrets == 1 and "ghp_" in kept_secret.output and "a1B2c3D4e5" not in kept_secret.output


def _homes_reference(text: str) -> str:
    """Home paths masked as the scrubber masked them before its `sers` gate: each literal tested on its own."""
    from skillgit.sleep.scrub import _HOME_GATES, _home_repl

    for literals, pattern in _HOME_GATES:
        if any(literal in text for literal in literals):
            text = pattern.subn(_home_repl, text)[0]
    return text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["C:", "c:", "\\", "\\\\", "/", "Users", "users", "USERS", "uSERS", "home", "root",
                                 "bob", "Bob Ray", " ", "\n", "parsers", "x.py", "~", "/home/", "/Users/", "/root"]),
                max_size=12).map("".join))
def test_home_paths_are_masked_as_each_literal_alone_masked_them(text):
    from skillgit.sleep.scrub import build_scrubber

    scrubber = build_scrubber(environ={}, homes=[])
    assert scrubber.text(text) == _homes_reference(text)


def test_home_paths_in_every_casing_the_gates_know():
    from skillgit.sleep.scrub import build_scrubber

    scrub = build_scrubber(environ={}, homes=[]).text
    assert scrub(r"see C:\Users\bob\x and c:/users/ann/y") == "see ~/x and ~/y"
    assert scrub("C:\\USERS\\BOB\\z") == "~/z" and scrub("/Users/bob/x /home/ann/y /root/z") == "~/x ~/y ~/z"
    assert scrub("the parsers and their users") == "the parsers and their users"


_AROUND_THE_CUT = st.tuples(
    st.integers(min_value=0, max_value=2400), st.integers(min_value=0, max_value=3200),
    st.sampled_from(["Exit code 2", "exited with code 17", "EXİT STATUS 4", "process exited with code -3", "exit",
                     "code 5", "exit code:\n 9", "proceſs exited with code 6", "exit code 12345678"]),
    st.sampled_from(["", "…", "é", "ı", "x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_AROUND_THE_CUT, max_size=4))
def test_a_cut_outputs_exit_code_is_the_one_its_excerpt_shows(placed):
    # the reader looks for it in the output's head and tail, not in the excerpt it made of them (head, marker,
    # tail); phrases placed across the head's end, the tail's start and inside the part cut must not tell
    from skillgit.sleep.readers._common import HEAD_CHARS, TAIL_CHARS, excerpt, tool_result

    for size, _at, _phrase, _extra in placed or [(2500, 0, "", "")]:
        chars = list(("lorem ipsum " * 400)[:HEAD_CHARS + TAIL_CHARS + 1 + size])
        for _size, at, phrase, extra in placed:
            at = min(at, len(chars))
            chars[at:at] = list(extra + phrase)
        output = "".join(chars)
        result = tool_result(output)
        assert result.exit_code == _exit_reference(excerpt(output))
        assert result.output == excerpt(output) and result.is_error == bool(result.exit_code)


def test_a_cut_outputs_exit_code_around_the_marker():
    from skillgit.sleep.readers._common import HEAD_CHARS, TAIL_CHARS, excerpt, tool_result

    filler = " " + "y" * (HEAD_CHARS + TAIL_CHARS)
    cases = {  # output → the exit code its excerpt shows
        "x" * (HEAD_CHARS - 12) + " exit code 3" + filler: 3,  # the head ends with the phrase
        "x" * (HEAD_CHARS - 12) + " exit code 44" + filler: 4,  # the cut splits the number: the head's part
        "x" * (HEAD_CHARS - 8) + " exit code 5" + filler: None,  # the cut splits the phrase
        filler + " exit code: " + "z" * TAIL_CHARS: None,  # the phrase in the part cut
        filler + " exit code 7 " + "z" * (TAIL_CHARS - 13): 7,  # at the tail's start
        filler + "exit code 8 " + "z" * (TAIL_CHARS - 12): 8,  # the tail starts with it (a word starts there)
        "exit code 1 " + filler + " exit code 9": 1,  # the head's comes first
    }
    for output, code in cases.items():
        assert _exit_reference(excerpt(output)) == code, output[:40]
        assert tool_result(output).exit_code == code and tool_result(output).is_error == bool(code)


def _digest_definition(session: Session) -> str:
    """The contract's digest, spelled as it reads: a header of the strings' lengths and the other fields, then the
    strings joined into one run, encoded as UTF-8 (lone surrogates passed through)."""
    import hashlib

    texts: list[str] = []
    shape: list[object] = []
    for turn in session.turns:
        texts += (turn.role, turn.text, turn.timestamp or "")
        shape += (len(turn.tool_calls), len(turn.tool_results), len(turn.skills), turn.timestamp is None)
        for call in turn.tool_calls:
            texts += (call.name, call.summary, call.command or "", call.call_id, *call.paths)
            shape += (len(call.paths), call.command is None, call.writes)
        for result in turn.tool_results:
            texts += (result.output, result.call_id)
            shape += (result.is_error, result.exit_code)
        for use in turn.skills:
            texts += (use.name, use.kind, use.how, use.path or "")
            shape.append(use.path is None)
    hashed = hashlib.sha256(repr(([len(t) for t in texts], shape)).encode("ascii") + b"\x00")
    hashed.update("".join(texts).encode("utf-8", "surrogatepass"))
    return DIGEST_PREFIX + hashed.hexdigest()[:20]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from("ab \n…é€\U0001F600\ud800\udc00\udfff\x00"), max_size=6), min_size=6,
                max_size=6))
def test_the_digest_is_its_definition_whatever_the_characters(parts):
    # the digest encodes each string on its own and joins the bytes; the definition encodes the strings joined:
    # the same bytes for ASCII, Latin-1, BMP and astral characters and for lone surrogates either side of a join
    text, output, summary, command, path, name = parts
    call = ToolCall("Bash", summary, command, (path, name), False, "c1")
    session = Session("claude", "s1", turns=(
        Turn("user", text, timestamp="2025-01-01T00:00:00Z"),
        Turn("assistant", name, (call,), (ToolResult(output, False, "c1", None),), None,
             (SkillUse(name, "skill", "read", path or None),))))
    assert digest(session) == _digest_definition(session)


def test_a_summary_is_collapsed_as_split_and_join_collapse_it_whatever_the_character():
    # `short` skips " ".join(text.split()) for a printable text without " ": str.split() splits at the characters
    # str.isspace() names, and no printable one but " " is among them, in the whole of Unicode
    import sys

    from skillgit.sleep.readers._common import short

    chars = map(chr, range(sys.maxunicode + 1))
    assert [hex(ord(c)) for c in chars if c.isspace() and c.isprintable() and c != " "] == []
    for text in ("a\u00a0b", "a\u3000b", "a\x1cb", "a\u2028b", " a", "a\tb", "src/app.py", "x\u200bb", "é…", ""):
        assert short(text) == " ".join(text.split()), repr(text)
