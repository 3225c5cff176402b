"""The light front of `skillgit mcp` (skillgit/integrations/mcp_front.py): it answers `initialize` (and `ping`)
from the SDK's recorded answers, then hands the session to the SDK's server without the client noticing.

What is checked against what: the front's answers against the SDK's own (a real `skillgit.integrations.mcp_server`
served by the SDK's stdio transport, or the same server over in-memory streams), byte for byte, for every protocol
version the SDK knows and unknown ones; whole sessions (malformed first lines, requests before `initialize`,
requests queued during the hand-over) through front + SDK against the SDK alone; the real SDK client and the real
`claude` CLI over stdio. A handshake file recorded by a real first start (`recorded`) is used throughout.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")
import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from skillgit.integrations import mcp_front, mcp_server  # noqa: E402
from skillgit.integrations.mcp_front import HANDSHAKE_ENV  # noqa: E402
from tests import agent_clis as ac  # noqa: E402  (at import: the CLIs' prefix is read from the environment then)
from tests.agent_server import AgentServer, text, tool  # noqa: E402

SDK_ONLY = "from skillgit.integrations.mcp_server import serve\nserve()\n"  # the SDK's own stdio transport
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def init_line(rid: Any = 1, version: str = "2025-06-18", capabilities: Any = None, client: Any = None) -> str:
    params = {"protocolVersion": version, "capabilities": {} if capabilities is None else capabilities,
              "clientInfo": client or {"name": "test", "version": "0"}}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}) + "\n"


def request(rid: Any, method: str, params: Any = None) -> str:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg) + "\n"


def run_env(handshake: Path) -> dict[str, str]:
    return {**os.environ, HANDSHAKE_ENV: str(handshake)}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The handshake file a real first start of `skillgit mcp` records (the SDK answers that start)."""
    folder = tmp_path_factory.mktemp("front")
    path = folder / "handshake.json"
    proc = subprocess.run([sys.executable, "-m", "skillgit", "mcp"], input=init_line(), capture_output=True,
                          text=True, env=run_env(path), cwd=folder, timeout=120)
    assert proc.returncode == 0 and path.exists(), proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "skillgit"
    return path


@pytest.fixture
def handshake(recorded, monkeypatch) -> dict:
    monkeypatch.setenv(HANDSHAKE_ENV, str(recorded))
    data = mcp_front.load_handshake(mcp_front.handshake_key())
    assert data is not None, "the record's key must match this installation (the same files the server saw)"
    return data


@pytest.fixture(scope="module")
def low() -> Any:
    return mcp_server.lowlevel(mcp_server.build_server())


def expected(lines: list[str]) -> int:
    """How many answers the lines ask for: requests with an integer or string id."""
    count = 0
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        rid = msg.get("id") if isinstance(msg, dict) and "method" in msg else None
        count += isinstance(rid, (int, str)) and not isinstance(rid, bool)
    return count


class Capture(io.StringIO):
    """An output that says when it holds `expect` lines (EOF then goes in: the SDK cancels what is in flight at
    EOF, so a session ends only once every answer is out)."""

    def __init__(self, expect: int) -> None:
        super().__init__()
        self.expect, self.done = expect, threading.Event()
        self._check()

    def write(self, text: str) -> int:
        n = super().write(text)
        self._check()
        return n

    def _check(self) -> None:
        if self.getvalue().count("\n") >= self.expect:
            self.done.set()

    @property
    def lines(self) -> list[str]:
        return self.getvalue().splitlines(keepends=True)


class Lines:
    """The client: `lines`, then the end once `release` is set; `drained` once all lines were read."""

    def __init__(self, lines: list[str], release: threading.Event) -> None:
        self._lines, self.release, self.drained = list(lines), release, threading.Event()

    def readline(self) -> str:
        if self._lines:
            return self._lines.pop(0)
        self.drained.set()
        self.release.wait(30)
        return ""


async def _serve_until(low: Any, feed: mcp_front.Feed, out: Any, done: threading.Event) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(mcp_server._serve, low, feed, out)
        await anyio.to_thread.run_sync(done.wait, 30)
        feed.put("")


def sdk_alone(low: Any, lines: list[str]) -> list[str]:
    """What the SDK's server writes for `lines` (in-memory streams, the SDK's stdio transport code)."""
    feed, out = mcp_front.Feed(), Capture(expected(lines))
    for line in lines:
        feed.put(line)
    anyio.run(_serve_until, low, feed, out, out.done)
    return out.lines


def through_front(low: Any, handshake: dict, lines: list[str]) -> tuple[list[str], list[str], mcp_front.Front]:
    """(what the front wrote before the hand-over, everything written, the front) for `lines` that all arrived
    before the SDK took over (the longest queue)."""
    out = Capture(expected(lines))
    front: mcp_front.Front
    sink = mcp_front.Sink(out, lambda msg: front.check(msg))
    client = Lines(lines, out.done)
    front = mcp_front.Front(client, sink, handshake)  # type: ignore[arg-type]
    reader = threading.Thread(target=front.run, daemon=True)
    reader.start()
    assert client.drained.wait(30)
    early = out.lines
    front.handed_over = True
    anyio.run(mcp_server._serve, low, front.feed, sink)
    reader.join(30)
    return early, out.lines, front


def by_id(lines: list[str]) -> list[str]:
    return sorted(lines, key=lambda line: json.dumps(json.loads(line).get("id")))


# --------------------------------------------------------------------------- the answer is the SDK's own answer
def test_the_fronts_initialize_answer_is_the_sdks_own_for_every_protocol_version(handshake, low, tmp_path):
    versions = [*mcp_server.probe_versions()[:-1], "1999-01-01", "2099-12-31", "not-a-version", ""]
    procs = {v: subprocess.Popen([sys.executable, "-c", SDK_ONLY], cwd=tmp_path, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for v in versions}
    sdk = {v: proc.communicate(init_line(7, v), timeout=120)[0].splitlines(keepends=True)[0]
           for v, proc in procs.items()}
    for version in versions:
        early, _, front = through_front(low, handshake, [init_line(7, version)])
        assert early == [sdk[version]], version  # byte for byte, as the SDK's stdio transport writes it
        assert front.mismatch is None  # and the SDK, handed the replayed request, answered the same
    negotiated = {v: json.loads(sdk[v])["result"]["protocolVersion"] for v in versions}
    assert negotiated["2025-06-18"] == "2025-06-18"
    assert negotiated["not-a-version"] == negotiated["1999-01-01"] == negotiated[""]  # the SDK's default


def test_a_first_start_records_what_the_sdk_answers_and_the_next_start_answers_before_importing_it(
        recorded, tmp_path):
    record = json.loads(recorded.read_text())
    assert set(record["answers"]) == {*mcp_server.probe_versions()}
    assert record["answers"]["2025-06-18"]["ping"] == {}
    assert {"log", "status", "train"} <= {t["name"] for t in record["answers"]["2025-06-18"]["tools/list"]["tools"]}
    proc = subprocess.run([sys.executable, "-m", "skillgit", "mcp"], input=init_line(3, "2025-03-26"),
                          capture_output=True, text=True, env=run_env(recorded), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply == {"jsonrpc": "2.0", "id": 3, "result": record["answers"]["2025-03-26"]["initialize"]}
    assert len(proc.stdout.splitlines()) == 1  # the SDK's answer to the replayed request was dropped
    assert "differs" not in proc.stderr and recorded.exists()  # and it was the front's


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_what_the_front_answers_the_sdk_answers_the_same_way(handshake, low, data):
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=4))
    keys = st.sampled_from(["roots", "sampling", "elicitation", "experimental", "tasks", "listChanged", "form",
                            "context", "x"])
    objects = st.recursive(st.just({}), lambda inner: st.dictionaries(keys, inner, max_size=3), max_leaves=6)
    member = st.one_of(objects, st.fixed_dictionaries({"listChanged": scalars}), scalars)  # (mostly objects)
    trees = st.dictionaries(keys, member, max_size=4)
    text_or_not = st.one_of(st.text(max_size=5), st.text(max_size=5), st.integers(0, 2), st.none())
    info = st.fixed_dictionaries({"name": text_or_not, "version": st.text(max_size=5)},
                                 optional={"title": text_or_not, "websiteUrl": st.text(max_size=5),
                                           "icons": st.lists(st.fixed_dictionaries({"src": st.text(max_size=3)}),
                                                             max_size=1)})
    version = st.one_of(st.sampled_from(mcp_server.probe_versions()[:-1]), st.text(max_size=12))
    params = st.fixed_dictionaries({"protocolVersion": version, "capabilities": trees, "clientInfo": info})
    msg = {"jsonrpc": "2.0", "id": data.draw(st.one_of(st.integers(-5, 10 ** 6), st.text(max_size=6))),
           "method": "initialize", "params": data.draw(params)}
    line = json.dumps(msg) + "\n"
    if mcp_front.initialize_request(mcp_front.parse(line)) is None:
        return  # left to the SDK
    sdk = sdk_alone(low, [line])
    early, _, front = through_front(low, handshake, [line])
    assert early == sdk and front.mismatch is None


# ------------------------------------------------------------------ whole sessions: front + SDK = the SDK alone
INIT = init_line()
CASES = {
    "not JSON": ["not json\n", INIT],
    "an empty line": ["\n", INIT],
    "a batch": ["[]\n", INIT],
    "initialize without params": ['{"jsonrpc":"2.0","id":1,"method":"initialize"}\n'],
    "capabilities not objects": [init_line(capabilities={"roots": 5})],
    "listChanged as a string": [init_line(capabilities={"roots": {"listChanged": "true"}})],
    "listChanged as an object": [init_line(capabilities={"roots": {"listChanged": {}}})],
    "an unknown param": [INIT.replace('"params": {', '"params": {"extra": 1, ')],
    "a repeated key": [INIT.replace('"id": 1,', '"id": 1, "id": 2,')],
    "a boolean id": [init_line(True)],
    "tools/list before initialize": [request(5, "tools/list"), INIT],
    "ping before initialize": [request(5, "ping"), INIT],
    "initialize twice": [INIT, INITIALIZED, init_line(2)],
    "a string id, then pings and a list": [init_line("a-1"), INITIALIZED, request(2, "ping"), request(3, "tools/list"),
                                          request("p", "ping"), request(4, "resources/list")],
    "a ping with params": [INIT, INITIALIZED, request(2, "ping", {"_meta": {}})],
    "an unknown method": [INIT, INITIALIZED, request(2, "no/such")],
    "a list before initialized": [INIT, request(2, "tools/list"), INITIALIZED, request(3, "tools/list")],
    "every list, params empty or absent": [init_line(1, "2024-11-05"), INITIALIZED, request(2, "tools/list", {}),
                                           request(3, "prompts/list"), request(4, "resources/templates/list"),
                                           request(5, "resources/list", {"cursor": "x"})],
    "an unknown version's lists": [init_line(1, "1999-01-01"), INITIALIZED, request(2, "tools/list")],
}
FRONT_ANSWERS = {"initialize twice": 1, "a string id, then pings and a list": 5, "a ping with params": 1,
                 "an unknown method": 1, "a list before initialized": 2, "every list, params empty or absent": 4,
                 "an unknown version's lists": 2}


@pytest.mark.parametrize("case", list(CASES))
def test_a_session_through_the_front_gets_exactly_the_sdks_answers(handshake, low, case):
    lines = CASES[case]
    early, everything, front = through_front(low, handshake, lines)
    assert by_id(everything) == by_id(sdk_alone(low, lines))
    assert len(early) == FRONT_ANSWERS.get(case, 0)  # anything odd before initialize: the SDK answers it all
    assert front.mismatch is None


# ----------------------------------------------------------------------------------- real processes, real clients
def test_requests_sent_during_the_hand_over_are_each_answered_once(recorded, make_repo):
    repo = make_repo({"SKILL.md": "# Skill\n"})
    lines = [init_line(), INITIALIZED, request(2, "tools/list"), request(3, "ping"),
             request(4, "tools/call", {"name": "status", "arguments": {}}), request(5, "resources/list"),
             request(6, "ping"), request(7, "tools/call", {"name": "log", "arguments": {"limit": 0}})]
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", "mcp"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env(recorded), text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(lines))
    proc.stdin.flush()
    answers: dict[Any, dict] = {}
    while len(answers) < 7:
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=60)[1][-3000:]
        msg = json.loads(line)
        assert msg["id"] not in answers
        answers[msg["id"]] = msg
    out, err = proc.communicate("", timeout=120)
    assert proc.returncode == 0 and out == "" and "Traceback" not in err and "differs" not in err
    assert answers[1]["result"]["serverInfo"]["name"] == "skillgit"
    assert answers[3]["result"] == answers[6]["result"] == {}
    assert {t["name"] for t in answers[2]["result"]["tools"]} >= {"log", "status", "train"}
    assert answers[4]["result"]["content"][0]["type"] == "text"
    assert answers[7]["result"]["isError"] is True  # limit 0: the schema refuses it, as a tool error
    assert recorded.exists()  # the SDK agreed with the front's answer: the record stays


def test_the_sdk_client_calls_tools_right_after_initialize_and_concurrently(recorded, make_repo, tmp_path):
    repo = make_repo({"SKILL.md": "# Skill\n"})
    errlog = (tmp_path / "stderr.txt").open("w")

    async def session() -> tuple:
        params = StdioServerParameters(command=sys.executable, args=["-m", "skillgit", "mcp"], cwd=str(repo),
                                       env=run_env(recorded))
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                return init, await asyncio.gather(s.list_tools(), s.call_tool("status", {}), s.send_ping(),
                                                   s.list_resources(), s.call_tool("log", {"limit": 2}))

    init, (tools, status, _, resources, log) = asyncio.run(asyncio.wait_for(session(), timeout=120))
    errlog.close()
    assert init.serverInfo.name == "skillgit" if hasattr(init, "serverInfo") else init.server_info.name == "skillgit"
    assert {t.name for t in tools.tools} >= {"log", "show", "status", "train", "answer"}
    assert status.content and log.content
    assert "skillgit://skill" in {str(r.uri) for r in resources.resources}
    err = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in err and "differs" not in err


def test_eof_before_initialize_ends_cleanly_and_says_nothing(recorded, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "skillgit", "mcp"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=run_env(recorded), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_a_stale_record_is_reported_removed_and_recorded_again(recorded, tmp_path):
    stale = tmp_path / "handshake.json"
    data = json.loads(recorded.read_text())
    for answers in data["answers"].values():
        answers["initialize"]["instructions"] = "an older text"
    stale.write_text(json.dumps(data))
    run = [sys.executable, "-m", "skillgit", "mcp"]
    proc = subprocess.run(run, input=init_line(), capture_output=True, text=True, env=run_env(stale), cwd=tmp_path,
                          timeout=120)
    assert json.loads(proc.stdout)["result"]["instructions"] == "an older text"  # (the client saw the record)
    assert "differs from the recorded one" in proc.stderr and not stale.exists()
    proc = subprocess.run(run, input=init_line(), capture_output=True, text=True, env=run_env(stale), cwd=tmp_path,
                          timeout=120)
    assert json.loads(proc.stdout)["result"]["instructions"] == mcp_server.INSTRUCTIONS
    assert json.loads(stale.read_text()) == json.loads(recorded.read_text())


def test_a_record_for_another_installation_is_not_used(recorded, tmp_path):
    other = tmp_path / "handshake.json"
    data = json.loads(recorded.read_text())
    data["key"]["skillgit"] = "0.0.0-other"
    for answers in data["answers"].values():
        answers["initialize"]["instructions"] = "another installation's"
    other.write_text(json.dumps(data))
    proc = subprocess.run([sys.executable, "-m", "skillgit", "mcp"], input=init_line(), capture_output=True,
                          text=True, env=run_env(other), cwd=tmp_path, timeout=120)
    assert json.loads(proc.stdout)["result"]["instructions"] == mcp_server.INSTRUCTIONS
    assert json.loads(other.read_text()) == json.loads(recorded.read_text())  # recorded again for this one


def test_a_damaged_record_is_not_used(recorded, tmp_path, monkeypatch):
    damaged = tmp_path / "handshake.json"
    monkeypatch.setenv(HANDSHAKE_ENV, str(damaged))
    key = mcp_front.handshake_key()
    data = json.loads(recorded.read_text())
    assert mcp_front.save_handshake(key, data["answers"]) and mcp_front.load_handshake(key) is not None
    for damage in ({"2025-06-18": {"ping": {}}}, {"2025-06-18": []}, {"2025-06-18": {"initialize": "x", "ping": {}}}):
        mcp_front.save_handshake(key, {**data["answers"], **damage})
        assert mcp_front.load_handshake(key) is None, damage
    mcp_front.save_handshake(key, {v: a for v, a in data["answers"].items() if v != mcp_front.UNKNOWN_VERSION})
    assert mcp_front.load_handshake(key) is None
    damaged.write_text("{not json")
    assert mcp_front.load_handshake(key) is None


# ----------------------------------------------------------------------------------------------------- claude
@pytest.mark.agent_cli
def test_claude_connects_through_the_front_and_calls_a_tool_at_once(recorded, make_repo, tmp_path):
    claude = ac.find_cli("claude")
    if claude is None:
        pytest.skip("claude is not installed (.venv/bin/python -m tests.agent_clis install)")
    repo = make_repo({"SKILL.md": "# Skill\n"})
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"skillgit": {
        "command": sys.executable, "args": ["-m", "skillgit", "mcp"], "env": {HANDSHAKE_ENV: str(recorded)}}}}))
    home = tmp_path / "agent-home"
    home.mkdir()
    name = "mcp__skillgit__status"
    with AgentServer([tool(name), text("done")]) as server:
        argv = ac.claude_print_argv(claude, "Show the skillgit status.", allowed_tools=[name],
                                    extra=["--mcp-config", str(config), "--strict-mcp-config"])
        extra = {"MCP_CONNECTION_NONBLOCKING": "0", "ENABLE_TOOL_SEARCH": "false"}
        extra.update({k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ})
        env = ac.claude_env(home, server.base_url, extra=extra)
        proc = ac.run_cli(argv, cwd=repo, env=env)
        requests = server.agent_requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    init = next(e for e in ac.parse_jsonl(proc.stdout) if e.get("subtype") == "init")
    assert {"name": "skillgit", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    assert name in requests[0].tool_names()
    assert len(requests) >= 2 and "skillgit" in requests[1].messages_text().lower()
    assert recorded.exists()


# ------------------------------------------------------------------------------------------------- the wire
def test_stray_output_and_children_miss_the_wire_and_stdin_reads_nothing(tmp_path):
    code = ("import os, subprocess, sys\nfrom skillgit.integrations import mcp_front as f\n"
            "out, give_out = f._claim(1, sys.stdout, 'wb', f._divert_stdout)\n"
            "inp, give_in = f._claim(0, sys.stdin, 'rb', lambda: os.open(os.devnull, os.O_RDONLY))\n"
            "print('stray print', flush=True)\nsubprocess.run(['sh', '-c', 'echo child; cat'])\n"
            "out.write(inp.readline().upper())\nout.flush()\ngive_out()\nprint('given back', flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], input="wire line\nmore\n", capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "WIRE LINE\ngiven back\n"  # the child's `cat` read the null device, not the client
    assert "stray print" in proc.stderr and "child" in proc.stderr
