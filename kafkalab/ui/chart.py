"""Throughput over the run as a block chart, with faults, network changes and leader changes marked on the time
axis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from rich.text import Text
from textual.widget import Widget

from kafkalab.feeds.frames import Marker, MarkerKind
from kafkalab.labs.failover import other_words
from kafkalab.ui.widget_options import WidgetOptions

BLOCKS = " ▁▂▃▄▅▆▇█"
MARK_STYLE = {MarkerKind.FAULT: "bold red", MarkerKind.NET: "bold magenta", MarkerKind.LEADER: "bold cyan",
              MarkerKind.OTHER_LEADER: "cyan"}
NAMED = (MarkerKind.FAULT, MarkerKind.NET)  # named in the legend, each; leader changes are counted when many
AXIS_W = 8


def columns(series: Sequence[tuple[float, float]], width: int, span: float) -> list[float]:
    """Mean rate per column of a chart ``width`` wide covering ``span`` seconds.

    A column no sample fell in (a chart wider than the samples are many) holds the column before it, so
    bars do not show gaps that are only gaps between samples.
    """
    sums, counts = [0.0] * width, [0] * width
    for t, value in series:
        col = min(width - 1, int(t / span * width)) if span > 0 else 0
        sums[col] += value
        counts[col] += 1
    means: list[float] = []
    last_sampled = max((c for c in range(width) if counts[c]), default=-1)
    for c in range(width):
        held = means[-1] if means and c < last_sampled else 0.0
        means.append(sums[c] / counts[c] if counts[c] else held)
    return means


MARK_SYMBOLS = "123456789abcdefghijklmnopqrstuvwxyz"
LEADER_LABELS_SHOWN = 2


def marker_groups(markers: Sequence[Marker], plot_w: int, span: float) -> dict[int, list[Marker]]:
    """Markers by the chart column they fall on (markers close in time share a column and a symbol)."""
    groups: dict[int, list[Marker]] = {}
    for m in sorted(markers, key=lambda m: m.at_s):
        groups.setdefault(min(plot_w - 1, int(m.at_s / span * plot_w)), []).append(m)
    return dict(sorted(groups.items()))


def legend_entry(symbol: str, group: list[Marker]) -> str:
    """'2 @14s kill broker-1 by hand, 3 leader changes (+1 in __consumer_offsets)': faults (a node's, a network
    change's, with who did it unless the lab) named, many leader changes of the lab's topics counted, those of
    other topics only labelled as theirs (they are not the run's count)."""
    faults = [m.label for m in group if m.kind in NAMED]
    leaders = [m.label for m in group if m.kind == MarkerKind.LEADER]
    if len(leaders) > LEADER_LABELS_SHOWN:
        leaders = [f"{len(leaders)} leader changes"]
    others: dict[str, int] = {}
    for m in group:
        if m.kind == MarkerKind.OTHER_LEADER:
            others[m.topic] = others.get(m.topic, 0) + 1
    return f"{symbol} @{group[0].at_s:.0f}s " + (", ".join(faults + leaders) + other_words(others)).strip()


def wrap_entries(entries: Sequence[str], width: int) -> list[str]:
    """Legend entries packed into lines of ``width``; an entry longer than a line is cut with an ellipsis."""
    lines: list[str] = []
    for entry in entries:
        entry = entry if len(entry) <= width else entry[: max(1, width - 1)] + "…"
        if lines and len(lines[-1]) + 3 + len(entry) <= width:
            lines[-1] += " · " + entry
        else:
            lines.append(entry)
    return lines


def render_chart(series: Sequence[tuple[float, float]], markers: Sequence[Marker], width: int,
                 height: int) -> Text:
    """Rows of bars (top to bottom), then the marker row, the time axis and the legend, wrapped to ``width``.

    Each marked column carries one symbol, and the legend lists that symbol with what happened there.
    """
    plot_w = max(10, width - AXIS_W)
    span = max([t for t, _ in series] + [m.at_s for m in markers] + [1.0])
    groups = marker_groups(markers, plot_w, span)
    symbols = {c: MARK_SYMBOLS[i] if i < len(MARK_SYMBOLS) else "+" for i, c in enumerate(groups)}
    legend = wrap_entries([legend_entry(symbols[c], g) for c, g in groups.items()], max(10, width)) \
        or ["no faults or leader changes"]
    rows = max(2, height - 2 - len(legend))
    cols = columns(series, plot_w, span)
    peak = max(cols) or 1.0
    kinds = {c: next(k for k in (*NAMED, MarkerKind.LEADER, MarkerKind.OTHER_LEADER) if any(m.kind == k for m in g))
             for c, g in groups.items()}
    out = Text()
    for r in range(rows):
        label = f"{peak:>6,.0f}/s" if r == 0 else " " * AXIS_W
        out.append(label[:AXIS_W].ljust(AXIS_W), style="dim")
        level_top = (rows - r) * 8
        for c, value in enumerate(cols):
            eighths = round(value / peak * rows * 8)
            fill = max(0, min(8, eighths - (level_top - 8)))
            if fill == 0 and c in kinds:
                out.append("│", style=MARK_STYLE[kinds[c]])
            else:
                out.append(BLOCKS[fill], style="green")
        out.append("\n")
    out.append(" " * AXIS_W)
    marks = [" "] * plot_w
    for c, symbol in symbols.items():
        marks[c] = symbol
    for ch in marks:
        out.append(ch, style="bold yellow" if ch != " " else "")
    out.append("\n" + " " * AXIS_W + "0s".ljust(plot_w - 6) + f"{span:>5.0f}s\n", style="dim")
    out.append("\n".join(legend), style="dim")
    return out


class ThroughputChart(Widget):
    def __init__(self, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
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
