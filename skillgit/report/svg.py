"""The built-in pure-SVG chart renderer: draws the specs of `report/chartspec.py`, needs no library.

Every label, tick, colour and legend entry comes from the spec; this module decides only geometry. Each legend is
a group with id `<key>-legend_1` (as matplotlib names its own), each id is prefixed with the chart's key.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillgit.report.chartspec import (
    C_ACCEPTED,
    C_EPOCH,
    C_GRID,
    C_UNKNOWN_FILL,
    C_UNKNOWN_HATCH,
    CostSpec,
    CurvesSpec,
    HeatmapSpec,
    LegendEntry,
    Mark,
    Series,
    score_colour,
)
from skillgit.textsafe import shown


def inert_text(text: str) -> str:
    """Break `scheme://` so no URL-looking text remains in the file; `&#58;` renders as ':'."""
    return text.replace("://", "&#58;//")


def _x(s: object) -> str:
    """XML-escape text for an SVG text node or attribute, with URL-looking text made inert."""
    out = shown(str(s)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return inert_text(out)


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


def _hatch(svg: _Svg) -> str:
    """Define the unknown-cell hatch pattern once; returns its `url(#…)`."""
    hatch = svg.id("hatch")
    svg.raw(f'<defs><pattern id="{hatch}" patternUnits="userSpaceOnUse" width="6" height="6" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{C_UNKNOWN_FILL}"/>'
            f'<path d="M0 0 L0 6" stroke="{C_UNKNOWN_HATCH}" stroke-width="1.5"/></pattern></defs>')
    return f"url(#{hatch})"


def _glyph(svg: _Svg, mark: Mark, x: float, y: float, size: float = 6.0, *, hatch: str = "",
           cls: str | None = None) -> None:
    """One mark centred at (x, y): a point of a series, or a legend's sample."""
    c, r = mark.colour, size
    if mark.glyph in ("step", "line"):
        svg.path([(x - 9, y), (x + 9, y)], stroke=c, stroke_width=mark.width, stroke_dasharray=mark.dash or None)
    elif mark.glyph in ("dot", "ring"):
        svg.add("circle", cx=_n(x), cy=_n(y), r="4.5", fill=c if mark.glyph == "dot" else "white", stroke=c,
                stroke_width="1.8", class_=cls)
    elif mark.glyph in ("down", "up"):
        d = 1 if mark.glyph == "down" else -1
        svg.path([(x - r, y - 5 / 6 * r * d), (x + r, y - 5 / 6 * r * d), (x, y + r * d)], fill=c, stroke=c)
    elif mark.glyph == "star":
        svg.path([(x, y - r), (x + r, y), (x, y + r), (x - r, y), (x, y - r)], fill=c, stroke=c)
    else:  # swatch, hatch
        fill = (hatch or c) if mark.glyph == "hatch" else c
        svg.add("rect", x=_n(x - 7), y=_n(y - 7), width="14", height="14", fill=fill, stroke=C_UNKNOWN_HATCH,
                stroke_width="0.5")


def _legend(svg: _Svg, x: float, y: float, entries: Sequence[LegendEntry], *, title: str = "", row: bool = False,
            hatch: str = "") -> float:
    """The legend group, stacked (or in one row); returns the x where a row ended."""
    svg.raw(f'<g id="{svg.id("legend_1")}">')
    if title:
        svg.text(x, y + 4, title, size=12, font_weight="bold")
        x += 14 + 7 * len(title) if row else 0
        y += 0 if row else 20
    for entry in entries:
        _glyph(svg, entry.mark, x + 8, y, hatch=hatch)
        svg.text(x + 22, y + 4, entry.label, size=12)
        if row:
            x += 40 + 7 * len(entry.label)
        else:
            y += 20
    svg.raw("</g>")
    return x


# ---- curves ------------------------------------------------------------------------------------------------


def _draw_series(svg: _Svg, series: Series, sx: _Scale, sy: _Scale) -> None:
    mark = series.mark
    if mark.glyph == "step":
        points: list[tuple[float, float]] = []
        for i, (x, v) in enumerate(series.points):
            if v is not None:
                nxt = series.points[i + 1][0] if i + 1 < len(series.points) else x
                points += [(sx(x), sy(v)), (sx(nxt), sy(v))]
        svg.path(points, stroke=mark.colour, stroke_width=mark.width, stroke_dasharray=mark.dash or None)
        return
    known = [(sx(x), sy(y)) for x, y in series.points if y is not None]
    if mark.glyph == "line":
        svg.path(known, stroke=mark.colour, stroke_width=mark.width)
        for x, y in known:
            svg.add("circle", cx=_n(x), cy=_n(y), r="2.5", fill=mark.colour)
        return
    verdict = {"dot": "accepted", "ring": "rejected"}.get(mark.glyph) if series.label else None
    for x, y in known:
        _glyph(svg, mark, x, y, cls=verdict)


def curves(spec: CurvesSpec) -> str:
    W, H, left, right, top, bottom = 1000.0, 400.0, 56.0, 210.0, 28.0, 48.0
    svg = _Svg(W, H, spec.key)
    sx = _Scale(*spec.x_range, left, W - right)
    sy = _Scale(*spec.y_range, H - bottom, top)
    for t in spec.y_ticks:
        svg.path([(left, sy(t)), (W - right, sy(t))], stroke=C_GRID)
        svg.text(left - 6, sy(t) + 4, f"{t:g}", size=11, anchor="end", fill="#374151")
    for seq in spec.x_ticks:
        svg.path([(sx(seq), H - bottom), (sx(seq), H - bottom + 4)], stroke="#6b7280")
        svg.text(sx(seq), H - bottom + 17, str(seq), size=11, anchor="middle", fill="#374151")
    svg.path([(left, top), (left, H - bottom), (W - right, H - bottom)], stroke="#9ca3af")
    svg.path([(sx(spec.test_x - 0.5), top), (sx(spec.test_x - 0.5), H - bottom)], stroke=C_GRID)
    svg.text(sx(spec.test_x), top - 8, "test", size=11, anchor="middle", fill="#374151")
    for x, label in spec.epochs:
        svg.path([(sx(x), top), (sx(x), H - bottom)], stroke=C_EPOCH, stroke_dasharray="2 3")
        svg.text(sx(x) + 4, top - 8, label, size=11, fill="#4b5563")
    for series in spec.series:
        _draw_series(svg, series, sx, sy)
    svg.text((left + W - right) / 2, H - 10, spec.xlabel, size=12, anchor="middle")
    svg.text(16, (top + H - bottom) / 2, spec.ylabel, size=12, anchor="middle",
             transform=f"rotate(-90 16 {_n((top + H - bottom) / 2)})")
    _legend(svg, W - right + 14, top + 10, spec.legend)
    return svg.render()


# ---- heatmap -----------------------------------------------------------------------------------------------


def _cells(svg: _Svg, spec: HeatmapSpec, origin: tuple[float, float], cell: tuple[float, float], hatch: str) -> None:
    (left, top), (cell_w, cell_h) = origin, cell
    known_cells: list[str] = []
    unknown_cells: list[str] = []
    for cx, (_, scores) in enumerate(spec.columns):
        for cy, item in enumerate(spec.items):
            value = scores.get(item)
            x, y = left + cx * cell_w, top + cy * cell_h
            geom = f'x="{_n(x)}" y="{_n(y)}" width="{_n(cell_w)}" height="{_n(cell_h)}"'
            if value is None:
                unknown_cells.append(f'<rect {geom} fill="{hatch}" stroke="{C_UNKNOWN_HATCH}" '
                                     f'stroke-width="0.5"><title>{_x(item)}: unknown</title></rect>')
            else:
                known_cells.append(f'<rect {geom} fill="{score_colour(value)}" stroke="white" stroke-width="1">'
                                   f'<title>{_x(item)}: {value:g}</title></rect>')
    svg.raw(f'<g id="{svg.id("cells-known")}">' + "".join(known_cells) + "</g>")
    svg.raw(f'<g id="{svg.id("cells-unknown")}">' + "".join(unknown_cells) + "</g>")


def heatmap(spec: HeatmapSpec) -> str:
    items, cols = spec.items, spec.columns
    cell_w = max(6.0, min(44.0, 860.0 / max(1, len(cols))))
    cell_h = 18.0
    label_w = min(240.0, 24.0 + 6.5 * max([len(i) for i in items] + [4]))
    left, top = label_w + 30.0, 58.0
    col_label_h = 12.0 + 6.0 * max([len(c) for c, _ in cols] + [4]) * 0.72
    legend_w = 14 + 7 * len(spec.legend_title) + sum(40 + 7 * len(e.label) for e in spec.legend)
    W = left + max(legend_w, cell_w * len(cols) + 20.0)  # room for the legend row, however few columns
    H = top + cell_h * len(items) + col_label_h + 30.0
    svg = _Svg(W, H, spec.key)
    hatch = _hatch(svg)
    _legend(svg, left, 19, spec.legend, title=spec.legend_title, row=True, hatch=hatch)
    accepted = _glyph_mark(spec)
    for cx in spec.accepted:
        _glyph(svg, accepted, left + cx * cell_w + cell_w / 2, top - 8, min(5.0, cell_w / 2))
    _cells(svg, spec, (left, top), (cell_w, cell_h), hatch)
    for cy, item in enumerate(items):
        svg.text(left - 6, top + cy * cell_h + cell_h * 0.7, item, size=12, anchor="end", fill="#374151")
    base = top + cell_h * len(items) + 8
    for cx in spec.labelled:
        x = left + cx * cell_w + cell_w / 2
        ok = cx in spec.accepted
        svg.text(x, base, cols[cx][0], size=11, anchor="end", transform=f"rotate(-45 {_n(x)} {_n(base)})",
                 fill=C_ACCEPTED if ok else "#374151", font_weight="bold" if ok else None)
    bottom = top + cell_h * len(items)
    svg.path([(left, bottom), (left + cell_w * len(cols), bottom)], stroke="#9ca3af")
    svg.text(left + cell_w * len(cols) / 2, H - 8, spec.xlabel, size=12, anchor="middle")
    if not items:
        svg.text(left + cell_w * len(cols) / 2, top + 14, "no item scores recorded", size=12, anchor="middle",
                 fill="#6b7280")
    mid = top + cell_h * len(items) / 2
    svg.text(14, mid, spec.ylabel, size=12, anchor="middle", transform=f"rotate(-90 14 {_n(mid)})")
    return svg.render()


def _glyph_mark(spec: HeatmapSpec) -> Mark:
    """The accepted-candidate mark, as the legend shows it."""
    return next(e.mark for e in spec.legend if e.label == "accepted candidate")


# ---- cost --------------------------------------------------------------------------------------------------


def cost(spec: CostSpec) -> str:
    rows = max([len(p.bars) for p in spec.panels] + [1])
    W, bar_h, top = 1000.0, 22.0, 30.0
    H = top + rows * bar_h + 50.0
    svg = _Svg(W, H, spec.key)
    panel_w = W / len(spec.panels)
    for p, panel in enumerate(spec.panels):
        x0 = p * panel_w + 110.0
        x1 = (p + 1) * panel_w - 70.0
        peak = max([v for _, v in panel.bars] + [0.0]) or 1.0
        sx = _Scale(0.0, peak, x0, x1)
        svg.text(p * panel_w + 10, 16, panel.title, size=13, font_weight="bold")
        for i, ((label, value), text) in enumerate(zip(panel.bars, panel.values)):
            y = top + i * bar_h
            svg.text(x0 - 6, y + bar_h * 0.65, label, size=12, anchor="end", fill="#374151")
            svg.path([(x0, y + 3), (sx(value), y + 3), (sx(value), y + bar_h - 3), (x0, y + bar_h - 3)],
                     fill=panel.colour, stroke="none")
            svg.text(sx(value) + 4, y + bar_h * 0.65, text, size=11, fill="#374151")
        if not panel.bars:
            svg.text((x0 + x1) / 2, top + 14, "no usage recorded", size=12, anchor="middle", fill="#6b7280")
        base = top + rows * bar_h + 4
        svg.path([(x0, top), (x0, base), (x1, base)], stroke="#9ca3af")
        svg.text((x0 + x1) / 2, base + 30, panel.unit, size=12, anchor="middle")
    return svg.render()
