"""One definition per chart: what each report chart shows, built once from the run's data.

Contract:
- `chart_specs(report)` returns the three specs — `CurvesSpec`, `HeatmapSpec`, `CostSpec` — holding every title,
  axis label, tick, series, mark and legend entry a chart shows. A renderer (`report/svg.py`, the built-in pure-SVG
  one; `report/mpl.py`, matplotlib) only draws a spec: it decides no label, colour, range or legend entry of its
  own, so both renderers show the same chart (tests/test_report.py compares their legends).
- A legend lists exactly the marks the chart draws: a curve series appears in it only when it has a point.
- The heatmap's colour is a continuous scale on the run's gate metric (a cell is the item's mean over the gate's
  repeats, so 0.5 and 0.75 happen), shown as a ramp of swatches labelled with their values and titled with the
  metric; unknown (not scored, or the scorer could not decide) is hatched grey, never a colour of the scale.
- Adding a chart: a spec class and its builder here, one draw function per renderer, a line in `charts.py`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from skillgit.report.model import (
    RunReport,
    best_so_far,
    epoch_boundaries,
    heatmap_columns,
    heatmap_items,
    val_current,
)
from skillgit.types import Usage

MAX_HEATMAP_ITEMS = 120  # rows beyond this are left out (and the caption says so): a chart, not a table
HEATMAP_XLABEL = "decision (the candidate scored; ▼ and green label = accepted)"
HEATMAP_RAMP = (0.0, 0.25, 0.5, 0.75, 1.0)  # the legend's swatches of the continuous score scale

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

# step: a post-step line (the value holds until the next x); line: a polyline with small dots; dot: a filled
# circle; ring: a hollow one; down/up/star: the test markers; swatch: a filled square; hatch: the unknown square
Glyph = Literal["step", "line", "dot", "ring", "down", "up", "star", "swatch", "hatch"]


@dataclass(frozen=True)
class Mark:
    glyph: Glyph
    colour: str
    width: float = 1.5  # line width (step, line) in points
    dash: str = ""  # "" solid, else an SVG dash array such as "6 4"


@dataclass(frozen=True)
class Series:
    label: str  # its legend entry; "" = drawn without one
    mark: Mark
    points: tuple[tuple[float, float | None], ...]  # None = no value at that x (a gap)

    @property
    def drawn(self) -> bool:
        return any(y is not None for _, y in self.points)


@dataclass(frozen=True)
class LegendEntry:
    label: str
    mark: Mark


@dataclass(frozen=True)
class CurvesSpec:
    key: str
    title: str
    caption: str
    xlabel: str
    ylabel: str
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    x_ticks: tuple[int, ...]
    y_ticks: tuple[float, ...]
    test_x: float  # the test column, right of the decisions
    epochs: tuple[tuple[float, str], ...]  # (x, "epoch N") boundaries
    series: tuple[Series, ...]

    @property
    def legend(self) -> tuple[LegendEntry, ...]:
        return tuple(LegendEntry(s.label, s.mark) for s in self.series if s.label and s.drawn)


@dataclass(frozen=True)
class HeatmapSpec:
    key: str
    title: str
    caption: str
    xlabel: str
    ylabel: str
    items: tuple[str, ...]  # the rows shown
    columns: tuple[tuple[str, dict[str, float | None]], ...]  # (label, item -> score | None) per column
    accepted: tuple[int, ...]  # column indices of accepted candidates
    labelled: tuple[int, ...]  # column indices that get a text label
    legend_title: str
    legend: tuple[LegendEntry, ...]


@dataclass(frozen=True)
class Panel:
    title: str
    colour: str
    unit: str
    bars: tuple[tuple[str, float], ...]  # (label, value), largest first
    values: tuple[str, ...] = field(default=())  # each bar's value as text


@dataclass(frozen=True)
class CostSpec:
    key: str
    title: str
    caption: str
    panels: tuple[Panel, ...]

    @property
    def legend(self) -> tuple[LegendEntry, ...]:
        return ()


def score_colour(value: float) -> str:
    """Hex colour of a known score: red at 0 (failed), amber at 0.5, green at 1 (clamped)."""
    v = min(1.0, max(0.0, value))
    for (x0, c0), (x1, c1) in itertools.pairwise(_SCALE):
        if v <= x1:
            t = (v - x0) / (x1 - x0)
            return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(c0, c1))
    return "#16a34a"


def chart_specs(report: RunReport) -> tuple[CurvesSpec, HeatmapSpec, CostSpec]:
    return curves_spec(report), heatmap_spec(report), cost_spec(report)


# ---- curves ------------------------------------------------------------------------------------------------


def _known_scores(report: RunReport) -> list[float]:
    out: list[float | None] = [report.val.seed, report.val.best, report.val.final, report.test.seed,
                               report.test.best, report.test.final]
    for s in report.steps:
        out.extend([s.val_before, s.val_after, s.train_score])
    return [v for v in out if v is not None]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    out: list[float] = []
    v = math.ceil(lo / step - 1e-9) * step
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _score_range(report: RunReport) -> tuple[float, float, float]:
    """(low, high, padding) of the score axis: 0..1 whenever every score is a share."""
    known = _known_scores(report)
    lo, hi = (min(known), max(known)) if known else (0.0, 1.0)
    if lo >= 0 and hi <= 1:
        lo, hi = 0.0, 1.0
    return lo, hi, (hi - lo) * 0.04 or 0.05


def _curve_series(report: RunReport, x_test: float) -> list[Series]:
    steps = report.steps
    xs = [0] + [s.seq for s in steps]
    test_best = report.test.best if report.test.best != report.test.final else None
    return [
        Series("val: skill in force", Mark("step", C_VAL, 2.4),
               tuple(zip(xs, [report.val.seed, *val_current(report)]))),
        Series("val: best so far", Mark("step", C_BEST, 1.4, "6 4"),
               tuple(zip(xs, [report.val.seed, *best_so_far(report)]))),
        Series("train batch (rollout mean)", Mark("line", C_TRAIN, 1.3),
               tuple((s.seq, s.train_score) for s in steps if s.train_score is not None)),
        Series("", Mark("dot", C_VAL), ((0, report.val.seed),)),
        Series("val: candidate accepted", Mark("dot", C_ACCEPTED),
               tuple((s.seq, s.val_after) for s in steps if s.accepted and s.val_after is not None)),
        Series("val: candidate rejected", Mark("ring", C_REJECTED),
               tuple((s.seq, s.val_after) for s in steps if not s.accepted and s.val_after is not None)),
        Series("test: seed", Mark("down", C_TEST_SEED), ((x_test, report.test.seed),)),
        Series("test: final", Mark("up", C_TEST_FINAL), ((x_test, report.test.final),)),
        Series("test: best", Mark("star", C_BEST), ((x_test, test_best),)),
    ]


def curves_spec(report: RunReport) -> CurvesSpec:
    last = report.steps[-1].seq if report.steps else 0
    x_test = last + 1
    lo, hi, pad = _score_range(report)
    return CurvesSpec(
        key="curves", title="Scores per decision",
        caption=("Each decision's train batch score, the val score of every candidate (filled: accepted, hollow: "
                 "rejected), the val score of the skill in force and the best so far; test scores at the right end."),
        xlabel="decision (seq; 0 = seed)", ylabel=f"score ({report.metric})",
        x_range=(-0.5, x_test + 0.7), y_range=(lo - pad, hi + pad),
        x_ticks=tuple(range(0, last + 1, max(1, math.ceil((last + 1) / 20)))),  # decisions, not the test column
        y_ticks=tuple(nice_ticks(lo, hi)), test_x=x_test,
        epochs=tuple((x, f"epoch {epoch}") for x, epoch in epoch_boundaries(report.steps)),
        series=tuple(s for s in _curve_series(report, x_test) if s.drawn),
    )


# ---- heatmap -----------------------------------------------------------------------------------------------


def _labelled_columns(count: int) -> tuple[int, ...]:
    """Heatmap columns that get a text label: all of them up to 32, else every k-th so labels never overlap."""
    return tuple(range(0, count, max(1, math.ceil(count / 32))))


def _ramp_label(value: float) -> str:
    return {0.0: "0 failed", 1.0: "1 passed"}.get(value, f"{value:g}")


def heatmap_spec(report: RunReport) -> HeatmapSpec:
    every = heatmap_items(report)
    items = every[:MAX_HEATMAP_ITEMS]
    cut = f" Showing the first {len(items)} of {len(every)} items." if len(items) < len(every) else ""
    columns = heatmap_columns(report)
    legend = [LegendEntry(_ramp_label(v), Mark("swatch", score_colour(v))) for v in HEATMAP_RAMP]
    legend += [LegendEntry("unknown", Mark("hatch", C_UNKNOWN_HATCH)),
               LegendEntry("accepted candidate", Mark("down", C_ACCEPTED))]
    return HeatmapSpec(
        key="heatmap", title="Val items × decisions",
        caption=(f"Val score of each item ({report.metric}, its mean over the gate's repeats) for the seed and for "
                 "each decision's candidate, on a scale from red (0, failed) through amber to green (1, passed). "
                 "Hatched grey: unknown (not scored, or the scorer could not decide) — not the same as a failure "
                 "(red)." + cut),
        xlabel=HEATMAP_XLABEL, ylabel="val item", items=tuple(items), columns=tuple(columns),
        accepted=tuple(i + 1 for i, s in enumerate(report.steps) if s.accepted),
        labelled=_labelled_columns(len(columns)),
        legend_title=f"item score ({report.metric})", legend=tuple(legend),
    )


# ---- cost --------------------------------------------------------------------------------------------------


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


def _panel(title: str, usages: dict[str, Usage], colour: str) -> Panel:
    bars, unit = _usage_bars(usages)
    return Panel(title, colour, unit, tuple(bars), tuple(_fmt_value(v, unit) for _, v in bars))


def cost_spec(report: RunReport) -> CostSpec:
    return CostSpec(key="cost", title="Cost by stage and role", caption="",
                    panels=(_panel("by stage", report.usage_by_stage, C_BAR),
                            _panel("by role", report.usage_by_role, C_BAR2)))


def values_of(points: Sequence[tuple[float, float | None]]) -> tuple[list[float], list[float]]:
    """The known (x, y) of a series as two lists (gaps dropped)."""
    known = [(x, y) for x, y in points if y is not None]
    return [x for x, _ in known], [y for _, y in known]
