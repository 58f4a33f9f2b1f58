"""Reads the text output of `swift package benchmark` (package-benchmark's text format): shared by summarize.py
and plot.py, standard library only.

    run = parse(text)
    run.benchmarks["SecItemAdd · embedded · 1k"]["Time (wall clock)"]["p50"]   # microseconds

Every metric's values are scaled to plain units: a "(K)" or "(M)" in the metric's name multiplies by 1,000 or
1,000,000 (and is dropped from the name), and times are in microseconds whatever unit the run printed. A metric's
name loses its unit and the trailing "*" package-benchmark marks some metrics with: "Time (wall clock) (μs) *"
becomes "Time (wall clock)", "Throughput (# / s) (K)" becomes "Throughput (# / s)".
"""
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TIME_UNITS = {"ns": 1e-3, "μs": 1.0, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
FAILED = re.compile(r"^Benchmark (.+?) failed with (.*)$")
SIZE_LABEL = re.compile(r"^(\d+)([kM]?)$")


class Run:
    def __init__(self):
        self.host = ""
        # name -> metric name -> percentile ("p0", "p25", "p50", ...) -> value; in the order of the output.
        self.benchmarks = {}
        # name -> why, for each benchmark that failed ("Benchmark <name> failed with <why>").
        self.failures = {}

    def metric(self, name, prefix, percentile="p50"):
        """The value of the first metric of `name` whose name starts with `prefix`, or None."""
        for metric, values in self.benchmarks.get(name, {}).items():
            if metric.startswith(prefix):
                return values.get(percentile)
        return None

    def wall(self, name, percentile="p50"):
        """Wall-clock time per iteration of `name`, µs."""
        return self.metric(name, "Time (wall clock)", percentile)

    def rate(self, name):
        """Calls per second of `name` from its median wall-clock time, counting every client's call of an "N clients"
        benchmark; falls back to the throughput row (rounded to thousands by package-benchmark)."""
        n = clients(name)
        wall = self.wall(name)
        if wall:
            return n * 1e6 / wall
        throughput = self.metric(name, "Throughput")
        return throughput * n if throughput is not None else None


def clients(name):
    """How many calls one iteration of `name` makes: N for "N clients", else 1."""
    found = re.search(r"(\d+) clients", name)
    return int(found.group(1)) if found else 1


def size_of(label):
    """1000 for "1k", 1000000 for "1M", 500 for "500"; None when `label` is not a store size."""
    found = SIZE_LABEL.match(label)
    if not found:
        return None
    return int(found.group(1)) * {"": 1, "k": 1_000, "M": 1_000_000}[found.group(2)]


def size_label(size):
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"{size // 1_000_000}M"
    if size >= 1_000 and size % 1_000 == 0:
        return f"{size // 1_000}k"
    return str(size)


def clean_metric(label):
    """(name, factor): the metric's name without unit, scale and "*", and what multiplies its printed values."""
    label = label.rstrip(" *").strip()
    factor = 1.0
    scale = re.search(r"\s*\((K|M)\)$", label)
    if scale:
        factor *= 1_000 if scale.group(1) == "K" else 1_000_000
        label = label[:scale.start()]
    unit = re.search(r"\s*\((ns|μs|µs|us|ms|s)\)$", label)
    if unit:
        factor *= TIME_UNITS[unit.group(1)]
        label = label[:unit.start()]
    return label.strip(), factor


def number(cell):
    try:
        return float(cell.replace(",", "").strip())
    except ValueError:
        return None


def parse(text):
    run = Run()
    text = ANSI.sub("", text)
    name = None
    columns = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Host "):
            run.host = stripped
            continue
        failed = FAILED.match(stripped)
        if failed:
            run.failures[failed.group(1)] = failed.group(2)
            continue
        if stripped.startswith("│"):
            cells = [c.strip() for c in stripped.strip("│").split("│")]
            if cells and cells[0] == "Metric":
                columns = cells[1:]
                continue
            if name is None or not columns:
                continue
            metric, factor = clean_metric(cells[0])
            values = {}
            for column, cell in zip(columns, cells[1:]):
                value = number(cell)
                if value is not None and re.fullmatch(r"p\d+", column):
                    values[column] = value * factor
            if values:
                run.benchmarks.setdefault(name, {})[metric] = values
            continue
        # A benchmark's name: a line of its own, with "·" (every benchmark of this suite has one), not part of a
        # table or a banner.
        if stripped and "·" in stripped and not stripped.startswith(("╒", "╞", "├", "╘", "=", "#")) \
                and "%" not in stripped:
            name = stripped
            columns = []
    return run


def read(paths):
    """The text of the files named (all of them, in order), or of stdin when none is named or the name is "-"."""
    if not paths or paths == ["-"]:
        return sys.stdin.read()
    parts = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as handle:
            parts.append(handle.read())
    return "\n".join(parts)


# The find benchmarks plotted against store size, and the floor under them.
FIND_SERIES = [
    ("embedded", re.compile(r"^SecItemCopyMatching data · embedded · (\w+)$")),
    ("keychaind, 1 client", re.compile(r"^SecItemCopyMatching data · keychaind · (\w+) · 1 client$")),
    ("raw floor: SQLite lookup + AES-GCM open", re.compile(r"^raw · SQLite point lookup \+ AES-GCM open · (\w+)$")),
]


def find_latency(run):
    """{series: {store size: (p50 µs, p99 µs)}} for the find benchmarks of the run."""
    series = {label: {} for label, _ in FIND_SERIES}
    for name in run.benchmarks:
        for label, pattern in FIND_SERIES:
            found = pattern.match(name)
            size = size_of(found.group(1)) if found else None
            if size is not None and run.wall(name) is not None:
                series[label][size] = (run.wall(name), run.wall(name, "p99"))
    return series
