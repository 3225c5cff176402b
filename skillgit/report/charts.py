"""The report's three charts as inline SVG: scores per decision, per-item val heatmap, cost per stage and role.

Contract:
- `render_charts(report, renderer)` returns a `ChartSet`: the renderer actually used and three `Chart`s whose
  `svg` is an `<svg>` element ready to inline in an HTML5 page. `renderer="auto"` uses matplotlib when it is
  importable (the optional extra `skillgit[report]`) and the built-in pure-SVG renderer otherwise;
  `"matplotlib"` insists (a `SkillgitError` with an install hint when missing); `"builtin"` never imports it.
- Offline and inert: the SVG holds no XML prolog, DOCTYPE, metadata or namespace URIs, no `://` at all (text
  that contains one is written with `&#58;` for the colon, which renders the same), and every `url(` points at an
  id inside the same SVG (`url(#…)`). Every id is prefixed with the chart's key, so the three SVGs can share a
  page without id clashes.
- Deterministic: the same report gives byte-identical SVG (matplotlib: fixed `svg.hashsalt`, no date, text as
  `<text>` with `svg.fonttype = none`; pyplot and the global backend are never touched).
- Unknown is not failure: heatmap cells whose score is unknown (None, or no score recorded) are hatched grey in a
  group with id `<key>-cells-unknown`; known cells are coloured red (0, failed) → amber → green (1, passed) in
  a group with id `<key>-cells-known`.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from skillgit.errors import SkillgitError
from skillgit.report.model import (
    RunReport,
    best_so_far,
    epoch_boundaries,
    heatmap_columns,
    heatmap_items,
    val_current,
)
from skillgit.types import Usage

Renderer = Literal["auto", "matplotlib", "builtin"]
RENDERERS: tuple[str, ...] = ("auto", "matplotlib", "builtin")
HEATMAP_XLABEL = "decision (the candidate scored; ▼ and green label = accepted)"
MAX_HEATMAP_ITEMS = 120  # rows beyond this are left out (and the caption says so): a chart, not a table

# One palette for both renderers, so the page reads the same whichever drew it.
C_TRAIN = "#f59e0b"
C_VAL = "#2563eb"
C_BEST = "#7c3aed"
C_ACCEPTED = "#16a34a"
C_REJECTED = "#dc2626"
C_TEST_SEED = "#6b7280"
C_TEST_FINAL = "#111827"
C_GRID = "#e5e7eb"
C_EPOCH = "#9ca3af"
C_UNKNOWN_FILL = "#f3f4f6"
C_UNKNOWN_HATCH = "#9ca3af"
C_BAR = "#2563eb"
C_BAR2 = "#0d9488"
_SCALE = ((0.0, (0xDC, 0x26, 0x26)), (0.5, (0xF5, 0x9E, 0x0B)), (1.0, (0x16, 0xA3, 0x4A)))


@dataclass(frozen=True)
class Chart:
    key: str  # "curves" | "heatmap" | "cost"; also the prefix of every id in `svg`
    title: str
    svg: str
    caption: str = ""


@dataclass(frozen=True)
class ChartSet:
    renderer: str  # "matplotlib" or "builtin"
    version: str  # matplotlib's version, or "" for the built-in renderer
    charts: tuple[Chart, ...]


def matplotlib_version() -> str | None:
    """matplotlib's version when it can be imported, else None."""
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return str(matplotlib.__version__)


def render_charts(report: RunReport, renderer: Renderer = "auto") -> ChartSet:
    if renderer not in RENDERERS:
        raise SkillgitError(f"unknown report renderer {renderer!r}", f"use one of {', '.join(RENDERERS)}")
    version = None if renderer == "builtin" else matplotlib_version()
    if renderer == "matplotlib" and version is None:
        raise SkillgitError("the matplotlib report renderer needs matplotlib, which is not installed",
                            "pip install 'matplotlib>=3.7' (or use the built-in renderer)")
    if version is not None:
        return ChartSet("matplotlib", version, _mpl_charts(report))
    return ChartSet("builtin", "", _builtin_charts(report))


# ---- shared helpers ---------------------------------------------------------------------------------------


def score_colour(value: float) -> str:
    """Hex colour of a known score: red at 0 (failed), amber at 0.5, green at 1 (clamped)."""
    v = min(1.0, max(0.0, value))
    for (x0, c0), (x1, c1) in itertools.pairwise(_SCALE):
        if v <= x1:
            t = (v - x0) / (x1 - x0)
            return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(c0, c1))
    return "#16a34a"


def _usage_bars(usages: dict[str, Usage]) -> tuple[list[tuple[str, float]], str]:
    """(label, value) bars, largest first (ties by name), and their unit: USD when any cost is known, else tokens."""
    if any(u.cost_usd for u in usages.values()):
        bars, unit = [(k, u.cost_usd) for k, u in usages.items()], "cost (USD)"
    else:
        bars, unit = [(k, float(u.total_tokens)) for k, u in usages.items()], "tokens (no prices known)"
    return sorted(bars, key=lambda kv: (-kv[1], kv[0])), unit


def _fmt_value(value: float, unit: str) -> str:
    if unit.startswith("cost"):
        return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    return f"{value:,.0f}"


def _curves_caption(report: RunReport) -> str:
    return ("Each decision's train batch score, the val score of every candidate (filled: accepted, hollow: "
            "rejected), the val score of the skill in force and the best so far; test scores at the right end.")


def _heatmap_caption(report: RunReport, rows: int, total: int) -> str:
    cut = f" Showing the first {rows} of {total} items." if rows < total else ""
    return ("Val score of each item for the seed and for each decision's candidate. Hatched grey: unknown (not "
            "scored, or the scorer could not decide) — not the same as a failure (red)." + cut)


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')


def _inert_text(text: str) -> str:
    """Break `scheme://` so no URL-looking text remains in the file; `&#58;` renders as ':'."""
    return text.replace("://", "&#58;//")


def sanitize_svg(svg: str, prefix: str) -> str:
    """Turn a standalone SVG document into an inert inline `<svg>` element with ids prefixed by `prefix`."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)
    # matplotlib's global `*{stroke-linejoin…}` rule would leak into the page; the page's CSS scopes it instead.
    svg = re.sub(r'<style type="text/css">.*?</style>\s*', "", svg, flags=re.DOTALL)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = re.sub(r"\s+version=\"1\.1\"", "", svg)
    svg = svg.replace("xlink:href=", "href=")
    svg = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)
    svg = re.sub(r"<defs>\s*</defs>\s*", "", svg)
    return _inert_text(svg).strip()


# ---- matplotlib -------------------------------------------------------------------------------------------


def _mpl_charts(report: RunReport) -> tuple[Chart, ...]:
    import matplotlib  # type: ignore[import-not-found,unused-ignore]

    rc: Any = {  # matplotlib types the keys as a Literal of every rcParam name
        "svg.fonttype": "none",  # text stays text: searchable, selectable, small
        "svg.hashsalt": "skillgit-report",  # deterministic ids for clip paths, markers and hatches
        "font.size": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.edgecolor": "#9ca3af",
        "axes.titleweight": "bold",
        "xtick.color": "#374151",
        "ytick.color": "#374151",
        "legend.frameon": False,
        "hatch.color": C_UNKNOWN_HATCH,
    }
    if "text.parse_math" in matplotlib.rcParams:
        rc["text.parse_math"] = False  # a `$` in an item id or step name is text, not TeX
    with matplotlib.rc_context(rc):
        curves_svg = _mpl_curves(report)
        heat_svg, rows, total = _mpl_heatmap(report)
        cost_svg = _mpl_cost(report)
    return (
        Chart("curves", "Scores per decision", sanitize_svg(curves_svg, "curves"), _curves_caption(report)),
        Chart("heatmap", "Val items × decisions", sanitize_svg(heat_svg, "heatmap"),
              _heatmap_caption(report, rows, total)),
        Chart("cost", "Cost by stage and role", sanitize_svg(cost_svg, "cost"), ""),
    )


def _mpl_save(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _nan(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else v for v in values]


def _mpl_curves(report: RunReport) -> str:
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]

    steps = report.steps
    fig = Figure(figsize=(10.5, 4.4), layout="constrained")
    ax = fig.add_subplot()
    last = steps[-1].seq if steps else 0
    xs = [0] + [s.seq for s in steps]
    ax.step(xs, _nan([report.val.seed, *val_current(report)]), where="post", color=C_VAL, lw=2.2,
            label="val: skill in force")
    ax.step(xs, _nan([report.val.seed, *best_so_far(report)]), where="post", color=C_BEST, lw=1.3, ls="--",
            label="val: best so far")
    train = [(s.seq, s.train_score) for s in steps if s.train_score is not None]
    if train:
        ax.plot([x for x, _ in train], [y for _, y in train], color=C_TRAIN, lw=1.2, marker="o", ms=3.5,
                alpha=0.9, label="train batch (rollout mean)")
    acc = [(s.seq, s.val_after) for s in steps if s.accepted and s.val_after is not None]
    rej = [(s.seq, s.val_after) for s in steps if not s.accepted and s.val_after is not None]
    ax.scatter([x for x, _ in acc], [y for _, y in acc], s=46, color=C_ACCEPTED, zorder=4,
               label="val: candidate accepted")
    ax.scatter([x for x, _ in rej], [y for _, y in rej], s=46, facecolors="white", edgecolors=C_REJECTED,
               linewidths=1.6, zorder=4, label="val: candidate rejected")
    if report.val.seed is not None:
        ax.scatter([0], [report.val.seed], s=46, color=C_VAL, zorder=4)
    x_test = last + 1
    if report.test.seed is not None:
        ax.scatter([x_test], [report.test.seed], marker="v", s=70, color=C_TEST_SEED, zorder=5,
                   label="test: seed")
    if report.test.final is not None:
        ax.scatter([x_test], [report.test.final], marker="^", s=70, color=C_TEST_FINAL, zorder=5,
                   label="test: final")
    if report.test.best is not None and report.test.best != report.test.final:
        ax.scatter([x_test], [report.test.best], marker="*", s=90, color=C_BEST, zorder=5, label="test: best")
    ax.axvline(last + 0.5, color=C_GRID, lw=1)
    ax.annotate("test", (x_test, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                color="#374151", fontsize=9)
    for x, epoch in epoch_boundaries(steps):
        ax.axvline(x, color=C_EPOCH, lw=1, ls=":")
        ax.annotate(f"epoch {epoch}", (x, 1.0), xycoords=("data", "axes fraction"), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="bottom", color="#4b5563", fontsize=9)
    ax.set_xlim(-0.5, x_test + 0.7)
    known = [v for v in [*_known_scores(report)] if v is not None]
    if known and min(known) >= 0 and max(known) <= 1:
        ax.set_ylim(-0.04, 1.04)
    ax.set_xticks(range(0, last + 1, max(1, math.ceil((last + 1) / 20))))  # decisions only, not the test column
    ax.grid(axis="y", color=C_GRID, lw=0.8)
    ax.set_axisbelow(True)
    ax.set_xlabel("decision (seq; 0 = seed)")
    ax.set_ylabel(f"score ({report.metric})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    return _mpl_save(fig)


def _known_scores(report: RunReport) -> list[float | None]:
    out: list[float | None] = [report.val.seed, report.val.best, report.val.final, report.test.seed,
                               report.test.best, report.test.final]
    for s in report.steps:
        out.extend([s.val_before, s.val_after, s.train_score])
    return out


def _heat_grid(report: RunReport) -> tuple[list[str], list[tuple[str, dict[str, float | None]]], int]:
    items = heatmap_items(report)
    return items[:MAX_HEATMAP_ITEMS], heatmap_columns(report), len(items)


def _labelled_columns(count: int) -> list[int]:
    """Heatmap columns that get a text label: all of them up to 32, else every k-th so labels never overlap."""
    stride = max(1, math.ceil(count / 32))
    return list(range(0, count, stride))


def _accepted_columns(report: RunReport) -> list[int]:
    """Heatmap column indices (0 = seed) of accepted candidates."""
    return [i + 1 for i, s in enumerate(report.steps) if s.accepted]


def _mpl_heatmap(report: RunReport) -> tuple[str, int, int]:
    from matplotlib.collections import PatchCollection  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.lines import Line2D  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.patches import Patch, Rectangle  # type: ignore[import-not-found,unused-ignore]

    items, cols, total = _heat_grid(report)
    accepted = _accepted_columns(report)
    height = 2.0 + 0.22 * max(1, len(items))
    width = min(10.5, 2.8 + 0.55 * len(cols))
    fig = Figure(figsize=(max(width, 6.0), height), layout="constrained")
    ax = fig.add_subplot()
    known: list[Rectangle] = []
    known_colours: list[str] = []
    unknown: list[Rectangle] = []
    for x, (_, scores) in enumerate(cols):
        for y, item in enumerate(items):
            value = scores.get(item)
            rect = Rectangle((x - 0.5, y - 0.5), 1, 1)
            if value is None:
                unknown.append(rect)
            else:
                known.append(rect)
                known_colours.append(score_colour(value))
    known_pc = PatchCollection(known, facecolors=known_colours, edgecolors="white", linewidths=0.8)
    known_pc.set_gid("cells-known")
    unknown_pc = PatchCollection(unknown, facecolors=C_UNKNOWN_FILL, edgecolors=C_UNKNOWN_HATCH, hatch="////",
                                 linewidths=0.5)
    unknown_pc.set_gid("cells-unknown")
    ax.add_collection(known_pc)
    ax.add_collection(unknown_pc)
    ax.set_xlim(-0.5, len(cols) - 0.5)
    ax.set_ylim(max(1, len(items)) - 0.5, -1.4)  # the band above row 0 holds the accepted markers
    ax.scatter(accepted, [-0.95] * len(accepted), marker="v", s=36, color=C_ACCEPTED)
    if not items:
        ax.text(0.5, 0.5, "no item scores recorded", transform=ax.transAxes, ha="center", color="#6b7280")
    ticks = _labelled_columns(len(cols))
    ax.set_xticks(ticks)
    ax.set_xticklabels([cols[i][0] for i in ticks], rotation=45, ha="right", rotation_mode="anchor", fontsize=9)
    for tick, i in zip(ax.get_xticklabels(), ticks):
        if i in accepted:
            tick.set_color(C_ACCEPTED)
            tick.set_fontweight("bold")
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels(items, fontsize=9)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel(HEATMAP_XLABEL)
    ax.set_ylabel("val item")
    handles = [Patch(facecolor=score_colour(1.0), label="passed (1.0)"),
               Patch(facecolor=score_colour(0.5), label="partial (0.5)"),
               Patch(facecolor=score_colour(0.0), label="failed (0.0)"),
               Patch(facecolor=C_UNKNOWN_FILL, edgecolor=C_UNKNOWN_HATCH, hatch="////", label="unknown"),
               Line2D([], [], ls="none", marker="v", ms=7, color=C_ACCEPTED, label="accepted candidate")]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncols=5, fontsize=9,
              borderaxespad=0.2)
    return _mpl_save(fig), len(items), total


def _mpl_cost(report: RunReport) -> str:
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]

    panels = [("by stage", report.usage_by_stage, C_BAR), ("by role", report.usage_by_role, C_BAR2)]
    rows = max([len(u) for _, u, _ in panels] + [1])
    fig = Figure(figsize=(10.5, 1.3 + 0.32 * rows), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, (title, usages, colour) in zip(axes, panels):
        bars, unit = _usage_bars(usages)
        labels = [k for k, _ in bars]
        values = [v for _, v in bars]
        ax.barh(range(len(bars)), values, color=colour, height=0.6)
        ax.set_yticks(range(len(bars)))
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        top = max(values + [0.0])
        for y, v in enumerate(values):
            ax.annotate(_fmt_value(v, unit), (v, y), xytext=(3, 0), textcoords="offset points", va="center",
                        fontsize=8, color="#374151")
        ax.set_xlim(0, top * 1.25 if top > 0 else 1)
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel(unit)
        ax.grid(axis="x", color=C_GRID, lw=0.8)
        ax.set_axisbelow(True)
        if not bars:
            ax.text(0.5, 0.5, "no usage recorded", transform=ax.transAxes, ha="center", color="#6b7280")
    return _mpl_save(fig)


# ---- built-in pure-SVG renderer ---------------------------------------------------------------------------


def _x(s: object) -> str:
    """XML-escape text for an SVG text node or attribute, with URL-looking text made inert."""
    out = str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _inert_text(out)


def _n(v: float) -> str:
    """A coordinate, rounded so output is short and stable."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


class _Svg:
    """A tiny SVG writer: elements are appended in order; ids are prefixed with the chart key."""

    def __init__(self, width: float, height: float, prefix: str):
        self.width, self.height, self.prefix = width, height, prefix
        self.parts: list[str] = []

    def id(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def add(self, tag: str, text: str | None = None, /, **attrs: object) -> None:
        rendered = "".join(f' {k.rstrip("_").replace("_", "-")}="{_x(v)}"' for k, v in attrs.items()
                           if v is not None)
        self.parts.append(f"<{tag}{rendered}/>" if text is None else f"<{tag}{rendered}>{_x(text)}</{tag}>")

    def raw(self, markup: str) -> None:
        self.parts.append(markup)

    def path(self, points: Sequence[tuple[float, float]], **attrs: object) -> None:
        if points:
            d = " ".join(f"{'M' if i == 0 else 'L'}{_n(x)} {_n(y)}" for i, (x, y) in enumerate(points))
            self.add("path", d=d, fill=attrs.pop("fill", "none"), **attrs)

    def text(self, x: float, y: float, s: str, size: float = 12, anchor: str = "start", **attrs: object) -> None:
        self.add("text", s, x=_n(x), y=_n(y), font_size=_n(size), text_anchor=anchor, **attrs)

    def render(self) -> str:
        head = (f'<svg width="{_n(self.width)}" height="{_n(self.height)}" '
                f'viewBox="0 0 {_n(self.width)} {_n(self.height)}" font-family="sans-serif" fill="#111827">')
        return head + "\n" + "\n".join(self.parts) + "\n</svg>"


class _Scale:
    def __init__(self, d0: float, d1: float, r0: float, r1: float):
        self.d0, self.d1, self.r0, self.r1 = d0, d1, r0, r1

    def __call__(self, v: float) -> float:
        span = (self.d1 - self.d0) or 1.0
        return self.r0 + (v - self.d0) / span * (self.r1 - self.r0)


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    out: list[float] = []
    v = start
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _builtin_charts(report: RunReport) -> tuple[Chart, ...]:
    heat_svg, rows, total = _builtin_heatmap(report)
    return (
        Chart("curves", "Scores per decision", _builtin_curves(report), _curves_caption(report)),
        Chart("heatmap", "Val items × decisions", heat_svg, _heatmap_caption(report, rows, total)),
        Chart("cost", "Cost by stage and role", _builtin_cost(report), ""),
    )


def _legend(svg: _Svg, x: float, y: float, entries: Sequence[tuple[str, Callable[[float, float], None]]]) -> None:
    for i, (label, draw) in enumerate(entries):
        yy = y + i * 20
        draw(x + 10, yy)
        svg.text(x + 26, yy + 4, label, size=12)


def _builtin_curves(report: RunReport) -> str:
    steps = report.steps
    W, H, left, right, top, bottom = 1000.0, 400.0, 56.0, 210.0, 28.0, 48.0
    svg = _Svg(W, H, "curves")
    last = steps[-1].seq if steps else 0
    x_test = last + 1
    known = [v for v in _known_scores(report) if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 1.0)
    if lo >= 0 and hi <= 1:
        lo, hi = 0.0, 1.0
    pad = (hi - lo) * 0.04 or 0.05
    sx = _Scale(-0.5, x_test + 0.7, left, W - right)
    sy = _Scale(lo - pad, hi + pad, H - bottom, top)
    for t in _ticks(lo, hi):
        svg.path([(left, sy(t)), (W - right, sy(t))], stroke=C_GRID)
        svg.text(left - 6, sy(t) + 4, f"{t:g}", size=11, anchor="end", fill="#374151")
    stride = max(1, math.ceil((last + 1) / 20))
    for seq in range(0, last + 1, stride):
        svg.path([(sx(seq), H - bottom), (sx(seq), H - bottom + 4)], stroke="#6b7280")
        svg.text(sx(seq), H - bottom + 17, str(seq), size=11, anchor="middle", fill="#374151")
    svg.path([(left, top), (left, H - bottom), (W - right, H - bottom)], stroke="#9ca3af")
    svg.path([(sx(last + 0.5), top), (sx(last + 0.5), H - bottom)], stroke=C_GRID)
    svg.text(sx(x_test), top - 8, "test", size=11, anchor="middle", fill="#374151")
    for x, epoch in epoch_boundaries(steps):
        svg.path([(sx(x), top), (sx(x), H - bottom)], stroke=C_EPOCH, stroke_dasharray="2 3")
        svg.text(sx(x) + 4, top - 8, f"epoch {epoch}", size=11, fill="#4b5563")
    xs = [0] + [s.seq for s in steps]

    def step_line(values: Sequence[float | None], **attrs: object) -> None:
        points: list[tuple[float, float]] = []
        for i, (x, v) in enumerate(zip(xs, values)):
            if v is None:
                continue
            nxt = xs[i + 1] if i + 1 < len(xs) else x
            points += [(sx(x), sy(v)), (sx(nxt), sy(v))]
        svg.path(points, **attrs)

    step_line([report.val.seed, *val_current(report)], stroke=C_VAL, stroke_width=2.4)
    step_line([report.val.seed, *best_so_far(report)], stroke=C_BEST, stroke_width=1.4, stroke_dasharray="6 4")
    train = [(sx(s.seq), sy(s.train_score)) for s in steps if s.train_score is not None]
    svg.path(train, stroke=C_TRAIN, stroke_width=1.3)
    for x, y in train:
        svg.add("circle", cx=_n(x), cy=_n(y), r="2.5", fill=C_TRAIN)
    if report.val.seed is not None:
        svg.add("circle", cx=_n(sx(0)), cy=_n(sy(report.val.seed)), r="4", fill=C_VAL)
    for s in steps:
        if s.val_after is None:
            continue
        fill, stroke = (C_ACCEPTED, C_ACCEPTED) if s.accepted else ("white", C_REJECTED)
        svg.add("circle", cx=_n(sx(s.seq)), cy=_n(sy(s.val_after)), r="4.5", fill=fill, stroke=stroke,
                stroke_width="1.8", class_=s.verdict)
    markers = [(report.test.seed, C_TEST_SEED, "test: seed", 1), (report.test.final, C_TEST_FINAL, "test: final", -1)]
    for value, colour, _, direction in markers:
        if value is not None:
            cx, cy = sx(x_test), sy(value)
            svg.path([(cx - 6, cy - 5 * direction), (cx + 6, cy - 5 * direction), (cx, cy + 6 * direction)],
                     fill=colour, stroke=colour)
    if report.test.best is not None and report.test.best != report.test.final:
        cx, cy = sx(x_test), sy(report.test.best)
        svg.path([(cx, cy - 6), (cx + 6, cy), (cx, cy + 6), (cx - 6, cy), (cx, cy - 6)], fill=C_BEST, stroke=C_BEST)
    svg.text((left + W - right) / 2, H - 10, "decision (seq; 0 = seed)", size=12, anchor="middle")
    svg.text(16, (top + H - bottom) / 2, f"score ({report.metric})", size=12, anchor="middle",
             transform=f"rotate(-90 16 {_n((top + H - bottom) / 2)})")

    def line(colour: str, dash: str | None = None, width: float = 2.0) -> Callable[[float, float], None]:
        return lambda x, y: svg.path([(x - 9, y), (x + 9, y)], stroke=colour, stroke_width=width,
                                     stroke_dasharray=dash)

    def dot(fill: str, stroke: str) -> Callable[[float, float], None]:
        return lambda x, y: svg.add("circle", cx=_n(x), cy=_n(y), r="4.5", fill=fill, stroke=stroke,
                                    stroke_width="1.8")

    def tri(colour: str, direction: int) -> Callable[[float, float], None]:
        return lambda x, y: svg.path([(x - 6, y - 5 * direction), (x + 6, y - 5 * direction),
                                      (x, y + 6 * direction)], fill=colour, stroke=colour)

    _legend(svg, W - right + 14, top + 6, [
        ("val: skill in force", line(C_VAL, width=2.4)),
        ("val: best so far", line(C_BEST, "6 4", 1.4)),
        ("train batch (rollout mean)", line(C_TRAIN, width=1.3)),
        ("val: candidate accepted", dot(C_ACCEPTED, C_ACCEPTED)),
        ("val: candidate rejected", dot("white", C_REJECTED)),
        ("test: seed", tri(C_TEST_SEED, 1)),
        ("test: final", tri(C_TEST_FINAL, -1)),
        ("test: best", lambda x, y: svg.path([(x, y - 6), (x + 6, y), (x, y + 6), (x - 6, y), (x, y - 6)],
                                             fill=C_BEST, stroke=C_BEST)),
    ])
    return svg.render()


def _down_triangle(svg: _Svg, x: float, y: float, r: float) -> None:
    svg.path([(x - r, y - r), (x + r, y - r), (x, y + r * 0.8), (x - r, y - r)], fill=C_ACCEPTED, stroke="none")


def _builtin_heatmap(report: RunReport) -> tuple[str, int, int]:
    items, cols, total = _heat_grid(report)
    accepted = _accepted_columns(report)
    cell_w = max(6.0, min(44.0, 860.0 / max(1, len(cols))))
    cell_h = 18.0
    label_w = min(240.0, 24.0 + 6.5 * max([len(i) for i in items] + [4]))
    left, top = label_w + 30.0, 58.0
    col_label_h = 12.0 + 6.0 * max([len(c) for c, _ in cols] + [4]) * 0.72
    W = left + max(660.0, cell_w * len(cols) + 20.0)  # room for the legend row, however few columns
    H = top + cell_h * len(items) + col_label_h + 30.0
    svg = _Svg(W, H, "heatmap")
    hatch = svg.id("hatch")
    svg.raw(f'<defs><pattern id="{hatch}" patternUnits="userSpaceOnUse" width="6" height="6" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{C_UNKNOWN_FILL}"/>'
            f'<path d="M0 0 L0 6" stroke="{C_UNKNOWN_HATCH}" stroke-width="1.5"/></pattern></defs>')
    # legend row above the grid
    lx = left
    for label, fill in [("passed (1.0)", score_colour(1.0)), ("partial (0.5)", score_colour(0.5)),
                        ("failed (0.0)", score_colour(0.0)), ("unknown", f"url(#{hatch})")]:
        svg.add("rect", x=_n(lx), y="12", width="14", height="14", fill=fill, stroke=C_UNKNOWN_HATCH,
                stroke_width="0.5")
        svg.text(lx + 19, 24, label, size=12)
        lx += 40 + 7 * len(label)
    _down_triangle(svg, lx + 7, 19, 6)
    svg.text(lx + 19, 24, "accepted candidate", size=12)
    for cx in accepted:
        _down_triangle(svg, left + cx * cell_w + cell_w / 2, top - 8, min(5.0, cell_w / 2))
    known_cells: list[str] = []
    unknown_cells: list[str] = []
    for cx, (_, scores) in enumerate(cols):
        for cy, item in enumerate(items):
            value = scores.get(item)
            x, y = left + cx * cell_w, top + cy * cell_h
            geom = f'x="{_n(x)}" y="{_n(y)}" width="{_n(cell_w)}" height="{_n(cell_h)}"'
            if value is None:
                unknown_cells.append(f'<rect {geom} fill="url(#{hatch})" stroke="{C_UNKNOWN_HATCH}" '
                                     f'stroke-width="0.5"><title>{_x(item)}: unknown</title></rect>')
            else:
                known_cells.append(f'<rect {geom} fill="{score_colour(value)}" stroke="white" stroke-width="1">'
                                   f'<title>{_x(item)}: {value:g}</title></rect>')
    svg.raw(f'<g id="{svg.id("cells-known")}">' + "".join(known_cells) + "</g>")
    svg.raw(f'<g id="{svg.id("cells-unknown")}">' + "".join(unknown_cells) + "</g>")
    for cy, item in enumerate(items):
        svg.text(left - 6, top + cy * cell_h + cell_h * 0.7, item, size=12, anchor="end", fill="#374151")
    base = top + cell_h * len(items) + 8
    for cx in _labelled_columns(len(cols)):
        label = cols[cx][0]
        x = left + cx * cell_w + cell_w / 2
        ok = cx in accepted
        svg.text(x, base, label, size=11, anchor="end", transform=f"rotate(-45 {_n(x)} {_n(base)})",
                 fill=C_ACCEPTED if ok else "#374151", font_weight="bold" if ok else None)
    svg.path([(left, top + cell_h * len(items)), (left + cell_w * len(cols), top + cell_h * len(items))],
             stroke="#9ca3af")
    svg.text(left + cell_w * len(cols) / 2, H - 8, HEATMAP_XLABEL, size=12, anchor="middle")
    if not items:
        svg.text(left + cell_w * len(cols) / 2, top + 14, "no item scores recorded", size=12, anchor="middle",
                 fill="#6b7280")
    mid = top + cell_h * len(items) / 2
    svg.text(14, mid, "val item", size=12, anchor="middle", transform=f"rotate(-90 14 {_n(mid)})")
    return svg.render(), len(items), total


def _builtin_cost(report: RunReport) -> str:
    panels = [("by stage", report.usage_by_stage, C_BAR), ("by role", report.usage_by_role, C_BAR2)]
    rows = max([len(u) for _, u, _ in panels] + [1])
    W, bar_h, top = 1000.0, 22.0, 30.0
    H = top + rows * bar_h + 50.0
    svg = _Svg(W, H, "cost")
    panel_w = W / 2
    for p, (title, usages, colour) in enumerate(panels):
        bars, unit = _usage_bars(usages)
        x0 = p * panel_w + 110.0
        x1 = (p + 1) * panel_w - 70.0
        peak = max([v for _, v in bars] + [0.0]) or 1.0
        sx = _Scale(0.0, peak, x0, x1)
        svg.text(p * panel_w + 10, 16, title, size=13, font_weight="bold")
        for i, (label, value) in enumerate(bars):
            y = top + i * bar_h
            svg.text(x0 - 6, y + bar_h * 0.65, label, size=12, anchor="end", fill="#374151")
            svg.path([(x0, y + 3), (sx(value), y + 3), (sx(value), y + bar_h - 3), (x0, y + bar_h - 3)],
                     fill=colour, stroke="none")
            svg.text(sx(value) + 4, y + bar_h * 0.65, _fmt_value(value, unit), size=11, fill="#374151")
        if not bars:
            svg.text((x0 + x1) / 2, top + 14, "no usage recorded", size=12, anchor="middle", fill="#6b7280")
        base = top + rows * bar_h + 4
        svg.path([(x0, top), (x0, base), (x1, base)], stroke="#9ca3af")
        svg.text((x0 + x1) / 2, base + 30, unit, size=12, anchor="middle")
    return svg.render()
