"""A kept excerpt never shows more than its limit, and its "[N chars cut]" counts exactly what it neither shows nor
masks: `Scrubber.scrub_session` scrubs a cut output with the raw margins around each cut (so a secret the cut split
is masked on the kept side), then drops the margins. A mask lying wholly in a margin used to keep the margin's text
up to it (a read preview showed up to 160 characters past its 600) and the count then overstated."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillgit.sleep.model import Session, ToolCall, Turn
from skillgit.sleep.readers._common import CUT_MARGIN, HEAD_CHARS, TAIL_CHARS, tool_result
from skillgit.sleep.scrub import PREVIEW_CHARS, build_scrubber, previews

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # 40 characters; masked as ghp_***
MARKER = re.compile(r"\n…\[(\d+) chars cut\]…\n")
SCRUBBER = build_scrubber(None, homes=["/home/user"])


def _kept(output: str, command: str | None = None) -> str:
    """What harvest keeps of `output` as a tool call's result: a read's preview, a command's excerpt."""
    result = tool_result(output, call_id="t1")
    call = ToolCall("Bash" if command else "Read", command or "f.py", command, () if command else ("f.py",),
                    False, "t1")
    session = Session("claude", "s", turns=(Turn("user", "go"), Turn("assistant", "", (call,), (result,))))
    clean, _ = SCRUBBER.scrub_session(previews(session))
    return clean.turns[1].tool_results[0].output


def _parts(kept: str) -> tuple[str, int, str]:
    match = MARKER.search(kept)
    assert match is not None, kept[-80:]
    return kept[:match.start()], int(match.group(1)), kept[match.end():]


def _filler(n: int, char: str = "x") -> str:
    return (f"{char} " * n)[:n]


def test_a_secret_wholly_in_a_read_previews_margin_shows_nothing_past_the_preview():
    output = _filler(PREVIEW_CHARS + 20) + " token = " + TOKEN + " " + _filler(3000, "z")
    head, cut, _ = _parts(_kept(output))
    assert head == output[:PREVIEW_CHARS]  # not the margin's text up to the mask, nor the mask
    assert cut == len(output) - PREVIEW_CHARS
    assert TOKEN[4:12] not in _kept(output)


def test_a_secret_across_a_read_previews_cut_is_masked_and_the_count_leaves_out_what_the_mask_covers():
    at = PREVIEW_CHARS - 10  # the token starts in the preview and ends 30 characters into the margin
    output = _filler(at - 1) + " " + TOKEN + " " + _filler(3000, "z")
    head, cut, _ = _parts(_kept(output))
    assert head == output[:at] + "ghp_***"
    assert cut == len(output) - (at + len(TOKEN))  # the 30 masked characters past the preview are not "cut"
    assert TOKEN[4:] not in head


def test_a_secret_wholly_in_the_margin_before_a_commands_tail_shows_nothing_before_the_tail():
    size = HEAD_CHARS + TAIL_CHARS + 2000
    tail_at = size - TAIL_CHARS
    output = _filler(tail_at - 100) + " token = " + TOKEN + " " + _filler(size, "z")[:size - (tail_at - 50)]
    output = output[:size]
    kept = _kept(output, "pytest -q")
    head, cut, tail = _parts(kept)
    assert head == output[:HEAD_CHARS] and tail == output[len(output) - TAIL_CHARS:]
    assert cut == len(output) - HEAD_CHARS - TAIL_CHARS


def test_a_secret_across_a_commands_tail_cut_is_masked_on_the_tail_side():
    size = HEAD_CHARS + TAIL_CHARS + 2000
    tail_at = size - TAIL_CHARS
    start = tail_at - 15  # 15 characters of the token before the tail
    output = (_filler(start - 1) + " " + TOKEN + " " + _filler(size, "z"))[:size]
    head, cut, tail = _parts(_kept(output, "pytest -q"))
    assert head == output[:HEAD_CHARS]
    # the mask (after the token's readable "ghp_", which lies in the margin and goes with it) starts the tail
    assert tail == "***" + output[start + len(TOKEN):]
    assert cut == len(output) - HEAD_CHARS - TAIL_CHARS - 11  # the 11 masked characters before the tail


def test_masks_of_every_kind_in_and_past_the_preview():
    # a home path and an address in the preview are kept masked; a token and an address wholly in the margin go
    inside = " /home/bob/src/app.py bob@example.com "
    output = (_filler(200) + inside + _filler(PREVIEW_CHARS - 200 - len(inside) + 5) + " key=" + TOKEN
              + " eve@example.org " + _filler(3000, "z"))
    head, cut, _ = _parts(_kept(output))
    expected_head = (_filler(200) + " ~/src/app.py <email> " + _filler(PREVIEW_CHARS - 200 - len(inside)))
    assert head == expected_head and cut == len(output) - PREVIEW_CHARS


def test_nothing_masked_keeps_the_excerpt_as_the_reader_cut_it():
    output = _filler(5000)
    assert _kept(output, "pytest -q") == tool_result(output).output
    head, cut, _ = _parts(_kept(output))
    assert head == output[:PREVIEW_CHARS] and cut == len(output) - PREVIEW_CHARS


_PIECES = st.sampled_from([" ", "x", "word ", "\n", TOKEN, " token = " + TOKEN, " /home/bob/x ", " a@b.io ",
                           "xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJklmn", " password: hunter2hunter2 "])


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=40), st.integers(min_value=0, max_value=2 * CUT_MARGIN),
       st.booleans())
@example(pieces=[" /home/bob/x "], shift=158, command=False)  # a home path's `~/` across the cut (found by hypothesis)
def test_a_kept_excerpt_stays_within_its_limit_and_counts_what_it_drops(pieces, shift, command):
    body = "".join(pieces)
    output = _filler(max(0, PREVIEW_CHARS - CUT_MARGIN + shift)) + body + _filler(HEAD_CHARS + TAIL_CHARS, "z") + body
    kept = _kept(output, "make test" if command else None)
    head, cut, tail = _parts(kept)
    limit = HEAD_CHARS if command else PREVIEW_CHARS
    # a mask reaching across the cut is kept whole: at most its token past the limit, never raw margin text (a home
    # path's `~/` too: the allowance left it out, and hypothesis found one across the cut)
    assert len(head.replace("***", "").replace("<email>", "").replace("~/", "")) <= limit
    assert len(tail) <= TAIL_CHARS + 7
    # no secret's tell-tale part is kept
    assert "I9j0K1" not in kept and "abcdefghijABCDEFGHIJ" not in kept and "hunter2" not in kept
    assert 0 <= cut <= len(output) - len(head.replace("***", "").replace("<email>", "").replace("~/", ""))


def test_a_value_right_after_the_name_a_preview_ends_with_is_shown_masked():
    # the cut falls between `api_key = '` and its value: the mask touching the cut is kept (it says what was there)
    at = PREVIEW_CHARS - len("\napi_key = '")
    value = "Zq8Rk2Lw9Xv4Tn7P"
    output = _filler(at) + "\napi_key = '" + value + "'\n" + _filler(3000, "d")
    head, cut, _ = _parts(_kept(output))
    assert head == output[:PREVIEW_CHARS] + "***" and value[:6] not in _kept(output)
    assert cut == len(output) - PREVIEW_CHARS - len(value)


def _fragments(leak: str, size: int = 8) -> set[str]:
    return {leak[i:i + size] for i in range(max(1, len(leak) - size + 1))}


def test_no_planted_secret_leaks_across_or_beside_a_cut_whatever_the_scans_gates():
    # every format of the secret corpus planted across a read preview's cut, wholly in its margin, across a
    # command's head cut and across its tail cut: no 8-character piece of what must never survive is shown (the
    # raw excerpt scanned is long, so the Rust gates of the scanner and the scrubber decide which passes run).
    # A private key block whose BEGIN line the tail's cut left more than a margin away leaked its body lines
    # before its END line was made to mark them (tests/secret_corpus.py's four key blocks, on main at cff2665)
    from tests.secret_corpus import FORMATS

    checked = 0
    for planted in FORMATS:
        pieces = set().union(*(_fragments(leak) for leak in planted.leaks if len(leak) >= 8))
        n = len(planted.text)
        for before in {1, n // 2, max(1, n - 2), 0}:  # characters of the planted text before the cut
            start = PREVIEW_CHARS - before
            read = _filler(start) + planted.text + " " + _filler(3000)
            kept = _kept(read)
            assert not any(p in kept for p in pieces), (planted.name, before, kept[start - 40:start + 80])
            command = _filler(HEAD_CHARS - before) + planted.text + " " + _filler(3000)
            kept = _kept(command, "cat log")
            assert not any(p in kept for p in pieces), (planted.name, before, "head")
            checked += 2
            if before > CUT_MARGIN and "-----BEGIN" in planted.text and "-----END" not in planted.text:
                continue  # a key block cut off before its END, whose BEGIN is past the margin: plain base64 lines
            tail_at = 8000 - TAIL_CHARS  # where the tail of an 8,000-character output starts
            command = _filler(tail_at - before) + planted.text + " " + _filler(8000 - tail_at + before - n - 1)
            kept = _kept(command, "cat log")
            assert not any(p in kept for p in pieces), (planted.name, before, "tail")
            checked += 1
    assert checked >= 3 * len(FORMATS)
