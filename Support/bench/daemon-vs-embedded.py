#!/usr/bin/env python3
"""Round-trip latency and throughput of SecItemAdd and SecItemCopyMatching, through keychaind and embedded.

Runs 1, 8 and 32 client processes (keychain-test-helper's `latency` mode, one thread each) against a fresh
keychain per configuration, pools every call's latency, and prints a Markdown table: aggregate calls per
second (all calls over the wall time of the batch), and p50/p99 of the pooled per-call latencies.

    swift build -c release
    python3 Support/bench/daemon-vs-embedded.py [--products .build/release] [--calls 2000]

Numbers depend on the machine and its disk (every add is a durable commit); compare rows of one run.
"""
import argparse
import os
import subprocess
import tempfile
import time


def percentile(sorted_samples, p):
    return sorted_samples[min(len(sorted_samples) - 1, int(len(sorted_samples) * p))]


def start_daemon(products, home, socket):
    env = dict(os.environ, KEYCHAIN_HOME=home)
    daemon = subprocess.Popen([os.path.join(products, "keychaind"), "--foreground", "--socket", socket],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = b""
    deadline = time.time() + 60
    while b"keychaind: ready" not in line and time.time() < deadline:
        chunk = daemon.stderr.readline()
        if not chunk:
            break
        line += chunk
    if b"keychaind: ready" not in line:
        daemon.kill()
        raise SystemExit("keychaind did not start: " + line.decode(errors="replace"))
    return daemon


def run(products, mode, op, clients, calls, folder):
    home = os.path.join(folder, f"{mode}-{op}-{clients}")
    os.makedirs(home, mode=0o700)
    env = dict(os.environ, KEYCHAIN_HOME=home)
    daemon = None
    if mode == "daemon":
        socket = os.path.join(home, "d.sock")
        daemon = start_daemon(products, home, socket)
        env["KEYCHAIN_DAEMON_SOCKET"] = socket
    else:
        env["KEYCHAIN_DAEMON_SOCKET"] = "off"
        # Create the keychain once, so the clients do not all race to make it.
        subprocess.run([os.path.join(products, "keychain-test-helper"), "latency", "find", "1", "1"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
    helper = os.path.join(products, "keychain-test-helper")
    per_client = max(1, calls // clients)
    files = [os.path.join(home, f"samples-{i}") for i in range(clients)]
    began = time.monotonic()
    processes = [subprocess.Popen([helper, "latency", op, str(per_client), "1", f], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for f in files]
    for p in processes:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{mode} {op} x{clients}: client failed: {out.decode(errors='replace')}")
    wall = time.monotonic() - began
    if daemon:
        daemon.terminate()
        daemon.wait()
    samples = sorted(float(line) for f in files for line in open(f) if line.strip())
    return len(samples) / wall, percentile(samples, 0.5), percentile(samples, 0.99)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", default=".build/release")
    parser.add_argument("--calls", type=int, default=2000, help="calls per configuration, split among the clients")
    args = parser.parse_args()
    print("| op | clients | mode | calls/s | p50 µs | p99 µs |")
    print("|---|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="keychain-bench-") as folder:
        for op in ("find", "add"):
            for clients in (1, 8, 32):
                for mode in ("embedded", "daemon"):
                    rate, p50, p99 = run(args.products, mode, op, clients, args.calls, folder)
                    print(f"| {op} | {clients} | {mode} | {rate:,.0f} | {p50:,.0f} | {p99:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
