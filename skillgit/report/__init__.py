"""`skillgit report`: one self-contained, offline HTML page describing a training run.

Build a `RunReport` (typed, JSON round-trip), then `render_html(report)` or `write_report(report, path)`.
Charts use matplotlib when the optional `report` extra is installed and a built-in SVG renderer otherwise
(`renderer="auto" | "matplotlib" | "builtin"`). `sparkline` draws a score history for the terminal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillgit.report.charts import RENDERERS, Chart, ChartSet, Renderer, matplotlib_version, render_charts
    from skillgit.report.html import render_html, write_report
    from skillgit.report.model import ReportEdit, ReportStep, RunReport, SplitScores
    from skillgit.report.sparkline import sparkline

# Each name is imported from its module when first used: `skillgit status` draws a sparkline, and importing the
# charts and the HTML page with it cost a twentieth of its start-up.
_HOMES = {"RENDERERS": "charts", "Chart": "charts", "ChartSet": "charts", "Renderer": "charts",
          "matplotlib_version": "charts", "render_charts": "charts", "render_html": "html", "write_report": "html",
          "ReportEdit": "model", "ReportStep": "model", "RunReport": "model", "SplitScores": "model",
          "sparkline": "sparkline"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "RENDERERS",
    "Chart",
    "ChartSet",
    "Renderer",
    "ReportEdit",
    "ReportStep",
    "RunReport",
    "SplitScores",
    "matplotlib_version",
    "render_charts",
    "render_html",
    "sparkline",
    "write_report",
]
