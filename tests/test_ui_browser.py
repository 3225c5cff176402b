"""`skillgit ui` in a real headless Chromium (driven over the DevTools protocol, tests/cdp.py): the page lists the
demo's run and branch, starts a run on the simulated world, shows a step decided while the run is still running,
stops it (exit 130, saved as interrupted), resumes it (a later step is decided live), and opens the run's report.
Through it all the page requests nothing but 127.0.0.1 (every request its tab started is recorded; a control page
with a remote image proves the recorder sees one) and throws no script error; without the token the page is
refused. Skipped without chromium or without the `ui` extra."""

from __future__ import annotations

import importlib.util
import json
from urllib.parse import urlsplit

import pytest

from tests.cdp import CHROMIUM, Browser
from tests.conftest import run_cli_inproc
from tests.test_ui import SLOW, demo, demo_template, ui_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed"),
              pytest.mark.skipif(importlib.util.find_spec("aiohttp") is None,
                                 reason="the `ui` extra (aiohttp) is not installed")]
LOCAL = ("data:", "about:")


def _decided(page, what: str, timeout: float = 120.0) -> dict:
    """Wait until the decisions table has a row for which `what` (JS over `steps`, `status`) holds."""
    return page.wait(
        "(() => { const rows = [...document.querySelectorAll('#decisions tbody tr')];"
        " const steps = rows.map(r => r.dataset.step);"
        " const status = document.getElementById('run-status').textContent;"
        f" return ({what}) ? {{steps, status}} : null; }})()", timeout, what)


def test_the_dashboard_starts_watches_stops_and_resumes_a_run_in_chromium(demo, tmp_path):  # noqa: F811
    with ui_server(demo) as server:
        browser = Browser.start(tmp_path)
        try:
            page = browser.page()
            origin = f"http://127.0.0.1:{server.port}"

            # without the token: refused
            page.goto(f"{origin}/")
            page.wait("document.readyState === 'complete' && document.body.innerText.includes('token')", 30,
                      "the refusal")
            assert page.statuses()[f"{origin}/"] == 403

            page.goto(server.url)
            page.wait("!!document.querySelector('#runs tr[data-run=\"demo-seed0\"]')", 30, "the demo's run listed")
            page.wait("!!document.querySelector('#branches tr[data-branch=\"main\"]')", 10, "the skill branch")
            page.wait("document.getElementById('conn').textContent === 'live'", 10, "the event stream")

            # start a run with a chosen config and budget
            page.eval(f"""(() => {{
                document.getElementById('cfg-config').value = 'skillgit.yaml';
                document.getElementById('cfg-steps').value = '30';
                document.getElementById('cfg-cost').value = '5';
                document.getElementById('cfg-overrides').value = '{SLOW}';
                document.getElementById('cfg-new').checked = true;
                document.getElementById('start-btn').click(); }})()""")
            seen = _decided(page, "steps.length >= 1 && status === 'running'")  # a step decided, live
            run = page.wait("document.getElementById('run-view').dataset.run", 10, "the run's id")
            assert run != "demo-seed0" and seen["status"] == "running"
            page.wait("/stage: \\w/.test(document.getElementById('run-stage').textContent)", 30, "a stage shown")

            page.eval("document.getElementById('stop-btn').click()")
            page.wait("document.getElementById('job-state').textContent.includes('exit 130')", 90, "exit 130")
            page.wait("document.getElementById('run-status').textContent === 'interrupted'", 30, "interrupted")
            status = json.loads(run_cli_inproc("status", "--run", run, "--json", cwd=demo).stdout)
            assert status["status"] == "interrupted"
            before = status["step"]

            page.wait("!document.getElementById('resume-btn').hidden", 10, "the resume button")
            page.eval("document.getElementById('resume-btn').click()")
            page.wait("document.getElementById('log').textContent.includes('resumed run')", 60, "the resume")
            later = _decided(page, f"steps.filter(s => /^\\d+$/.test(s) && +s > {before}).length >= 1 "
                                   "&& status === 'running'")
            assert later["status"] == "running"
            page.eval("document.getElementById('stop-btn').click()")
            page.wait("document.getElementById('job-state').textContent.includes('exit 130') "
                      "&& document.getElementById('run-status').textContent === 'interrupted'", 90, "stopped again")

            # the run's report, from its link
            href = page.eval("document.getElementById('report-link').href")
            assert href.startswith(f"{origin}/runs/{run}/report?token=")
            page.goto(href)
            page.wait("document.title.startsWith('skillgit report')", 60, "the report")

            requests = page.requests()
            assert any(u.startswith(f"{origin}/api/events") for u in requests)
            outside = [u for u in requests if not u.startswith(LOCAL) and urlsplit(u).hostname != "127.0.0.1"]
            assert outside == [], f"the page requested: {outside}"
            assert page.exceptions() == []

            # control: the recorder does see a page that loads something from elsewhere
            control = browser.page()
            control.goto("data:text/html,<img src='http://remote.example/x.png'><p>control</p>")
            control.wait("document.readyState === 'complete'", 30, "the control page")
            control.wait("true", 1)
            assert any("remote.example" in u for u in control.requests())
        finally:
            browser.close()
