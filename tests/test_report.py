"""`skillgit.report`: the run model round-trips, and the HTML page is offline, inert, deterministic and draws
what it claims (curves, an unknown-vs-failed heatmap, cost bars) with either chart renderer."""

from __future__ import annotations

import json
import random
import re
import xml.etree.ElementTree as ET

import pytest

from skillgit.errors import SkillgitError
from skillgit.report import (
    ReportEdit,
    ReportStep,
    RunReport,
    SplitScores,
    matplotlib_version,
    render_charts,
    render_html,
    sparkline,
    write_report,
)
from skillgit.report.model import StepKind, best_so_far, epoch_boundaries, val_current
from skillgit.types import Usage

SCRIPT_REASON = '<script>alert("reason")</script>'
SCRIPT_EDIT = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
URL_TEXT = "see https://example.com/docs and http://example.org/x"
ODD_ITEM = "q&a<7>$x$"  # markup and a TeX-looking `$…$` in an id: text, never markup or math

HAS_MPL = matplotlib_version() is not None
RENDERERS = ["builtin", pytest.param("matplotlib", marks=pytest.mark.skipif(not HAS_MPL, reason="no matplotlib"))]


def _mean(scores: dict[str, float | None]) -> float | None:
    known = [v for v in scores.values() if v is not None]
    return round(sum(known) / len(known), 4) if known else None


def make_report(steps_per_epoch: int = 5, items: int = 12, seed: int = 1) -> RunReport:
    """A synthetic two-epoch run: training steps plus epoch-end slow updates and a meta reflect, unknown item
    scores (None and missing), and hostile text in a reason, an edit, an item id and a URL in a rationale."""
    rng = random.Random(seed)
    val_items = tuple([f"val-{i:02d}" for i in range(items - 1)] + [ODD_ITEM])
    skill = [0.25 + 0.5 * rng.random() for _ in val_items]  # per-item chance the current skill passes

    def score(chances: list[float]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for item, p in zip(val_items, chances):
            roll = rng.random()
            if roll < 0.06:
                out[item] = None  # the scorer could not decide
            elif roll < 0.09:
                continue  # never scored (e.g. the student errored): unknown too
            else:
                out[item] = 1.0 if rng.random() < p else 0.0
        return out

    seed_scores = score(skill)
    current = _mean(seed_scores)
    steps: list[ReportStep] = []
    seq = 0
    n = 0
    for epoch in (1, 2):
        names = [str(n + i + 1) for i in range(steps_per_epoch)] + [f"e{epoch}-slow-update"]
        if epoch == 1:
            names.append("e1-meta-reflect")
        n += steps_per_epoch
        for name in names:
            seq += 1
            kind: StepKind = "slow_update" if "slow" in name else "meta_reflect" if "meta" in name else "step"
            trial = [min(1.0, max(0.0, p + rng.uniform(-0.2, 0.3))) for p in skill]
            item_scores = score(trial)
            after = _mean(item_scores)
            accepted = after is not None and current is not None and after > current
            delta = None if after is None or current is None else round(after - current, 4)
            reason = (f"better on val {after} vs {current}" if accepted else f"not better on val: {after} vs {current}")
            if seq == 3:
                reason += " " + SCRIPT_REASON
            edits = (
                ReportEdit("append", "SKILL.md", "", f"- Check the units before answering (step {name}).",
                           "failures forgot units", "applied"),
                ReportEdit("replace", "SKILL.md", "Answer briefly.", SCRIPT_EDIT if seq == 4 else "Answer in full.",
                           URL_TEXT if seq == 4 else "too terse", "applied_fuzzy" if seq % 2 else "applied"),
                ReportEdit("delete", "SKILL.md", "Old rule.", "", "contradicts the checklist",
                           "skipped_target_not_found"),
            )
            diff = (f"--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1,3 +1,4 @@\n # Skill\n-Answer briefly.\n"
                    f"+{SCRIPT_EDIT if seq == 4 else 'Answer in full.'}\n Keep going.\n"
                    f"+- Check the units before answering (step {name}).\n")
            known = sum(1 for v in item_scores.values() if v is not None)
            steps.append(ReportStep(
                seq=seq, step=name, kind=kind, epoch=epoch, verdict="accepted" if accepted else "rejected",
                val_before=current, val_after=after, delta=delta,
                train_score=None if kind != "step" else round(rng.uniform(0.2, 0.9), 3),
                reason=reason, edits=edits, diff=diff, cost_usd=round(rng.uniform(0.01, 0.2), 4),
                calls=rng.randint(20, 60), tokens=rng.randint(20_000, 90_000),
                seconds={"rollout": round(rng.uniform(5, 40), 2), "reflect": round(rng.uniform(2, 9), 2),
                         "gate": round(rng.uniform(5, 30), 2)},
                item_scores=item_scores, coverage=round(known / len(val_items), 4),
            ))
            if accepted:
                current = after
                skill = [min(1.0, max(0.0, (a + b) / 2 + 0.05)) for a, b in zip(skill, trial)]
    accepted_vals = [s.val_after for s in steps if s.accepted and s.val_after is not None]
    best = max([v for v in [_mean(seed_scores), *accepted_vals] if v is not None])
    return RunReport(
        run_id="20260101-0000-ab12", project="demo-project", skill_path=".claude/skills/review/SKILL.md",
        branch="main", started="2026-01-01T00:00:00+00:00", ended="2026-01-01T00:42:10+00:00",
        status="finished", stop_reason="2 epochs done", metric="hard",
        val=SplitScores(_mean(seed_scores), best, current), test=SplitScores(0.31, 0.58, 0.55),
        val_items=val_items, seed_item_scores=seed_scores, steps=tuple(steps),
        usage_by_stage={"rollout": Usage(400, 300_000, 60_000, 0, 0, 0.21), "reflect": Usage(60, 240_000, 30_000,
                        0, 0, 0.95), "gate": Usage(300, 200_000, 40_000, 0, 0, 0.18),
                        "slow_update": Usage(4, 30_000, 3_000, 0, 0, 0.05)},
        usage_by_role={"student": Usage(700, 500_000, 100_000, 0, 0, 0.39),
                       "teacher": Usage(64, 270_000, 33_000, 0, 0, 1.0)},
        config_digest="sha256:3f9a1c0d",
        reproduce="skillgit train --new --set train.seed=0 --set env.tasks=tasks.jsonl",
    )


@pytest.fixture(scope="module")
def report() -> RunReport:
    return make_report()


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)


def _parse(svg: str) -> ET.Element:
    """Inline SVG is also well-formed XML (entities aside): parse it to inspect the drawing."""
    return ET.fromstring(svg.replace("&#58;", ":").replace("&nbsp;", " "))


def _by_id(root: ET.Element, ident: str) -> ET.Element:
    found = [e for e in root.iter() if e.get("id") == ident]
    assert len(found) == 1, f"expected one element with id {ident}, found {len(found)}"
    return found[0]


def _shapes(group: ET.Element) -> list[ET.Element]:
    return [e for e in group.iter() if e.tag in ("path", "rect", "use")]


def test_the_synthetic_run_is_what_the_tests_claim(report):
    assert len(report.steps) >= 10 and {s.epoch for s in report.steps} == {1, 2}
    assert {s.kind for s in report.steps} == {"step", "slow_update", "meta_reflect"}
    assert {s.verdict for s in report.steps} == {"accepted", "rejected"}
    scores = [v for s in report.steps for v in s.item_scores.values()]
    assert None in scores and 0.0 in scores and 1.0 in scores
    assert any(len(s.item_scores) < len(report.val_items) for s in report.steps)  # missing = unknown too


def test_model_round_trips_through_json(report):
    data = json.loads(json.dumps(report.to_dict()))
    assert RunReport.from_dict(data) == report
    data["future_field"] = 1
    data["steps"][0]["also_new"] = "ignored"
    assert RunReport.from_dict(data) == report
    with pytest.raises(ValueError, match="verdict"):
        ReportStep(seq=1, step="1", verdict="maybe")  # type: ignore[arg-type]


def test_derived_series():
    steps = (
        ReportStep(1, "1", epoch=1, verdict="accepted", val_after=0.5),
        ReportStep(2, "2", epoch=1, verdict="rejected", val_after=0.9),
        ReportStep(3, "e1-slow-update", kind="slow_update", epoch=1, verdict="accepted", val_after=0.4),
        ReportStep(4, "3", epoch=2, verdict="accepted", val_after=0.6),
    )
    r = RunReport("r", val=SplitScores(seed=0.2), steps=steps)
    assert val_current(r) == [0.5, 0.5, 0.4, 0.6]  # a rejected candidate never becomes current
    assert best_so_far(r) == [0.5, 0.5, 0.5, 0.6]
    assert epoch_boundaries(steps) == [(3.5, 2)]


@pytest.mark.parametrize("renderer", RENDERERS)
def test_page_is_offline_inert_and_deterministic(report, renderer):
    page = render_html(report, renderer=renderer)
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page.lower()  # no script of ours, and the planted ones are text
    assert "&lt;script&gt;alert(&quot;reason&quot;)&lt;/script&gt;" in page
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img" not in page
    assert "see https&#58;//example.com/docs" in page  # URL text kept readable but not a URL in the file
    for match in re.finditer(r"url\(\s*['\"]?([^)'\"]*)", page):
        assert match.group(1).startswith("#"), f"external url(): {match.group(0)}"
    for tag in re.findall(r"<[a-zA-Z][^>]*>", page):  # real tags only: escaped text has no raw `<`
        assert not re.search(r"\s(src|srcset|data|background|poster)\s*=", tag), tag  # nothing loads
    for match in re.finditer(r"\bhref=\"([^\"]*)\"", page):
        assert match.group(1).startswith("#"), f"non-local link {match.group(0)}"
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "duplicate ids across the page"
    assert render_html(report, renderer=renderer) == page


@pytest.mark.parametrize("renderer", RENDERERS)
def test_charts_draw_curves_labels_and_bars(report, renderer):
    charts = render_charts(report, renderer)
    assert charts.renderer == renderer
    assert [c.key for c in charts.charts] == ["curves", "heatmap", "cost"]
    for chart in charts.charts:
        root = _parse(chart.svg)
        assert root.tag == "svg"
        assert any(p.get("d", "").strip() for p in root.iter("path")), f"{chart.key}: no path data"
        assert all(e.get("id", chart.key).startswith(chart.key) for e in root.iter())
    curves = charts.charts[0].svg
    vertices = [len(re.findall(r"[ML]", p.get("d", ""))) for p in _parse(curves).iter("path")]
    assert max(vertices) >= 2 * len(report.steps), "the val step line has a vertex pair per decision"
    for label in ("decision (seq; 0 = seed)", "score (hard)", "val: candidate rejected", "train batch (rollout mean)",
                  "test: final", "epoch 2"):
        assert label in curves, label
    heat = charts.charts[1].svg
    assert "val item" in heat and "e1-slow-update" in heat and "unknown" in heat
    assert "q&amp;a&lt;7&gt;$x$" in heat  # the odd id is text (no TeX, no markup)
    cost = charts.charts[2].svg
    assert "cost (USD)" in cost and "reflect" in cost and "teacher" in cost


@pytest.mark.parametrize("renderer", RENDERERS)
def test_heatmap_draws_unknown_unlike_failed(report, renderer):
    heat = render_charts(report, renderer).charts[1]
    root = _parse(heat.svg)
    items = list(report.val_items)
    columns = [report.seed_item_scores, *(s.item_scores for s in report.steps)]
    n_unknown = sum(1 for col in columns for item in items if col.get(item) is None)
    n_known = len(columns) * len(items) - n_unknown
    unknown = _shapes(_by_id(root, "heatmap-cells-unknown"))
    known = _shapes(_by_id(root, "heatmap-cells-known"))
    assert len(unknown) == n_unknown > 0
    assert len(known) == n_known

    def fills(shapes: list[ET.Element]) -> set[str]:
        out = set()
        for e in shapes:
            style = dict(kv.split(":", 1) for kv in (e.get("style") or "").replace(" ", "").split(";") if kv)
            out.add((e.get("fill") or style.get("fill", "")).lower())
        return out

    unknown_fills, known_fills = fills(unknown), fills(known)
    assert len(unknown_fills) == 1 and next(iter(unknown_fills)).startswith("url(#heatmap-")  # hatched
    pattern_id = next(iter(unknown_fills))[len("url(#"):-1]
    assert _by_id(root, pattern_id).tag == "pattern"
    assert "#dc2626" in known_fills and "#16a34a" in known_fills  # failed red, passed green
    assert not unknown_fills & known_fills


def test_builtin_is_used_without_matplotlib_and_says_so(report, monkeypatch):
    from skillgit.report import charts

    monkeypatch.setattr(charts, "matplotlib_version", lambda: None)
    page = render_html(report)  # auto falls back
    assert "built-in SVG renderer" in page and "skillgit[report]" in page
    assert page == render_html(report, renderer="builtin")
    with pytest.raises(SkillgitError, match="matplotlib") as err:
        render_html(report, renderer="matplotlib")
    assert "pip install" in err.value.hint
    with pytest.raises(SkillgitError, match="renderer"):
        render_html(report, renderer="svgz")  # type: ignore[arg-type]


@pytest.mark.skipif(not HAS_MPL, reason="no matplotlib")
def test_auto_prefers_matplotlib_and_names_its_version(report):
    page = render_html(report)
    assert f"Charts drawn with matplotlib {matplotlib_version()}" in page
    assert page == render_html(report, renderer="matplotlib")


def test_timeline_collapses_rejected_and_colours_diffs(report):
    page = render_html(report, renderer="builtin")
    for s in report.steps:
        if s.accepted:
            assert f'<article class="decision accepted" id="d{s.seq}">' in page
        else:
            assert f'<details class="decision rejected" id="d{s.seq}">' in page  # closed: no `open`
    assert not re.search(r"<details[^>]*\sopen", page)
    assert '<span class="add">+- Check the units before answering (step 1).\n</span>' in page
    assert '<span class="del">-Answer briefly.\n</span>' in page
    assert '<span class="hunk">@@ -1,3 +1,4 @@\n</span>' in page
    assert "skipped_target_not_found" in page and "applied_fuzzy" in page
    assert "<h3 class=\"epoch\">epoch 2</h3>" in page
    assert "sha256:3f9a1c0d" in page and "skillgit train --new --set train.seed=0" in page
    first = report.steps[0]
    assert f"Δ {first.delta * 100:+.1f} pts" in page if first.delta is not None else True
    assert "<strong>$1.39</strong>" in page  # total cost by stage: 0.21 + 0.95 + 0.18 + 0.05


def test_write_report_writes_one_file(report, tmp_path):
    out = write_report(report, tmp_path / "deep" / "report.html", renderer="builtin")
    assert out.read_text(encoding="utf-8") == render_html(report, renderer="builtin")
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


def test_empty_run_renders():
    page = render_html(RunReport("r0"), renderer="builtin")
    assert "no decisions recorded" in page and "no usage recorded" in page
    if HAS_MPL:
        assert "no usage recorded" in render_html(RunReport("r0"), renderer="matplotlib")


def test_sparkline():
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([0.0, None, 1.0, float("nan")]) == "▁·█·"
    assert sparkline([0.3, 0.3]) == "▄▄"
    assert sparkline([None, None]) == "··"
    assert sparkline([]) == ""
    assert sparkline([0.5], lo=0.0, hi=1.0) == "▅"
    long = [i / 99 for i in range(100)]
    line = sparkline(long, width=10)
    assert len(line) == 10 and line[0] == "▁" and line[-1] == "█" and list(line) == sorted(line)
    assert sparkline([None] * 50 + [1.0] * 50, width=4, lo=0.0, hi=1.0) == "··██"
    with pytest.raises(ValueError):
        sparkline([1.0], width=0)


def test_timeline_lists_applied_edits_before_skipped_ones():
    """The loop records the edits in its ranking order, skipped ones possibly first; a reviewer reads what changed
    the skill first, then what was considered and left out (each group in the loop's order)."""
    edits = (ReportEdit("append", "SKILL.md", "", "idea A", "", "skipped_over_budget"),
             ReportEdit("append", "SKILL.md", "", "idea B", "", "applied"),
             ReportEdit("delete", "SKILL.md", "gone", "", "", "skipped_target_not_found"),
             ReportEdit("append", "SKILL.md", "", "idea C", "", "applied_fuzzy"))
    step = ReportStep(seq=1, step="1", verdict="accepted", val_before=0.2, val_after=0.4, delta=0.2, edits=edits)
    page = render_html(RunReport("r1", steps=(step,)), renderer="builtin")
    timeline = page[page.index('<ol class="edits">'):]
    order = [timeline.index(f'<pre class="content">idea {x}</pre>') for x in "BCA"]
    assert order == sorted(order) and timeline.index("gone") > order[1]
    assert "2 of 4 edits applied" in page


def _legend_texts(svg: str, key: str) -> list[str]:
    """The text of a chart's legend group (`<key>-legend_1`, as both renderers name it), in drawing order."""
    root = _parse(svg)
    groups = [e for e in root.iter() if e.get("id") == f"{key}-legend_1"]
    return ["".join(t.itertext()).strip() for g in groups for t in g.iter("text")]


def test_both_renderers_draw_each_chart_from_one_spec_with_the_same_legend(report):
    from skillgit.report.chartspec import chart_specs

    specs = {spec.key: spec for spec in chart_specs(report)}
    renderers = ["builtin"] + (["matplotlib"] if HAS_MPL else [])
    for renderer in renderers:
        for chart in render_charts(report, renderer).charts:
            spec = specs[chart.key]
            title = [spec.legend_title] if getattr(spec, "legend_title", "") else []
            assert _legend_texts(chart.svg, chart.key) == title + [e.label for e in spec.legend], (renderer, chart.key)
    # the curves legend lists only what is drawn: no test scores, no train batch -> no such entries in either
    bare = RunReport.from_dict({**report.to_dict(), "test": {"seed": None, "best": None, "final": None},
                                "steps": [{**s.to_dict(), "train_score": None} for s in report.steps]})
    for renderer in renderers:
        labels = _legend_texts(render_charts(bare, renderer).charts[0].svg, "curves")
        assert labels == ["val: skill in force", "val: best so far", "val: candidate accepted",
                          "val: candidate rejected"], renderer


@pytest.mark.parametrize("renderer", RENDERERS)
def test_heatmap_legend_is_the_continuous_scale_on_the_gate_metric(report, renderer):
    """The cells are each item's mean over the gate's repeats on the run's metric, coloured on a continuous scale;
    the legend used to show three categories, "passed (1.0)", "partial (0.5)" and "failed (0.0)", although 0.5
    counts as a pass in the review's flips and a soft run's 1.0 is not "passed"."""
    from skillgit.report.charts import score_colour

    soft = RunReport.from_dict({**report.to_dict(), "metric": "soft"})
    heat = render_charts(soft, renderer).charts[1]
    labels = _legend_texts(heat.svg, "heatmap")
    assert labels[0] == "item score (soft)"
    assert labels[1:] == ["0 failed", "0.25", "0.5", "0.75", "1 passed", "unknown", "accepted candidate"]
    assert "partial" not in heat.svg
    legend = next(e for e in _parse(heat.svg).iter() if e.get("id") == "heatmap-legend_1")
    svg_text = ET.tostring(legend, encoding="unicode").lower()
    for value in (0.0, 0.25, 0.5, 0.75, 1.0):
        assert score_colour(value) in svg_text, value  # each swatch in its scale colour
    assert "Val score of each item (soft," in heat.caption
