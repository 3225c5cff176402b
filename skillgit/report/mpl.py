"""The matplotlib chart renderer: draws the specs of `report/chartspec.py` (the optional extra `skillgit[report]`).

Every label, tick, colour and legend entry comes from the spec; this module maps marks onto matplotlib. Pyplot and
the global backend are never touched (a `Figure` per chart, options in an `rc_context`); output is deterministic
(fixed `svg.hashsalt`, no date, text kept as `<text>`).
"""

from __future__ import annotations

import io
from typing import Any

from skillgit.report import chartspec as cs
from skillgit.textsafe import shown

RC: dict[str, Any] = {  # matplotlib types the keys as a Literal of every rcParam name
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
    "hatch.color": cs.C_UNKNOWN_HATCH,
}
_MARKERS = {"dot": "o", "ring": "o", "down": "v", "up": "^", "star": "*"}


def _text(label: str) -> str:
    """A label from run data (item ids, step, stage and role names: a collaborator's notes may hold any text) with
    control and bidi characters escaped: matplotlib draws them as missing glyphs and warns on stderr with the
    character itself."""
    return shown(label, multiline=False)


def rc_context() -> Any:
    import matplotlib  # type: ignore[import-not-found,unused-ignore]

    rc: Any = dict(RC)
    if "text.parse_math" in matplotlib.rcParams:
        rc["text.parse_math"] = False  # a `$` in an item id or step name is text, not TeX
    return matplotlib.rc_context(rc)


def _save(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _handle(mark: cs.Mark, label: str) -> Any:
    """A legend handle drawn like `mark`."""
    from matplotlib.lines import Line2D  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.patches import Patch  # type: ignore[import-not-found,unused-ignore]

    if mark.glyph in ("step", "line"):
        return Line2D([], [], color=mark.colour, lw=mark.width, ls=_dash(mark), label=label)
    if mark.glyph == "swatch":
        return Patch(facecolor=mark.colour, label=label)
    if mark.glyph == "hatch":
        return Patch(facecolor=cs.C_UNKNOWN_FILL, edgecolor=mark.colour, hatch="////", label=label)
    face = "white" if mark.glyph == "ring" else mark.colour
    return Line2D([], [], ls="none", marker=_MARKERS[mark.glyph], ms=7, color=mark.colour, markerfacecolor=face,
                  label=label)


def _dash(mark: cs.Mark) -> Any:
    return (0, tuple(float(v) for v in mark.dash.split())) if mark.dash else "-"


def _draw_series(ax: Any, series: cs.Series) -> None:
    mark = series.mark
    if mark.glyph == "step":
        xs = [x for x, _ in series.points]
        ys = [float("nan") if y is None else y for _, y in series.points]
        ax.step(xs, ys, where="post", color=mark.colour, lw=mark.width, ls=_dash(mark))
        return
    xs, ys = cs.values_of(series.points)
    if mark.glyph == "line":
        ax.plot(xs, ys, color=mark.colour, lw=mark.width, marker="o", ms=3.5, alpha=0.9)
    elif mark.glyph == "ring":
        ax.scatter(xs, ys, s=46, facecolors="white", edgecolors=mark.colour, linewidths=1.6, zorder=4)
    else:
        size = 46 if mark.glyph == "dot" else 90 if mark.glyph == "star" else 70
        ax.scatter(xs, ys, marker=_MARKERS[mark.glyph], s=size, color=mark.colour, zorder=5)


def _legend(ax: Any, entries: tuple[cs.LegendEntry, ...], **where: Any) -> None:
    if entries:
        ax.legend(handles=[_handle(e.mark, e.label) for e in entries], fontsize=9, **where)


def curves(spec: cs.CurvesSpec) -> str:
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]

    fig = Figure(figsize=(10.5, 4.4), layout="constrained")
    ax = fig.add_subplot()
    for series in spec.series:
        _draw_series(ax, series)
    ax.axvline(spec.test_x - 0.5, color=cs.C_GRID, lw=1)
    ax.annotate("test", (spec.test_x, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                color="#374151", fontsize=9)
    for x, label in spec.epochs:
        ax.axvline(x, color=cs.C_EPOCH, lw=1, ls=":")
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(3, 0), textcoords="offset points",
                    ha="left", va="bottom", color="#4b5563", fontsize=9)
    ax.set_xlim(*spec.x_range)
    ax.set_ylim(*spec.y_range)
    ax.set_xticks(spec.x_ticks)
    ax.set_yticks(spec.y_ticks, labels=[f"{t:g}" for t in spec.y_ticks])
    ax.grid(axis="y", color=cs.C_GRID, lw=0.8)
    ax.set_axisbelow(True)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    _legend(ax, spec.legend, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig)


def _cells(ax: Any, spec: cs.HeatmapSpec) -> None:
    from matplotlib.collections import PatchCollection  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.patches import Rectangle  # type: ignore[import-not-found,unused-ignore]

    known: list[Rectangle] = []
    known_colours: list[str] = []
    unknown: list[Rectangle] = []
    for x, (_, scores) in enumerate(spec.columns):
        for y, item in enumerate(spec.items):
            value = scores.get(item)
            rect = Rectangle((x - 0.5, y - 0.5), 1, 1)
            if value is None:
                unknown.append(rect)
            else:
                known.append(rect)
                known_colours.append(cs.score_colour(value))
    known_pc = PatchCollection(known, facecolors=known_colours, edgecolors="white", linewidths=0.8)
    known_pc.set_gid("cells-known")
    unknown_pc = PatchCollection(unknown, facecolors=cs.C_UNKNOWN_FILL, edgecolors=cs.C_UNKNOWN_HATCH, hatch="////",
                                 linewidths=0.5)
    unknown_pc.set_gid("cells-unknown")
    ax.add_collection(known_pc)
    ax.add_collection(unknown_pc)


def heatmap(spec: cs.HeatmapSpec) -> str:
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]

    items, cols = spec.items, spec.columns
    height = 2.0 + 0.22 * max(1, len(items))
    width = min(10.5, 2.8 + 0.55 * len(cols))
    fig = Figure(figsize=(max(width, 9.0), height), layout="constrained")
    ax = fig.add_subplot()
    _cells(ax, spec)
    ax.set_xlim(-0.5, len(cols) - 0.5)
    ax.set_ylim(max(1, len(items)) - 0.5, -1.4)  # the band above row 0 holds the accepted markers
    accepted = next(e.mark for e in spec.legend if e.label == "accepted candidate")
    ax.scatter(spec.accepted, [-0.95] * len(spec.accepted), marker=_MARKERS[accepted.glyph], s=36,
               color=accepted.colour)
    if not items:
        ax.text(0.5, 0.5, "no item scores recorded", transform=ax.transAxes, ha="center", color="#6b7280")
    ax.set_xticks(spec.labelled)
    ax.set_xticklabels([_text(cols[i][0]) for i in spec.labelled], rotation=45, ha="right", rotation_mode="anchor",
                       fontsize=9)
    for tick, i in zip(ax.get_xticklabels(), spec.labelled):
        if i in spec.accepted:
            tick.set_color(cs.C_ACCEPTED)
            tick.set_fontweight("bold")
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels([_text(i) for i in items], fontsize=9)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    _legend(ax, spec.legend, title=spec.legend_title, title_fontsize=9, alignment="left", loc="lower left",
            bbox_to_anchor=(0.0, 1.01), ncols=len(spec.legend), borderaxespad=0.2, columnspacing=1.2)
    return _save(fig)


def cost(spec: cs.CostSpec) -> str:
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]

    rows = max([len(p.bars) for p in spec.panels] + [1])
    fig = Figure(figsize=(10.5, 1.3 + 0.32 * rows), layout="constrained")
    axes = fig.subplots(1, len(spec.panels))
    for ax, panel in zip(axes, spec.panels):
        values = [v for _, v in panel.bars]
        ax.barh(range(len(values)), values, color=panel.colour, height=0.6)
        ax.set_yticks(range(len(values)))
        ax.set_yticklabels([_text(k) for k, _ in panel.bars])
        ax.invert_yaxis()
        top = max(values + [0.0])
        for y, (v, text) in enumerate(zip(values, panel.values)):
            ax.annotate(text, (v, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8,
                        color="#374151")
        ax.set_xlim(0, top * 1.25 if top > 0 else 1)
        ax.set_title(panel.title, fontsize=10, loc="left")
        ax.set_xlabel(panel.unit)
        ax.grid(axis="x", color=cs.C_GRID, lw=0.8)
        ax.set_axisbelow(True)
        if not panel.bars:
            ax.text(0.5, 0.5, "no usage recorded", transform=ax.transAxes, ha="center", color="#6b7280")
    return _save(fig)
