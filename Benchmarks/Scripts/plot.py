#!/usr/bin/env python3
"""Draws find latency (p50 and p99 per call) against store size, for the embedded store, keychaind (one client) and
the raw floor (a SQLite point lookup plus an AES-GCM open), from `swift package benchmark` text output, as an SVG.

    python3 Benchmarks/Scripts/plot.py /tmp/bench.txt                 # writes Benchmarks/find-latency.svg
    python3 Benchmarks/Scripts/plot.py < /tmp/bench.txt -o chart.svg

Both axes are logarithmic. Standard library only (no matplotlib), so CI and users need nothing more.
"""
import argparse
import math
import os
import sys
from xml.sax.saxutils import escape

import benchoutput

WIDTH, HEIGHT = 820, 470
LEFT, RIGHT, TOP, BOTTOM = 78, 250, 70, 70
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
DASH = ' stroke-dasharray="6 4"'
FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
# Colour-blind-safe (Okabe–Ito): keychaind, embedded, raw floor.
COLOURS = {"embedded": "#0072B2", "keychaind, 1 client": "#D55E00",
           "raw floor: SQLite lookup + AES-GCM open": "#009E73"}
LEGEND_NAMES = {"embedded": "embedded (in-process)", "keychaind, 1 client": "keychaind, 1 client",
                "raw floor: SQLite lookup + AES-GCM open": "raw floor: SQLite lookup\n+ AES-GCM open"}


def y_ticks(low, high):
    """1-2-5 ticks covering [low, high] on a log axis (fewer when the range spans several decades)."""
    decades = math.log10(high / low)
    steps = (1, 2, 5) if decades <= 3 else (1, 3) if decades <= 4.5 else (1,)
    ticks = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for step in steps:
            value = step * 10 ** exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def text(x, y, content, size=12, anchor="start", weight="normal", colour="#222", extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="{colour}"{extra}>{escape(content)}</text>')


def draw(series, title, caption):
    sizes = sorted({size for points in series.values() for size in points})
    values = [v for points in series.values() for pair in points.values() for v in pair if v]
    if not sizes or not values:
        sys.exit("no find benchmarks in the input: nothing to draw")
    x_low, x_high = math.log10(min(sizes)) - 0.3, math.log10(max(sizes)) + 0.3
    y_low, y_high = min(values) / 1.35, max(values) * 1.35
    ly_low, ly_high = math.log10(y_low), math.log10(y_high)

    def px(size):
        return LEFT + (math.log10(size) - x_low) / (x_high - x_low) * PLOT_W

    def py(value):
        return TOP + PLOT_H - (math.log10(value) - ly_low) / (ly_high - ly_low) * PLOT_H

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FONT}">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
           text(LEFT, 30, title, size=17, weight="600"),
           text(LEFT, 50, "SecItemCopyMatching, data by account + service: wall-clock time per call, "
                          "p50 (solid) and p99 (dashed)", size=12, colour="#555")]
    # Grid and axes.
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="#fafafa" stroke="#bbb"/>')
    for value in y_ticks(y_low, y_high):
        y = py(value)
        major = math.log10(value).is_integer()
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + PLOT_W}" y2="{y:.1f}" '
                   f'stroke="{"#ccc" if major else "#e6e6e6"}" stroke-width="1"/>')
        out.append(text(LEFT - 8, y + 4, f"{value:,g}", size=11, anchor="end", colour="#444"))
    decades = range(math.ceil(x_low), math.floor(x_high) + 1)
    for exponent in decades:
        size = 10 ** exponent
        x = px(size)
        measured = size in sizes
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + PLOT_H}" '
                   f'stroke="{"#ccc" if measured else "#eee"}" stroke-width="1"/>')
        out.append(text(x, TOP + PLOT_H + 18, benchoutput.size_label(size), size=12 if measured else 11,
                        anchor="middle", weight="600" if measured else "normal",
                        colour="#222" if measured else "#999"))
    out.append(text(LEFT + PLOT_W / 2, TOP + PLOT_H + 42, "items in the store (log scale)", size=12, anchor="middle",
                    colour="#444"))
    cy = TOP + PLOT_H / 2
    out.append(text(22, cy, "time per call, µs (log scale)", size=12, anchor="middle", colour="#444",
                    extra=f' transform="rotate(-90 22 {cy:.1f})"'))
    # Lines and points, p99 under p50; each point's value to its right.
    labels = {}
    for index, dashed in ((1, True), (0, False)):
        for label, points in series.items():
            chosen = [(size, points[size][index]) for size in sorted(points) if points[size][index]]
            if not chosen:
                continue
            colour = COLOURS.get(label, "#666")
            path = " ".join(f"{'M' if i == 0 else 'L'}{px(s):.1f},{py(v):.1f}" for i, (s, v) in enumerate(chosen))
            out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{2 if dashed else 2.5}"'
                       f'{DASH if dashed else ""}/>')
            for size, value in chosen:
                name = f"{label}, {benchoutput.size_label(size)} items, p{'99' if dashed else '50'}: {value:.0f} µs"
                fill = "#ffffff" if dashed else colour
                out.append(f'<circle cx="{px(size):.1f}" cy="{py(value):.1f}" r="4" fill="{fill}" stroke="{colour}" '
                           f'stroke-width="2"><title>{escape(name)}</title></circle>')
                labels.setdefault(size, []).append([py(value), f"{value:.0f}", colour])
    # Values beside their points, moved apart vertically where they would overlap.
    for size, column in labels.items():
        column.sort()
        for i in range(1, len(column)):
            column[i][0] = max(column[i][0], column[i - 1][0] + 12)
        overflow = column[-1][0] - (TOP + PLOT_H - 6)
        if overflow > 0:
            for entry in column:
                entry[0] -= overflow
        for y, value, colour in column:
            out.append(text(px(size) + 8, y + 4, value, size=10, colour=colour, weight="600",
                            extra=' stroke="#fafafa" stroke-width="3" paint-order="stroke"'))
    # Legend.
    lx, ly = LEFT + PLOT_W + 24, TOP + 6
    out.append(text(lx, ly + 4, "path", size=12, weight="600"))
    ly += 22
    for label in series:
        if not series[label]:
            continue
        colour = COLOURS.get(label, "#666")
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 26}" y2="{ly}" stroke="{colour}" stroke-width="2.5"/>')
        out.append(f'<circle cx="{lx + 13}" cy="{ly}" r="4" fill="{colour}" stroke="{colour}" stroke-width="2"/>')
        for i, part in enumerate(LEGEND_NAMES.get(label, label).split("\n")):
            out.append(text(lx + 34, ly + 4 + 15 * i, part, size=12))
        ly += 22 + 15 * LEGEND_NAMES.get(label, label).count("\n")
    ly += 14
    out.append(text(lx, ly + 4, "percentile", size=12, weight="600"))
    ly += 22
    for name, dashed in (("p50 (median)", False), ("p99", True)):
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 26}" y2="{ly}" stroke="#444" stroke-width="2"'
                   f'{DASH if dashed else ""}/>')
        out.append(f'<circle cx="{lx + 13}" cy="{ly}" r="4" fill="{"#ffffff" if dashed else "#444"}" '
                   f'stroke="#444" stroke-width="2"/>')
        out.append(text(lx + 34, ly + 4, name, size=12))
        ly += 22
    ly += 8
    out.append(text(lx, ly + 4, "labels: µs per call", size=11, colour="#666"))
    if caption:
        out.append(text(LEFT, HEIGHT - 12, caption, size=10, colour="#777"))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    default = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "find-latency.svg"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="benchmark text output (default: stdin)")
    parser.add_argument("-o", "--output", default=default, help=f"the SVG to write ('-' for stdout; default {default})")
    parser.add_argument("--title", default="Find latency against store size")
    parser.add_argument("--caption", help="a line under the chart (default: the run's host line)")
    args = parser.parse_args()
    run = benchoutput.parse(benchoutput.read(args.files))
    caption = args.caption if args.caption is not None else run.host.removesuffix(", running:")
    svg = draw(benchoutput.find_latency(run), args.title, caption)
    if args.output == "-":
        sys.stdout.write(svg)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(svg)
        print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
