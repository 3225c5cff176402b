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
- One definition per chart: `report/chartspec.py` builds each chart's spec (titles, series, axes, legend) once
  from the data; `report/svg.py` (built-in) and `report/mpl.py` (matplotlib) only draw specs.
- Unknown is not failure: heatmap cells whose score is unknown (None, or no score recorded) are hatched grey in a
  group with id `<key>-cells-unknown`; known cells are coloured on a continuous scale red (0, failed) → amber →
  green (1, passed) in a group with id `<key>-cells-known`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from skillgit.errors import SkillgitError
from skillgit.report import svg as builtin
from skillgit.report.chartspec import (
    HEATMAP_XLABEL,
    MAX_HEATMAP_ITEMS,
    CostSpec,
    CurvesSpec,
    HeatmapSpec,
    chart_specs,
    score_colour,
)
from skillgit.report.model import RunReport
from skillgit.report.svg import inert_text

Renderer = Literal["auto", "matplotlib", "builtin"]
RENDERERS: tuple[str, ...] = ("auto", "matplotlib", "builtin")
__all__ = ["HEATMAP_XLABEL", "MAX_HEATMAP_ITEMS", "RENDERERS", "Chart", "ChartSet", "Renderer", "matplotlib_version",
           "render_charts", "sanitize_svg", "score_colour"]


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
    curves, heat, cost = chart_specs(report)
    specs: tuple[CurvesSpec | HeatmapSpec | CostSpec, ...] = (curves, heat, cost)
    if version is None:
        svgs = [builtin.curves(curves), builtin.heatmap(heat), builtin.cost(cost)]
    else:
        from skillgit.report import mpl

        with mpl.rc_context():
            drawn = [mpl.curves(curves), mpl.heatmap(heat), mpl.cost(cost)]
        svgs = [sanitize_svg(svg, spec.key) for svg, spec in zip(drawn, specs)]
    charts = tuple(_chart(spec, svg) for spec, svg in zip(specs, svgs))
    return ChartSet("builtin", "", charts) if version is None else ChartSet("matplotlib", version, charts)


def _chart(spec: CurvesSpec | HeatmapSpec | CostSpec, svg: str) -> Chart:
    return Chart(spec.key, spec.title, svg, spec.caption)


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')


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
    return inert_text(svg).strip()
