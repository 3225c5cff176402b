"""One self-contained, offline HTML page for one training run.

Contract:
- `render_html(report, renderer="auto") -> str` and `write_report(report, path, renderer="auto") -> Path`.
- Self-contained and offline: inline CSS, inline SVG charts, no script, no external resource of any kind; the
  file contains no `http://`/`https://` at all (text that contains `://` is written with `&#58;` for the colon,
  which renders the same) and every CSS/SVG `url(` points at an id inside the page.
- Inert: every piece of run, user or model text (reasons, edits, diffs, item ids, step names, commands) is
  HTML-escaped, so a teacher that writes `<script>` shows the text and runs nothing.
- Deterministic: the same report and renderer give the same bytes; the page shows no clock but the data's.
- Layout: header (run, status, seed → best → final on val and test with Δ), the charts, the decision timeline
  (accepted decisions open, rejected alternatives collapsed in `<details>`; each with Δ, reason, edits and a
  collapsible coloured diff), usage and time tables, config digest and reproduce command.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path

from skillgit.report.charts import ChartSet, Renderer, render_charts
from skillgit.report.model import ReportEdit, ReportStep, RunReport
from skillgit.textsafe import shown
from skillgit.types import Usage


def esc(value: object) -> str:
    """HTML-escape any text for element content or a quoted attribute, with URL-looking text made inert and control
    and bidi characters shown as escapes (a U+202E in a reason would reorder what the reader sees)."""
    return escape(shown(str(value)), quote=True).replace("://", "&#58;//")


def render_html(report: RunReport, renderer: Renderer = "auto") -> str:
    charts = render_charts(report, renderer)
    body = "\n".join([
        _header(report),
        _nav(),
        _charts(charts),
        _timeline(report),
        _usage(report),
        _reproduce(report),
        _footer(charts),
    ])
    title = f"skillgit report · {report.project + ' · ' if report.project else ''}{report.run_id}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
        "</body>\n</html>\n"
    )


def write_report(report: RunReport, path: str | Path, renderer: Renderer = "auto") -> Path:
    """Render `report` and write it to `path` (parent folders created); returns the path written. Never through a
    symbolic link: a collaborator can commit `skillgit-report-<their run>.html -> ~/.bashrc` where the default
    path lands (SkillgitError)."""
    import errno
    import os

    from skillgit.errors import SkillgitError

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(report, renderer).encode("utf-8")
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise SkillgitError(f"{out} is a symbolic link: the report is not written through it",
                            "remove the link, or choose another file with --output") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(page)
    return out


# ---- formatting -------------------------------------------------------------------------------------------


def fmt_score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def fmt_delta(value: float | None) -> str:
    """A score difference in points (×100), as `skillgit log` prints it: +3.3 pts."""
    return "" if value is None else f"{value * 100:+.1f} pts"


def _delta_span(value: float | None) -> str:
    if value is None:
        return '<span class="delta none">Δ –</span>'
    cls = "up" if value > 0 else "down" if value < 0 else "flat"
    return f'<span class="delta {cls}">Δ {esc(fmt_delta(value))}</span>'


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _money(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _int(value: float) -> str:
    return f"{value:,.0f}"


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.1f} s"
    minutes, sec = divmod(value, 60)
    return f"{minutes:.0f} min {sec:02.0f} s" if minutes < 60 else f"{minutes / 60:.1f} h"


# ---- sections ---------------------------------------------------------------------------------------------


def _score_card(split: str, seed: float | None, best: float | None, final: float | None, metric: str) -> str:
    return (
        f'<div class="card score"><div class="label">{esc(split)} · {esc(metric)}</div>'
        f'<div class="flow"><span title="seed">{fmt_score(seed)}</span><span class="arrow">→</span>'
        f'<span title="best">{fmt_score(best)}</span><span class="arrow">→</span>'
        f'<strong title="final">{fmt_score(final)}</strong></div>'
        '<div class="legend-line">seed → best → final</div>'
        f'<div>{_delta_span(_diff(seed, final))} <span class="muted">final vs seed</span></div>'
        f'<div>{_delta_span(_diff(seed, best))} <span class="muted">best vs seed</span></div></div>'
    )


def _header(r: RunReport) -> str:
    total = r.total_usage()
    status = f'<span class="badge status">{esc(r.status or "unknown")}</span>'
    stop = f' <span class="muted">({esc(r.stop_reason)})</span>' if r.stop_reason else ""
    where = " on branch ".join(esc(p) for p in (r.skill_path, r.branch) if p) or "–"
    when = " → ".join(esc(t) for t in (r.started, r.ended) if t) or "–"
    kinds = {k: sum(1 for s in r.steps if s.kind == k) for k in ("slow_update", "meta_reflect")}
    extra = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in kinds.items() if n)
    return (
        '<header>\n<div class="eyebrow">skillgit training report</div>\n'
        f'<h1>{esc(r.project) + " · " if r.project else ""}<code>{esc(r.run_id)}</code></h1>\n'
        f'<p class="subtitle">{status}{stop} · skill <code>{where}</code> · {when}</p>\n'
        + (f'<p class="subtitle">environment {esc(r.env_metric)}</p>\n' if r.env_metric else "")
        + '<div class="cards">'
        + _score_card("val", r.val.seed, r.val.best, r.val.final, r.metric)
        + _score_card("test", r.test.seed, r.test.best, r.test.final, r.metric)
        + '<div class="card"><div class="label">decisions</div>'
        f'<div class="flow"><strong>{len(r.steps)}</strong></div>'
        f'<div><span class="badge accepted">{r.accepted} accepted</span> '
        f'<span class="badge rejected">{r.rejected} rejected</span></div>'
        f'<div class="muted">{esc(extra) if extra else "&nbsp;"}</div></div>'
        '<div class="card"><div class="label">usage</div>'
        f'<div class="flow"><strong>{_money(total.cost_usd)}</strong></div>'
        f'<div>{_int(total.calls)} calls</div>'
        f'<div class="muted">{_int(total.total_tokens)} tokens</div></div>'
        "</div>\n</header>"
    )


def _nav() -> str:
    links = [("charts", "Charts"), ("timeline", "Decisions"), ("usage", "Usage"), ("reproduce", "Reproduce")]
    return '<nav>' + " ".join(f'<a href="#{k}">{v}</a>' for k, v in links) + "</nav>"


def _charts(charts: ChartSet) -> str:
    figures = "\n".join(
        f'<figure class="chart" id="chart-{esc(c.key)}"><figcaption><strong>{esc(c.title)}</strong>'
        f'{" — " + esc(c.caption) if c.caption else ""}</figcaption>\n{c.svg}\n</figure>'
        for c in charts.charts
    )
    return f'<section id="charts">\n<h2>Charts</h2>\n{figures}\n</section>'


def _renderer_note(charts: ChartSet) -> str:
    if charts.renderer == "matplotlib":
        return f"Charts drawn with matplotlib {esc(charts.version)} (inline SVG)."
    return ("Charts drawn with skillgit's built-in SVG renderer; add the <code>skillgit[report]</code> extra's "
            "package (<code>pip install 'matplotlib&gt;=3.7'</code>) for richer charts.")


def _step_head(s: ReportStep) -> str:
    kind = "" if s.kind == "step" else f'<span class="badge kind">{esc(s.kind.replace("_", " "))}</span>'
    name = f"step {s.step}" if s.kind == "step" else s.step
    seconds = sum(s.seconds.values())
    facts = [f"val {fmt_score(s.val_before)} → {fmt_score(s.val_after)}"]
    if s.train_score is not None:
        facts.append(f"train {fmt_score(s.train_score)}")
    if s.coverage is not None and s.coverage < 1:
        facts.append(f"coverage {s.coverage:.0%}")
    applied = sum(_applied(e) for e in s.edits)
    facts.append(f"{len(s.edits)} edit{'s' if len(s.edits) != 1 else ''}" if applied == len(s.edits)
                 else f"{applied} of {len(s.edits)} edits applied")
    facts.append(f"{_money(s.cost_usd)} · {_int(s.calls)} calls · {_int(s.tokens)} tok")
    if seconds:
        facts.append(_seconds(seconds))
    return (
        f'<span class="seq">#{s.seq}</span> <span class="badge {s.verdict}">{s.verdict}</span> {kind}'
        f'<span class="name">{esc(name)}</span> {_delta_span(s.delta)} '
        f'<span class="facts">{esc(" · ".join(facts))}</span>'
    )


def _applied(e: ReportEdit) -> bool:
    return (e.status or "").startswith("applied")


def _edit(e: ReportEdit) -> str:
    status = e.status or "unrecorded"
    ok = "ok" if _applied(e) else "skip"
    file = f" <code>{esc(e.file)}</code>" if e.file else ""
    head = f'<div class="edit-head"><span class="op">{esc(e.op)}</span><span class="estatus {ok}">{esc(status)}</span>'
    parts = [f"{head}{file}</div>"]
    if e.target:
        parts.append(f'<div class="field">target</div><pre class="target">{esc(e.target)}</pre>')
    if e.content:
        parts.append(f'<div class="field">content</div><pre class="content">{esc(e.content)}</pre>')
    if e.rationale:
        parts.append(f'<p class="rationale">{esc(e.rationale)}</p>')
    return '<li class="edit">' + "".join(parts) + "</li>"


def diff_html(diff: str) -> str:
    """A unified diff as escaped lines, each classed add / del / hunk / meta / ctx for colouring."""
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ")):
            cls = "meta"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        # The newline sits inside the block-level span: one line per span on screen, intact on copy.
        lines.append(f'<span class="{cls}">{esc(line)}\n</span>')
    return "".join(lines)


def _diff_block(diff: str) -> str:
    if not diff.strip():
        return '<p class="muted">no diff recorded</p>'
    lines = diff.splitlines()
    added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    return (f'<details class="diff"><summary>diff <span class="add">+{added}</span> '
            f'<span class="del">−{removed}</span></summary><pre class="diff">{diff_html(diff)}</pre></details>')


def _step_body(s: ReportStep) -> str:
    reason = f'<p class="reason">{esc(s.reason)}</p>' if s.reason else ""
    ordered = sorted(s.edits, key=lambda e: not _applied(e))  # applied first, each group in the loop's order
    edits = f'<ol class="edits">{"".join(_edit(e) for e in ordered)}</ol>' if s.edits else ""
    return reason + edits + _diff_block(s.diff)


def _step(s: ReportStep) -> str:
    if s.accepted:
        return (f'<article class="decision accepted" id="d{s.seq}"><div class="head">{_step_head(s)}</div>'
                f"{_step_body(s)}</article>")
    # Rejected alternatives are collapsed: the summary still shows verdict, Δ and why.
    why = f'<span class="why">{esc(s.reason)}</span>' if s.reason else ""
    return (f'<details class="decision rejected" id="d{s.seq}"><summary><span class="head">{_step_head(s)}</span>'
            f"{why}</summary>{_step_body(s)}</details>")


def _timeline(r: RunReport) -> str:
    intro = ('<p class="muted">In decision order. Accepted candidates are open; rejected alternatives are '
             "collapsed (click to open). Δ is the candidate's val score minus its parent's, in points.</p>")
    out = ['<section id="timeline">', "<h2>Decisions</h2>", intro]
    epoch: int | None = None
    for s in r.steps:
        if s.epoch != epoch:
            epoch = s.epoch
            out.append(f'<h3 class="epoch">epoch {s.epoch}</h3>')
        out.append(_step(s))
    if not r.steps:
        out.append('<p class="muted">no decisions recorded</p>')
    out.append("</section>")
    return "\n".join(out)


def _usage_table(title: str, key: str, usages: dict[str, Usage]) -> str:
    rows = sorted(usages.items(), key=lambda kv: (-kv[1].cost_usd, -kv[1].total_tokens, kv[0]))
    total = Usage()
    body = []
    for name, u in rows:
        total = total + u
        body.append(f"<tr><td>{esc(name)}</td><td>{_int(u.calls)}</td><td>{_int(u.prompt_tokens)}</td>"
                    f"<td>{_int(u.completion_tokens)}</td><td>{_money(u.cost_usd)}</td></tr>")
    body.append(f'<tr class="total"><td>total</td><td>{_int(total.calls)}</td><td>{_int(total.prompt_tokens)}</td>'
                f"<td>{_int(total.completion_tokens)}</td><td>{_money(total.cost_usd)}</td></tr>")
    return (f"<table><caption>{esc(title)}</caption><thead><tr><th>{esc(key)}</th><th>calls</th>"
            "<th>prompt tok</th><th>completion tok</th><th>cost</th></tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


def _time_table(steps: Sequence[ReportStep]) -> str:
    totals: dict[str, float] = {}
    for s in steps:
        for stage, sec in s.seconds.items():
            totals[stage] = totals.get(stage, 0.0) + sec
    if not totals:
        return ""
    rows = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    body = "".join(f"<tr><td>{esc(k)}</td><td>{_seconds(v)}</td></tr>" for k, v in rows)
    body += f'<tr class="total"><td>total</td><td>{_seconds(sum(totals.values()))}</td></tr>'
    return ("<table><caption>wall time by stage</caption><thead><tr><th>stage</th><th>time</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


def _per_step_table(steps: Iterable[ReportStep]) -> str:
    body = "".join(
        f'<tr><td><a href="#d{s.seq}">#{s.seq}</a></td><td>{esc(s.step)}</td>'
        f'<td><span class="badge {s.verdict}">{s.verdict}</span></td><td>{_int(s.calls)}</td>'
        f"<td>{_int(s.tokens)}</td><td>{_money(s.cost_usd)}</td><td>{_seconds(sum(s.seconds.values()))}</td></tr>"
        for s in steps
    )
    return ('<details class="per-step"><summary>per decision</summary><table><thead><tr><th>seq</th><th>step</th>'
            "<th>verdict</th><th>calls</th><th>tokens</th><th>cost</th><th>time</th></tr></thead>"
            f"<tbody>{body}</tbody></table></details>")


def _usage(r: RunReport) -> str:
    return (
        '<section id="usage">\n<h2>Usage</h2>\n<div class="tables">'
        + _usage_table("by stage", "stage", r.usage_by_stage)
        + _usage_table("by role", "role", r.usage_by_role)
        + _time_table(r.steps)
        + "</div>\n"
        + ("<h3>Proposers</h3>\n<ul>" + "".join(f"<li>{esc(line)}</li>" for line in r.proposers.values())
           + "</ul>\n" if r.proposers else "")
        + (_per_step_table(r.steps) if r.steps else "")
        + "\n</section>"
    )


def _reproduce(r: RunReport) -> str:
    digest = f"<code>{esc(r.config_digest)}</code>" if r.config_digest else '<span class="muted">–</span>'
    command = (f'<pre class="cmd">{esc(r.reproduce)}</pre>' if r.reproduce
               else '<p class="muted">no reproduce command recorded</p>')
    return (f'<section id="reproduce">\n<h2>Reproduce</h2>\n<p>config digest {digest}</p>\n{command}\n'
            "</section>")


def _footer(charts: ChartSet) -> str:
    return f'<footer>{_renderer_note(charts)} Generated by <code>skillgit report</code>; works offline.</footer>'


CSS = """
:root{color-scheme:light;--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#f8fafc;--card:#fff;
--acc:#16a34a;--rej:#dc2626;--blue:#2563eb}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:26px;margin:2px 0 6px}h1 code{font-size:22px}
h2{font-size:20px;margin:36px 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3.epoch{font-size:14px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:22px 0 8px}
code,pre{font-family:ui-monospace,"SFMono-Regular","DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:8px 10px;background:#f3f4f6;
border-radius:6px;overflow-x:auto}
.eyebrow{color:var(--blue);font-weight:600;font-size:13px;text-transform:uppercase;letter-spacing:.08em}
.subtitle{color:#374151;margin:0 0 16px}.muted{color:var(--muted)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 16px}
.card .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.06em}
.card .flow{font-size:22px;font-variant-numeric:tabular-nums;margin:2px 0}
.card .arrow{color:var(--muted);margin:0 6px;font-size:16px}.legend-line{color:var(--muted);font-size:12px}
nav{position:sticky;top:0;background:rgba(248,250,252,.95);padding:10px 0;margin-top:16px;
border-bottom:1px solid var(--line);z-index:1}
nav a{color:var(--blue);text-decoration:none;margin-right:18px;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;
border:1px solid transparent;vertical-align:1px}
.badge.accepted{background:#dcfce7;color:#166534;border-color:#86efac}
.badge.rejected{background:#fee2e2;color:#991b1b;border-color:#fca5a5}
.badge.status{background:#e0e7ff;color:#3730a3}.badge.kind{background:#f3e8ff;color:#6b21a8}
.delta{font-weight:600;font-variant-numeric:tabular-nums;white-space:nowrap}
.delta.up{color:var(--acc)}.delta.down{color:var(--rej)}.delta.flat,.delta.none{color:var(--muted)}
.chart{background:var(--card);border:1px solid var(--line);border-radius:10px;margin:0 0 16px;padding:12px 16px}
.chart figcaption{font-size:14px;color:#374151;margin-bottom:8px}
.chart svg{display:block;max-width:100%;height:auto;margin:0 auto}
.chart svg *{stroke-linejoin:round;stroke-linecap:butt}
.decision{display:block;background:var(--card);border:1px solid var(--line);border-left:4px solid var(--acc);
border-radius:8px;padding:10px 14px;margin:8px 0}
.decision.rejected{border-left-color:#fca5a5;background:#fffbfb}
.decision>summary{cursor:pointer;list-style-position:outside;margin-left:14px}
.decision .head{display:inline;font-variant-numeric:tabular-nums}
.decision .seq{color:var(--muted);font-weight:600}.decision .name{font-weight:700;margin:0 6px}
.decision .facts{color:var(--muted);font-size:13px}
.decision .why{display:block;color:#4b5563;font-size:14px;margin-top:2px}
.reason{margin:8px 0;color:#1f2937}
ol.edits{margin:8px 0;padding-left:22px}li.edit{margin:6px 0 10px}
.edit-head{display:flex;gap:8px;align-items:center}
.op{font-family:ui-monospace,monospace;font-size:12px;background:#e0f2fe;color:#075985;padding:1px 6px;
border-radius:4px}
.estatus{font-size:12px}.estatus.ok{color:var(--acc)}.estatus.skip{color:#b45309}
.field{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.06em;margin-top:4px}
pre.target{background:#fef9c3}pre.content{background:#ecfdf5}
.rationale{font-style:italic;color:#374151;margin:4px 0}
details.diff>summary{cursor:pointer;color:var(--blue);font-size:14px;margin-top:6px}
pre.diff{background:#0f172a;color:#e2e8f0;padding:10px 0;line-height:1.45}
pre.diff span{display:block;padding:0 12px}
pre.diff .add{background:rgba(34,197,94,.18);color:#bbf7d0}
pre.diff .del{background:rgba(239,68,68,.2);color:#fecaca}
pre.diff .hunk{color:#7dd3fc}pre.diff .meta{color:#94a3b8}
summary .add{color:var(--acc)}summary .del{color:var(--rej)}
.tables{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
table{border-collapse:collapse;background:var(--card);border:1px solid var(--line);font-size:14px;
font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{padding:5px 12px;border-bottom:1px solid var(--line);text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f9fafb;font-size:12px;color:#374151}
tr.total td{font-weight:700;border-top:2px solid var(--line)}
details.per-step{margin-top:14px}details.per-step>summary{cursor:pointer;color:var(--blue)}
pre.cmd{background:#0f172a;color:#e2e8f0;padding:12px 14px}
footer{margin-top:40px;color:var(--muted);font-size:13px;border-top:1px solid var(--line);padding-top:12px}
"""
