#!/usr/bin/env python3
"""Turns `swift package benchmark` text output into Benchmarks/README.md's tables: the results of every benchmark,
then each target against the floor measured in the same run, with the ratio and whether it is met.

    swift package --package-path Benchmarks benchmark --no-progress | tee /tmp/bench.txt | python3 Benchmarks/Scripts/summarize.py
    python3 Benchmarks/Scripts/summarize.py /tmp/bench.txt --process-start /tmp/start.json

Results, per benchmark: calls per second at the median wall-clock time (for "N clients" benchmarks one iteration is
N calls, and the rate counts them all), wall-clock p50 and p99 per iteration, mallocs per iteration at p50, and every
other metric (custom ones too, such as keychaind's RSS or writes per commit) at p50.

Targets: every rate is from a p50; a target whose benchmarks are not in the run (a `--filter` or
`KEYCHAIN_BENCH_SIZES` without 1,000,000) reads "not in this run". Process start is measured by hyperfine, not by
the suite: `--process-start` takes hyperfine's `--export-json` (median) or `--export-markdown` (mean) file.
Standard library only.
"""
import argparse
import json
import re
import sys

import benchoutput

STANDARD = ("Throughput", "Time", "Malloc")


def count(value):
    return f"{value:,.0f}"


def results_table(run):
    lines = ["| benchmark | calls/s (p50) | p50 µs | p99 µs | mallocs | other |", "|---|---:|---:|---:|---:|---|"]
    for name, metrics in run.benchmarks.items():
        wall50, wall99 = run.wall(name), run.wall(name, "p99")
        mallocs = run.metric(name, "Malloc")
        rate = run.rate(name)
        other = ", ".join(f"{metric}: {values['p50']:,.0f}" for metric, values in metrics.items()
                          if not metric.startswith(STANDARD) and "p50" in values)
        cells = [name,
                 count(rate) if rate else "",
                 f"{wall50:.0f}" if wall50 is not None else "",
                 f"{wall99:.0f}" if wall99 is not None else "",
                 f"{mallocs:.0f}" if mallocs is not None else "",
                 other]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def find_name(run, pattern):
    """The first benchmark whose name matches `pattern` (a regular expression, whole name)."""
    compiled = re.compile(pattern)
    return next((name for name in run.benchmarks if compiled.fullmatch(name)), None)


def absent(run, pattern):
    """Why a benchmark matching `pattern` has no figure: it failed, or the run left it out."""
    compiled = re.compile(pattern)
    return "failed in this run" if any(compiled.fullmatch(name) for name in run.failures) else MISSING


class Row:
    def __init__(self, target, ours="", reference="", ratio="", verdict=""):
        self.cells = [target, ours, reference, ratio, verdict]


MISSING = "not in this run"


def verdict(ok):
    return "met" if ok else "missed"


def rate_ratio(run, target, ours_pattern, floor_pattern, floor_label, at_least, times=False):
    """A target "ours ≥ at_least × floor", both as calls per second from the p50."""
    ours_name, floor_name = find_name(run, ours_pattern), find_name(run, floor_pattern)
    ours = run.rate(ours_name) if ours_name else None
    floor = run.rate(floor_name) if floor_name else None
    if not ours or not floor:
        return Row(target, count(ours) + "/s" if ours else absent(run, ours_pattern),
                   f"{floor_label} {count(floor)}/s" if floor else f"{floor_label}: {absent(run, floor_pattern)}",
                   "—", "—")
    ratio = ours / floor
    shown = f"{ratio:.1f}×" if times else f"{ratio:.2f}"
    return Row(target, f"{count(ours)}/s", f"{floor_label} {count(floor)}/s", shown, verdict(ratio >= at_least))


def at_most(run, target, pattern, metric, limit):
    """A target "a custom metric (its p50, in µs) ≤ limit" of one benchmark."""
    name = find_name(run, pattern)
    value = run.metric(name, metric) if name else None
    if value is None:
        return Row(target, absent(run, pattern), "", "—", "—")
    return Row(target, f"{value:.0f} µs", "", f"{value / limit:.2f} of {limit} µs", verdict(value <= limit))


def p99_growth(run, kind, pattern):
    """A target "find p99 at 1M ≤ 2 × at 10k" for one path, with the raw floor's growth beside it."""
    large, small = find_name(run, pattern.format("1M")), find_name(run, pattern.format("10k"))
    target = f"find p99 at 1M ≤ 2× at 10k, {kind}"
    floor_large = find_name(run, r"raw · SQLite point lookup \+ AES-GCM open · 1M")
    floor_small = find_name(run, r"raw · SQLite point lookup \+ AES-GCM open · 10k")
    floor = ""
    if floor_large and floor_small:
        a, b = run.wall(floor_large, "p99"), run.wall(floor_small, "p99")
        floor = f"; raw floor {b:.0f} → {a:.0f} µs ({a / b:.2f}×)" if a and b else ""
    if not large or not small:
        return Row(target, absent(run, pattern.format("1M")) if not large else f"{run.wall(large, 'p99'):.0f} µs",
                   (f"{run.wall(small, 'p99'):.0f} µs at 10k" if small
                    else f"10k: {absent(run, pattern.format('10k'))}") + floor, "—", "—")
    a, b = run.wall(large, "p99"), run.wall(small, "p99")
    return Row(target, f"{a:.0f} µs", f"{b:.0f} µs at 10k{floor}", f"{a / b:.2f}×", verdict(a <= 2 * b))


def process_start(path):
    """The process-start row from hyperfine's JSON or markdown export, or a pointer to Benchmarks/README.md's section."""
    target = "`git-credential-keychain get`, whole process ≤ 8 ms"
    if not path:
        return Row(target, "see Process start", "", "", "")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    measured = []  # (command, milliseconds, statistic)
    try:
        for result in json.loads(text).get("results", []):
            measured.append((result["command"], result["median"] * 1e3, "median"))
    except (ValueError, AttributeError):
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0] and not cells[0].startswith(("Command", ":", "-")):
                value = re.match(r"[\d.]+", cells[1])
                unit = 1e-3 if "[µs]" in text or "[μs]" in text else 1e3 if "[s]" in text else 1.0
                if value:
                    measured.append((cells[0].strip("`"), float(value.group()) * unit, "mean"))
    ours = next((m for m in measured if "git-credential-keychain" in m[0]), measured[0] if measured else None)
    if not ours:
        return Row(target, f"no hyperfine results in {path}", "", "—", "—")
    floor = next((m for m in measured if re.search(r"(^|/)true\b", m[0])), None)
    reference = f"`{floor[0]}` {floor[1]:.1f} ms" if floor else ""
    return Row(target, f"{ours[1]:.1f} ms {ours[2]} (`{ours[0]}`)", reference,
               f"{ours[1] / 8:.2f} of 8 ms", verdict(ours[1] <= 8))


def targets(run, start_file=None):
    rows = [
        rate_ratio(run, "embedded find, 1k ≥ 0.60 × the lookup + open floor",
                   r"SecItemCopyMatching data · embedded · 1k",
                   r"raw · SQLite point lookup \+ AES-GCM open · 1k", "lookup + AES-GCM open · 1k", 0.60),
        rate_ratio(run, "keychaind find, 1 client, 1k ≥ 0.50 × the bare round trip",
                   r"SecItemCopyMatching data · keychaind · 1k · 1 client",
                   r"raw · Unix socket round trip", "bare socket round trip", 0.50),
        rate_ratio(run, "keychaind add, 1 client, 1k ≥ 0.80 × embedded add",
                   r"SecItemAdd · keychaind · 1k · 1 client",
                   r"SecItemAdd · embedded · 1k", "embedded add", 0.80),
        rate_ratio(run, "keychaind add, 32 clients ≥ 3.5× one client (all calls)",
                   r"SecItemAdd · keychaind · 1k · 32 clients.*",
                   r"SecItemAdd · keychaind · 1k · 1 client", "1 client", 3.5, times=True),
        at_most(run, "keychaind CPU per add, 32 clients, 1k ≤ 80 µs", r"SecItemAdd · keychaind · 1k · 32 clients.*",
                "keychaind CPU", 80),
        at_most(run, "writer serial time per write, 32 clients, 1k ≤ 20 µs", r"SecItemAdd · keychaind · 1k · 32 clients.*",
                "writer serial", 20),
    ]
    name = find_name(run, r"SecItemCopyMatching attributes, all 100 · embedded · 1k")
    target = "attributes of 100 matches, embedded, 1k ≥ 1,000 queries/s"
    rate = run.rate(name) if name else None
    rows.append(Row(target, f"{count(rate)}/s", "", f"{rate / 1000:.2f} of 1,000", verdict(rate >= 1000)) if rate
                else Row(target, absent(run, r"SecItemCopyMatching attributes, all 100 · embedded · 1k"), "", "—", "—"))
    rows.append(p99_growth(run, "embedded", r"SecItemCopyMatching data · embedded · {}"))
    rows.append(p99_growth(run, "keychaind", r"SecItemCopyMatching data · keychaind · {} · 1 client"))
    name = find_name(run, r"footprint · keychaind · 1M")
    rss = run.metric(name, "keychaind RSS") if name else None
    target = "keychaind RSS at 1M ≤ 64 MiB"
    rows.append(Row(target, f"{rss:.0f} MiB", "", f"{rss / 64:.2f} of 64 MiB", verdict(rss <= 64)) if rss is not None
                else Row(target, absent(run, r"footprint · keychaind · 1M"), "", "—", "—"))
    rows.append(process_start(start_file))
    lines = ["| target | ours | floor or reference, same run | ratio | |", "|---|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row.cells) + " |" for row in rows]
    return lines


def commit_batches(run):
    """Any metric about group commit (its name has "commit" or "batch"), wherever the suite reports it."""
    lines = []
    for name, metrics in run.benchmarks.items():
        for metric, values in metrics.items():
            if re.search(r"commit|batch", metric, re.IGNORECASE) and "p50" in values:
                spread = ", ".join(f"{p} {values[p]:,.1f}" for p in ("p0", "p50", "p90", "p99", "p100") if p in values)
                lines.append(f"- {name}: {metric}: {spread}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="benchmark text output (default: stdin)")
    parser.add_argument("--process-start", metavar="FILE",
                        help="hyperfine's --export-json or --export-markdown file for the process-start target")
    parser.add_argument("--results", action="store_true", help="print the results table only")
    parser.add_argument("--targets", action="store_true", help="print the targets table only")
    args = parser.parse_args()
    run = benchoutput.parse(benchoutput.read(args.files))
    if not run.benchmarks:
        sys.exit("no benchmark results found in the input (is it `swift package benchmark`'s text output?)")
    both = args.results == args.targets
    out = []
    if args.results or both:
        out += results_table(run)
    if args.targets or both:
        if out:
            out += ["", "Against the targets, from the same run:", ""]
        out += targets(run, args.process_start)
        batches = commit_batches(run)
        if batches:
            out += ["", "Group commit:"] + batches
    if run.failures:
        out += ["", "Failed in this run:"] + [f"- {name}: {why}" for name, why in run.failures.items()]
    print("\n".join(out))


if __name__ == "__main__":
    main()
