#!/usr/bin/env python3
"""Turns `swift package benchmark` text output (stdin) into the README's results table (stdout).

Per benchmark: calls per second at the median wall-clock time (for "N clients" benchmarks, one iteration is N calls), wall-clock
p50 and p99 per iteration, mallocs per iteration at p50, and any custom metrics.
"""
import re
import sys

text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", sys.stdin.read())
rows = []
name = None
metrics = {}


def flush():
    if name and metrics:
        rows.append((name, dict(metrics)))


for line in text.splitlines():
    stripped = line.strip()
    if stripped and not stripped.startswith(("│", "╒", "╞", "├", "╘", "=", "Host", "#")) and "%" not in stripped \
            and "·" in stripped:
        flush()
        name, metrics = stripped, {}
        continue
    if name and stripped.startswith("│") and not stripped.startswith("│ Metric"):
        cells = [c.strip() for c in stripped.strip("│").split("│")]
        label, values = cells[0], cells[1:]
        scale = 1000 if "(K)" in label else 1_000_000 if "(M)" in label else 1
        try:
            p50, p99 = float(values[2]) * scale, float(values[5]) * scale
        except (ValueError, IndexError):
            continue
        metrics[label.rstrip(" *")] = (p50, p99)
flush()

print("| benchmark | calls/s (p50) | p50 µs | p99 µs | mallocs | other |")
print("|---|---:|---:|---:|---:|---|")
for name, m in rows:
    clients = re.search(r"(\d+) clients", name)
    n = int(clients.group(1)) if clients else 1
    throughput = next((v for k, v in m.items() if k.startswith("Throughput")), None)
    wall = next((v for k, v in m.items() if k.startswith("Time (wall clock)")), None)
    mallocs = next((v for k, v in m.items() if k.startswith("Malloc")), None)
    other = ", ".join(f"{k}: {v[0]:.0f}" for k, v in m.items()
                      if not k.startswith(("Throughput", "Time", "Malloc")))
    # From the median wall-clock time (the throughput row is rounded to thousands).
    calls = f"{n * 1e6 / wall[0]:,.0f}" if wall and wall[0] else (f"{throughput[0] * n:,.0f}" if throughput else "")
    print(f"| {name} | {calls} | {wall[0]:.0f} | {wall[1]:.0f} |" if wall else f"| {name} | {calls} | | |",
          f"{mallocs[0]:.0f} |" if mallocs else " |", f"{other} |")
