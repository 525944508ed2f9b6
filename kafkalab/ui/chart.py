"""Throughput over the run as a block chart, with faults and leader changes marked on the time axis."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

from kafkalab.ui.source import Marker

BLOCKS = " ▁▂▃▄▅▆▇█"
MARK_STYLE = {"fault": "bold red", "leader": "bold cyan"}
AXIS_W = 8


def columns(series: Sequence[tuple[float, float]], width: int, span: float) -> list[float]:
    """Mean rate per column of a chart ``width`` wide covering ``span`` seconds."""
    sums, counts = [0.0] * width, [0] * width
    for t, value in series:
        col = min(width - 1, int(t / span * width)) if span > 0 else 0
        sums[col] += value
        counts[col] += 1
    return [s / c if c else 0.0 for s, c in zip(sums, counts, strict=True)]


def render_chart(series: Sequence[tuple[float, float]], markers: Sequence[Marker], width: int,
                 height: int) -> Text:
    """Rows of bars (top to bottom), then the marker row, the time axis and a legend of the markers."""
    plot_w = max(10, width - AXIS_W)
    rows = max(2, height - 3)
    span = max([t for t, _ in series] + [m.at_s for m in markers] + [1.0])
    cols = columns(series, plot_w, span)
    peak = max(cols) or 1.0
    mark_cols = {min(plot_w - 1, int(m.at_s / span * plot_w)): (i, m) for i, m in enumerate(markers, 1)}
    out = Text()
    for r in range(rows):
        label = f"{peak:>6,.0f}/s" if r == 0 else " " * AXIS_W
        out.append(label[:AXIS_W].ljust(AXIS_W), style="dim")
        level_top = (rows - r) * 8
        for c, value in enumerate(cols):
            eighths = round(value / peak * rows * 8)
            fill = max(0, min(8, eighths - (level_top - 8)))
            if fill == 0 and c in mark_cols:
                out.append("│", style=MARK_STYLE.get(mark_cols[c][1].kind, "red"))
            else:
                out.append(BLOCKS[fill], style="green")
        out.append("\n")
    out.append(" " * AXIS_W)
    marks = [" "] * plot_w
    for c, (i, _m) in mark_cols.items():
        marks[c] = str(i % 10)
    for ch in marks:
        out.append(ch, style="bold yellow" if ch != " " else "")
    out.append("\n" + " " * AXIS_W + "0s".ljust(plot_w - 6) + f"{span:>5.0f}s\n", style="dim")
    legend = "  ".join(f"{i % 10} {m.label} @{m.at_s:.0f}s" for i, m in enumerate(markers, 1))
    out.append(legend or "no faults or leader changes", style="dim")
    return out


class ThroughputChart(Widget):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.series: tuple[tuple[float, float], ...] = ()
        self.markers: tuple[Marker, ...] = ()

    def show(self, series: tuple[tuple[float, float], ...], markers: tuple[Marker, ...]) -> None:
        if (series, markers) != (self.series, self.markers):
            self.series, self.markers = series, markers
            self.refresh()

    def render(self) -> Text:
        if not self.series:
            return Text("throughput appears here during and after a run", style="dim")
        return render_chart(self.series, self.markers, self.size.width, self.size.height)
