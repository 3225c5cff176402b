"""`skillgit report`: one self-contained, offline HTML page describing a training run.

Build a `RunReport` (typed, JSON round-trip), then `render_html(report)` or `write_report(report, path)`.
Charts use matplotlib when the optional `report` extra is installed and a built-in SVG renderer otherwise
(`renderer="auto" | "matplotlib" | "builtin"`). `sparkline` draws a score history for the terminal.
"""

from __future__ import annotations

from skillgit.report.charts import RENDERERS, Chart, ChartSet, Renderer, matplotlib_version, render_charts
from skillgit.report.html import render_html, write_report
from skillgit.report.model import ReportEdit, ReportStep, RunReport, SplitScores
from skillgit.report.sparkline import sparkline

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
