#!/usr/bin/python3
"""keychaind's Secret Service beside gnome-keyring's, in one run, through one client.

    Benchmarks/Scripts/secret_service_bench.py --keychaind .build/release/keychaind [--sizes 100,1000,10000]
        [--lookups 500] [--creates 200] [--min-lookups 50] [--min-creates 30] [--budget 90] [--seed 1]
        [--gnome-keyring /usr/bin/gnome-keyring-daemon] [--gnome-keyring-password bench]
        [--gnome-keyring-cache DIR] [--batch 25] [--json FILE] [--keep]

Each provider runs on its own private session bus (`dbus-daemon --session --print-address --nofork --nopidfile`,
started here) with its own temporary HOME, so your own keyrings and keychain are never touched:

- gnome-keyring: `gnome-keyring-daemon --foreground --components=secrets --unlock`, the login password on its
  standard input. With a password that is not empty it creates the `login` keyring unlocked (encrypted with that
  password) and the `default` alias points to it; with an empty password it creates nothing, and making a
  collection then needs a prompt, which cannot be answered headless.
- keychaind: `keychaind --foreground --socket SOCK --secret-service` with a fresh KEYCHAIN_HOME and
  KEYCHAIN_SECRET_SERVICE_UNREGISTERED=allow (no prompts).

For each store size both providers are started fresh, filled with N items in the default collection (attributes
{"xdg:schema": "org.example.Bench", "service": "svcI", "user": "userI"}, 24-byte secrets), checked with one
lookup, and measured. The providers take turns in batches of --batch calls, and which one goes first alternates
from size to size, so that noise on the machine falls on both:

- lookup: Service.SearchItems for one random existing item's attributes, then Service.GetSecrets of the result
  and the secret decrypted (what `secret-tool lookup` does through libsecret), over one connection and one
  dh-ietf1024-sha256-aes128-cbc-pkcs7 session opened beforehand (as libsecret keeps its session).
- create: Collection.CreateItem of a new item (replace = false): one call, answered once the item is stored.
- round trip: org.freedesktop.DBus.Peer.Ping to the provider, answered by its D-Bus library (GDBus, sd-bus)
  without any of the provider's own work: the floor of one call through this client and bus. A lookup is two
  calls, so two round trips are the part of a lookup that no provider can make faster.
- RSS: VmRSS of the provider's process (/proc/PID/status) after filling the store, in MiB; and how much it grew
  from one listing of the whole store at the end: the collection's Items property, then SearchItems by no
  attribute and by the schema every item has.

gnome-keyring rewrites its whole keyring file on every change, so filling it takes time quadratic in the size
(about half an hour for 10,000 items on 2 cores). With --gnome-keyring-cache DIR the login keyring is copied to DIR
once filled and later runs start gnome-keyring from that file (same password, same items: secrets are derived from
the index), checked before measuring; the table says so. keychaind is always filled through the bus.

If one provider fails (exits, or answers wrongly), the run goes on with the other and the table says why.

An operation stops at its count (--lookups, --creates), or once --budget seconds went by and at least --min-lookups
or --min-creates calls were made. p50/p99 are nearest-rank percentiles of the calls made (with 30 calls p99 is the
slowest). Every child process (buses and providers) is killed at the end, on an error and on Ctrl-C.

Prints a markdown table (one row per provider, size and operation) and the issue's targets computed from this run;
--json FILE also writes every number as JSON ("-" for standard output, the markdown then goes to standard error).
Progress goes to standard error. Needs Python 3 with secretstorage (3.x; it brings jeepney and cryptography),
dbus-daemon and gnome-keyring-daemon.
"""
import argparse
import gc
import hashlib
import json
import math
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import secretstorage
    from secretstorage.util import DBusAddressWrapper, open_session, format_secret
    from secretstorage.defines import SS_PATH, SS_PREFIX
    from jeepney import DBusAddress, new_method_call, MessageType
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
except ImportError as error:  # pragma: no cover
    sys.exit(f"secret_service_bench.py: needs Python's secretstorage (Debian: apt-get install python3-secretstorage): {error}")

SERVICE_IFACE = SS_PREFIX + "Service"
COLLECTION_IFACE = SS_PREFIX + "Collection"
SCHEMA = "org.example.Bench"
SECRET_LENGTH = 24
GNOME = "gnome-keyring"
OURS = "keychaind"
MIB = 1024 * 1024


def log(message, end="\n"):
    sys.stderr.write(message + end)
    sys.stderr.flush()


class Bench(Exception):
    pass


# MARK: Child processes

class Children:
    """Every process started here, killed (process group first) when the run ends however it ends."""

    def __init__(self):
        self.processes = []

    def start(self, argv, **kwargs):
        process = subprocess.Popen(argv, start_new_session=True, **kwargs)
        self.processes.append(process)
        return process

    def stop(self, process, grace=5.0):
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        if process in self.processes:
            self.processes.remove(process)

    def stop_all(self):
        # Providers before their buses: the newest first.
        for process in reversed(list(self.processes)):
            self.stop(process)


def start_bus(children, folder):
    log_file = open(os.path.join(folder, "dbus-daemon.log"), "wb")
    bus = children.start(["dbus-daemon", "--session", "--print-address", "--nofork", "--nopidfile"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_file)
    address = bus.stdout.readline().decode().strip()
    if not address:
        raise Bench(f"dbus-daemon printed no address (see {log_file.name})")
    return bus, address


def connect(address):
    """A secretstorage connection (jeepney) to the bus at `address`."""
    saved = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
    try:
        return secretstorage.dbus_init()
    finally:
        if saved is None:
            del os.environ["DBUS_SESSION_BUS_ADDRESS"]
        else:
            os.environ["DBUS_SESSION_BUS_ADDRESS"] = saved


BUS = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")


def bus_call(connection, method, signature, *body):
    reply = connection.send_and_get_reply(new_method_call(BUS, method, signature, body))
    if reply.header.message_type == MessageType.error:
        raise Bench(f"{method}: {reply.body}")
    return reply.body


def owner_pid(connection):
    """The PID of the process owning org.freedesktop.secrets, or None (NameHasOwner never activates a service)."""
    if not bus_call(connection, "NameHasOwner", "s", "org.freedesktop.secrets")[0]:
        return None
    return bus_call(connection, "GetConnectionUnixProcessID", "s", "org.freedesktop.secrets")[0]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / MIB
    return float("nan")


# MARK: Providers

class Provider:
    """One provider on its own bus, in its own temporary folder, and one client connection with one session."""

    def __init__(self, name, children, folder, args, size):
        self.name = name
        self.size = size
        self.failed = None
        self.cached = None
        self.children = children
        self.folder = folder
        self.args = args
        self.process = None
        self.connection = None
        self.session = None
        self.collection = None
        self.secret_salt = name.encode()

    def environment(self, address):
        home = os.path.join(self.folder, "home")
        runtime = os.path.join(self.folder, "run")
        for path in (home, runtime):
            os.makedirs(path, mode=0o700, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": home,
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_RUNTIME_DIR": runtime,
            "DBUS_SESSION_BUS_ADDRESS": address,
        }

    def start(self):
        self.bus, self.address = start_bus(self.children, self.folder)
        env = self.environment(self.address)
        out = open(os.path.join(self.folder, "provider.out"), "wb")
        err = open(os.path.join(self.folder, "provider.err"), "wb")
        if self.name == GNOME:
            cache = self.cache_file()
            if cache and os.path.exists(cache):
                keyrings = os.path.join(env["XDG_DATA_HOME"], "keyrings")
                os.makedirs(keyrings, mode=0o700)
                shutil.copyfile(cache, os.path.join(keyrings, "login.keyring"))
                self.cached = cache
            self.process = self.children.start(
                [self.args.gnome_keyring, "--foreground", "--components=secrets", "--unlock"],
                env=env, stdin=subprocess.PIPE, stdout=out, stderr=err)
            self.process.stdin.write(self.args.gnome_keyring_password.encode())
            self.process.stdin.close()
        else:
            env["KEYCHAIN_HOME"] = os.path.join(self.folder, "keychain")
            env["KEYCHAIN_SECRET_SERVICE_UNREGISTERED"] = "allow"
            self.process = self.children.start(
                [self.args.keychaind, "--foreground", "--socket", os.path.join(env["XDG_RUNTIME_DIR"], "keychaind.sock"),
                 "--secret-service"],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        self.connection = connect(self.address)
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise Bench(f"{self.name} exited with {self.process.returncode}: {self.tail(err.name)}")
            pid = owner_pid(self.connection)
            if pid is not None:
                if pid != self.process.pid:
                    raise Bench(f"org.freedesktop.secrets on {self.name}'s bus is owned by PID {pid}, not by "
                                f"the {self.name} started here ({self.process.pid})")
                break
            if time.monotonic() > deadline:
                raise Bench(f"{self.name} did not take org.freedesktop.secrets within 30 s: {self.tail(err.name)}")
            time.sleep(0.05)
        self.service = DBusAddressWrapper(SS_PATH, SERVICE_IFACE, self.connection)
        self.session = open_session(self.connection)
        if not self.session.encrypted:
            raise Bench(f"{self.name} refused the dh-ietf1024-sha256-aes128-cbc-pkcs7 session")
        path, = self.service.call("ReadAlias", "s", "default")
        if path == "/":
            raise Bench(f"{self.name} has no default collection (gnome-keyring: is --gnome-keyring-password empty?)")
        self.collection_path = path
        self.collection = DBusAddressWrapper(path, COLLECTION_IFACE, self.connection)
        if self.collection.get_property("Locked"):
            raise Bench(f"{self.name}'s default collection {path} is locked")

    def cache_file(self):
        if self.name != GNOME or not self.args.gnome_keyring_cache:
            return None
        password = hashlib.sha256(self.args.gnome_keyring_password.encode()).hexdigest()[:8]
        return os.path.join(self.args.gnome_keyring_cache, f"login-{self.size}-{password}.keyring")

    def save_cache(self):
        """Keeps gnome-keyring's login keyring, just filled, for the next runs (--gnome-keyring-cache)."""
        cache = self.cache_file()
        if cache and not self.cached:
            os.makedirs(self.args.gnome_keyring_cache, exist_ok=True)
            source = os.path.join(self.folder, "home", ".local", "share", "keyrings", "login.keyring")
            shutil.copyfile(source, cache + ".part")
            os.replace(cache + ".part", cache)
            log(f"  kept gnome-keyring's {self.size:,}-item keyring in {cache}")

    @staticmethod
    def tail(path, lines=5):
        try:
            with open(path, errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-lines:]) or "(nothing on stderr)"
        except OSError:
            return "(no log)"

    def stop(self):
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:
                pass
            self.connection = None
        for process in (self.process, getattr(self, "bus", None)):
            if process is not None:
                self.children.stop(process)

    # The calls measured.

    def secret(self, index):
        return hashlib.sha256(self.secret_salt + index.to_bytes(8, "big")).digest()[:SECRET_LENGTH]

    def create(self, attributes, secret, label):
        properties = {
            SS_PREFIX + "Item.Label": ("s", label),
            SS_PREFIX + "Item.Attributes": ("a{ss}", attributes),
        }
        item, prompt = self.collection.call("CreateItem", "a{sv}(oayays)b", properties,
                                            format_secret(self.session, secret, "text/plain"), False)
        if item == "/":
            raise Bench(f"{self.name} asked for a prompt ({prompt}) to create an item")
        return item

    def ping(self):
        reply = self.connection.send_and_get_reply(new_method_call(
            DBusAddress(SS_PATH, bus_name="org.freedesktop.secrets", interface="org.freedesktop.DBus.Peer"), "Ping"))
        if reply.header.message_type != MessageType.method_return:
            raise Bench(f"{self.name} answered Peer.Ping with {reply.header.message_type}: {reply.body}")

    def list_everything(self):
        """What a client listing the whole store makes the provider build: the collection's Items once, then
        SearchItems by nothing and by the schema every item has. Returns the item counts seen."""
        items = self.collection.get_property("Items")
        everything, _ = self.service.call("SearchItems", "a{ss}", {})
        by_schema, _ = self.service.call("SearchItems", "a{ss}", {"xdg:schema": SCHEMA})
        return len(items), len(everything), len(by_schema)

    def lookup(self, attributes):
        unlocked, locked = self.service.call("SearchItems", "a{ss}", attributes)
        if not unlocked:
            return None, len(locked)
        secrets, = self.service.call("GetSecrets", "aoo", unlocked[:1], self.session.object_path)
        (_session, iv, value, _content_type), = secrets.values()
        decryptor = Cipher(algorithms.AES(self.session.aes_key), modes.CBC(bytes(iv))).decryptor()
        padded = decryptor.update(bytes(value)) + decryptor.finalize()
        return padded[:-padded[-1]], len(unlocked) + len(locked)


def attributes(index, prefix=""):
    return {"xdg:schema": SCHEMA, "service": f"{prefix}svc{index}", "user": f"{prefix}user{index}"}


# MARK: Measuring

def guarded(provider, what, action):
    """Runs action(); if it fails, marks `provider` failed (the run goes on with the other one) and returns None."""
    try:
        return action()
    except Exception as error:  # noqa: BLE001 - any failure of one provider, not Ctrl-C
        died = provider.process.poll() if provider.process is not None else None
        provider.failed = f"{what}: {type(error).__name__}: {error}" + \
            (f" ({provider.name} exited with {died}: {provider.tail(os.path.join(provider.folder, 'provider.err'))})"
             if died is not None else "")
        log(f"\n  {provider.name} failed, {provider.failed}")
        return None


def fill(providers, size):
    """Makes items 0..size-1 in each provider's default collection, one provider after the other (a gnome-keyring
    started from a --gnome-keyring-cache file has them already)."""
    result = {}
    tty = sys.stderr.isatty()
    for provider in providers:
        if provider.failed:
            continue
        if provider.cached:
            result[provider.name] = {"items": size, "from_cache": provider.cached}
            log(f"  {provider.name} at {size:,}: the store filled in an earlier run, from {provider.cached}")
            continue

        def run():
            started = time.monotonic()
            last = started
            for index in range(size):
                provider.create(attributes(index), provider.secret(index), f"bench item {index}")
                now = time.monotonic()
                if index + 1 == size or now - last >= (0.5 if tty else 10.0):
                    last = now
                    done = index + 1
                    rate = done / max(now - started, 1e-9)
                    eta = (size - done) / rate if rate > 0 else 0
                    log(("\r" if tty else "") + f"  filling {provider.name} to {size:,}: {done:,}/{size:,} items "
                        f"({rate:,.0f}/s, {now - started:,.0f} s, ETA {eta:,.0f} s)    ",
                        end="" if tty and done < size else "\n")
            elapsed = time.monotonic() - started
            return {"items": size, "seconds": elapsed, "calls_per_second": size / elapsed if elapsed else 0}

        filled = guarded(provider, f"filling to {size:,}", run)
        if filled is not None:
            result[provider.name] = filled
            provider.save_cache()
    return result


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def summarize(durations_ns, seconds):
    values = sorted(d / 1e6 for d in durations_ns)
    n = len(values)
    total = sum(values) / 1000
    return {
        "calls": n,
        # Calls per second of the time spent in the calls (batches of the other provider in between not counted).
        "calls_per_second": n / total if total else float("nan"),
        "mean_ms": (sum(values) / n) if n else float("nan"),
        "p50_ms": percentile(values, 0.50),
        "p99_ms": percentile(values, 0.99),
        "max_ms": values[-1] if values else float("nan"),
        "wall_seconds": seconds,
    }


def take_turns(providers, what, operation, count, minimum, budget, batch):
    """Runs operation(provider, k) for k = 0, 1, ... on each provider, batch by batch in turn, until each has made
    `count` calls or has spent `budget` seconds and made at least `minimum`. Returns the summaries by name (of the
    providers that did not fail)."""
    providers = [p for p in providers if not p.failed]
    durations = {p.name: [] for p in providers}
    spent = {p.name: 0.0 for p in providers}
    done = {p.name: False for p in providers}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while not all(done.values()):
            for provider in providers:
                if done[provider.name]:
                    continue
                mine = durations[provider.name]

                def run():
                    for _ in range(batch):
                        k = len(mine)
                        before = time.perf_counter_ns()
                        operation(provider, k)
                        mine.append(time.perf_counter_ns() - before)
                        if len(mine) >= count:
                            break
                    return True

                started = time.monotonic()
                ok = guarded(provider, what, run)
                spent[provider.name] += time.monotonic() - started
                if not ok or len(mine) >= count or (spent[provider.name] >= budget and len(mine) >= minimum):
                    done[provider.name] = True
    finally:
        if gc_was_enabled:
            gc.enable()
    return {p.name: summarize(durations[p.name], spent[p.name]) for p in providers if not p.failed}


def measure(args, children, root, size, order):
    providers = []
    results = {}
    try:
        for name in order:
            folder = os.path.join(root, f"{name}-{size}")
            os.makedirs(folder)
            provider = Provider(name, children, folder, args, size)
            providers.append(provider)
            log(f"  starting {name} (bus and provider)")
            guarded(provider, "starting", provider.start)
        filled = fill(providers, size)
        picks = random.Random(args.seed * 1_000_003 + size)
        for provider in providers:
            if provider.failed:
                continue

            def check():
                # Checked before measuring: one item found, its secret the one stored; the last one there, no more.
                for probe, expected in ((picks.randrange(size), 1), (size - 1, 1), (size, 0)):
                    secret, found = provider.lookup(attributes(probe))
                    if found != expected or (expected and secret != provider.secret(probe)):
                        raise Bench(f"looking item {probe} up found {found} item(s), not {expected}, and "
                                    f"{'the wrong' if secret is not None else 'no'} secret")
                return True

            if guarded(provider, "checking the store", check):
                results[(provider.name, "rss")] = {"rss_mib": rss_mib(provider.process.pid)}
                results[(provider.name, "fill")] = filled[provider.name]

        lookup_indexes = [picks.randrange(size) for _ in range(args.lookups)]

        def lookup(provider, k):
            secret, found = provider.lookup(attributes(lookup_indexes[k]))
            if secret != provider.secret(lookup_indexes[k]):
                raise Bench(f"looking item {lookup_indexes[k]} up found {found} item(s) and "
                            f"{'the wrong' if secret is not None else 'no'} secret")

        log(f"  lookups at {size:,} items ({' then '.join(order)} in turns of {args.batch})")
        for name, summary in take_turns(providers, "lookups", lookup, args.lookups, args.min_lookups, args.budget,
                                        args.batch).items():
            results[(name, "lookup")] = summary

        log(f"  round trips (Peer.Ping) at {size:,} items")
        for name, summary in take_turns(providers, "round trips", lambda provider, k: provider.ping(), args.lookups,
                                        args.min_lookups, args.budget, args.batch).items():
            results[(name, "ping")] = summary

        def create(provider, k):
            provider.create(attributes(k, prefix="new-"), provider.secret(size + k), f"new bench item {k}")

        log(f"  durable creates at {size:,} items")
        for name, summary in take_turns(providers, "creates", create, args.creates, args.min_creates, args.budget,
                                        args.batch).items():
            results[(name, "create")] = summary
        for provider in providers:
            if not provider.failed:
                results[(provider.name, "rss_after")] = {"rss_mib": rss_mib(provider.process.pid)}

        log(f"  listing every item (Collection.Items, SearchItems) at {size:,} items")
        for provider in providers:
            if provider.failed:
                continue

            def listing():
                before = rss_mib(provider.process.pid)
                counts = provider.list_everything()
                if min(counts) < size:
                    raise Bench(f"listing the store saw {counts} items, fewer than the {size:,} filled")
                after = rss_mib(provider.process.pid)
                return {"rss_mib": after, "before_mib": before, "growth_mib": after - before, "items": counts[0]}

            row = guarded(provider, "listing every item", listing)
            if row:
                results[(provider.name, "rss_listing")] = row
    finally:
        for provider in reversed(providers):
            provider.stop()
            if provider.failed:
                results[(provider.name, "failed")] = {"reason": provider.failed}
    return results


# MARK: Output

def fmt(value, digits=2):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


OPERATIONS = [("lookup", "lookup (SearchItems + GetSecrets)"), ("ping", "round trip (Peer.Ping, no provider work)"), ("create", "durable create (CreateItem)"),
              ("fill", "filling the store (CreateItem)"), ("rss", "RSS after filling"),
              ("rss_after", "RSS after measuring"), ("rss_listing", "RSS after listing every item once (Items, SearchItems)"),
              ("failed", "failed")]


def markdown_table(results, sizes):
    lines = ["| Provider | Items | Operation | Calls | Calls/s | p50 (ms) | p99 (ms) | max (ms) | RSS (MiB) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for size in sizes:
        for name in (GNOME, OURS):
            for key, label in OPERATIONS:
                row = results.get((name, size, key))
                if row is None:
                    continue
                if key == "rss_listing":
                    lines.append(f"| {name} | {size:,} | {label}: {fmt(row['growth_mib'], 1)} MiB more | | | | | "
                                 f"| {fmt(row['rss_mib'], 1)} |")
                elif key.startswith("rss"):
                    lines.append(f"| {name} | {size:,} | {label} | | | | | | {fmt(row['rss_mib'], 1)} |")
                elif key == "failed":
                    lines.append(f"| {name} | {size:,} | **failed**: {row['reason'].replace('|', '/')} | | | | | | |")
                elif key == "fill" and "from_cache" in row:
                    lines.append(f"| {name} | {size:,} | {label}: loaded from an earlier run's file | {row['items']:,} "
                                 f"| | | | | |")
                elif key == "fill":
                    lines.append(f"| {name} | {size:,} | {label} | {row['items']:,} | {fmt(row['calls_per_second'], 1)} "
                                 f"| | | | |")
                else:
                    lines.append(f"| {name} | {size:,} | {label} | {row['calls']:,} | {fmt(row['calls_per_second'], 1)} "
                                 f"| {fmt(row['p50_ms'], 3)} | {fmt(row['p99_ms'], 3)} | {fmt(row['max_ms'], 3)} | |")
    return "\n".join(lines)


def targets(results):
    def get(name, size, key, field):
        row = results.get((name, size, key))
        return None if row is None else row.get(field)

    out = []

    def target(text, value, limit, better, unit):
        if value is None:
            out.append({"target": text, "status": "not measured", "value": None})
            return
        met = value >= limit if better == "higher" else value <= limit
        out.append({"target": text, "status": "met" if met else "missed", "value": value, "limit": limit,
                    "better": better, "unit": unit})

    ours, theirs = get(OURS, 1000, "lookup", "calls_per_second"), get(GNOME, 1000, "lookup", "calls_per_second")
    target("lookups ≥ 2× gnome-keyring's rate at 1,000 items", ours / theirs if ours and theirs else None, 2.0,
           "higher", "×")
    # What the 2× target leaves for keychaind's own work: half gnome-keyring's mean lookup, less keychaind's two
    # round trips (the part of a lookup that is the client and the bus, measured in the same run).
    gnome_mean, ours_mean = get(GNOME, 1000, "lookup", "mean_ms"), get(OURS, 1000, "lookup", "mean_ms")
    ping_mean, gnome_ping = get(OURS, 1000, "ping", "mean_ms"), get(GNOME, 1000, "ping", "mean_ms")
    if gnome_mean and ours_mean and ping_mean and gnome_ping:
        out.append({"target": "floor", "status": "info", "value": None, "floor": {
            "gnome_lookup_ms": gnome_mean, "keychaind_lookup_ms": ours_mean, "keychaind_two_round_trips_ms": 2 * ping_mean,
            "gnome_two_round_trips_ms": 2 * gnome_ping,
            "budget_for_keychaind_work_ms": gnome_mean / 2 - 2 * ping_mean,
            "keychaind_work_ms": ours_mean - 2 * ping_mean, "gnome_work_ms": gnome_mean - 2 * gnome_ping}})
    p99_big, p99_small = get(OURS, 10000, "lookup", "p99_ms"), get(OURS, 100, "lookup", "p99_ms")
    target("keychaind lookup p99 at 10,000 items ≤ 2× its p99 at 100", p99_big / p99_small if p99_big and p99_small else None,
           2.0, "lower", "×")
    ours, theirs = get(OURS, 1000, "create", "calls_per_second"), get(GNOME, 1000, "create", "calls_per_second")
    target("durable creates ≥ 20× gnome-keyring's rate at 1,000 items", ours / theirs if ours and theirs else None, 20.0,
           "higher", "×")
    target("keychaind RSS at 10,000 items ≤ 64 MiB", get(OURS, 10000, "rss", "rss_mib"), 64.0, "lower", "MiB")
    target("keychaind RSS growth from listing 10,000 items once (Items, SearchItems) ≤ 10 MiB",
           get(OURS, 10000, "rss_listing", "growth_mib"), 10.0, "lower", "MiB")
    return out


def markdown_targets(checks, results):
    lines = ["| Target | Result | Measured |", "|---|---|---|"]
    floor = None
    for check in checks:
        if check["status"] == "info":
            floor = check["floor"]
            continue
        if check["value"] is None:
            lines.append(f"| {check['target']} | not measured (needs those sizes in --sizes) | |")
            continue
        value = check["value"]
        if check["unit"] == "×":
            measured = f"{value:.2f}× (target {'≥' if check['better'] == 'higher' else '≤'} {check['limit']:g}×)"
        else:
            measured = f"{value:.1f} MiB ({value / check['limit'] * 100:.0f}% of {check['limit']:g} MiB)"
        lines.append(f"| {check['target']} | **{check['status']}** | {measured} |")
    if floor:
        lines += ["", "Where a lookup's time goes at 1,000 items (means, ms): gnome-keyring "
                  f"{floor['gnome_lookup_ms']:.3f} = two round trips {floor['gnome_two_round_trips_ms']:.3f} + its work "
                  f"{floor['gnome_work_ms']:.3f}; keychaind {floor['keychaind_lookup_ms']:.3f} = two round trips "
                  f"{floor['keychaind_two_round_trips_ms']:.3f} + its work {floor['keychaind_work_ms']:.3f}. "
                  f"2× gnome-keyring's rate leaves {floor['budget_for_keychaind_work_ms']:.3f} ms for keychaind's work "
                  "in both calls."]
    return "\n".join(lines)


def without_nan(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: without_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nan(v) for v in value]
    return value


# MARK: Main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keychaind", required=True, help="the keychaind to measure")
    parser.add_argument("--gnome-keyring", default=shutil.which("gnome-keyring-daemon") or "/usr/bin/gnome-keyring-daemon")
    parser.add_argument("--gnome-keyring-password", default="bench",
                        help="the login keyring's password (not empty: see above); default %(default)s")
    parser.add_argument("--sizes", default="100,1000,10000", help="store sizes, comma-separated (default %(default)s)")
    parser.add_argument("--lookups", type=int, default=500, help="lookups per provider and size (default %(default)s)")
    parser.add_argument("--creates", type=int, default=200, help="creates per provider and size (default %(default)s)")
    parser.add_argument("--min-lookups", type=int, default=50, help="at least this many lookups even past --budget")
    parser.add_argument("--min-creates", type=int, default=30, help="at least this many creates even past --budget")
    parser.add_argument("--budget", type=float, default=90.0,
                        help="seconds per provider, size and operation after which it stops at its minimum (default %(default)s)")
    parser.add_argument("--batch", type=int, default=25, help="calls per turn (default %(default)s)")
    parser.add_argument("--gnome-keyring-cache", metavar="DIR",
                        help="keep gnome-keyring's login keyring in DIR once filled, and start from it in later runs "
                             "instead of filling it again (filling 10,000 items takes gnome-keyring half an hour)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE (- for standard output)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, keyrings, keychains)")
    args = parser.parse_args()
    try:
        sizes = [int(s.replace("_", "").replace(",", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes: {args.sizes}")
    if not sizes or min(sizes) < 1:
        parser.error("--sizes needs sizes of at least 1")
    args.keychaind = os.path.abspath(args.keychaind)
    for program in (args.keychaind, args.gnome_keyring):
        if not os.access(program, os.X_OK):
            parser.error(f"{program} is not an executable")
    if shutil.which("dbus-daemon") is None:
        parser.error("needs dbus-daemon")
    if not args.gnome_keyring_password:
        parser.error("--gnome-keyring-password must not be empty: gnome-keyring-daemon --unlock makes no login keyring then")

    # Ctrl-C, SIGTERM and SIGHUP end the run through the finally below (SIGINT too when started with it ignored,
    # as a shell does for a command run in the background).
    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    ending = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    for signum in ending:
        signal.signal(signum, interrupted)

    children = Children()
    root = tempfile.mkdtemp(prefix="secret-service-bench.")
    results = {}
    started = time.monotonic()
    try:
        for index, size in enumerate(sizes):
            order = [GNOME, OURS] if index % 2 == 0 else [OURS, GNOME]
            log(f"{size:,} items: {' and '.join(order)}")
            for (name, key), row in measure(args, children, root, size, order).items():
                results[(name, size, key)] = row
    except KeyboardInterrupt:
        log("\ninterrupted: stopping every process started")
        return 130
    except Bench as error:
        log(f"secret_service_bench.py: {error}" + (f" (logs in {root})" if args.keep else ""))
        return 1
    finally:
        for signum in ending:
            signal.signal(signum, signal.SIG_IGN)  # no second interruption half way through the cleanup
        children.stop_all()
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    checks = targets(results)
    host = f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}"
    lines = [f"## Secret Service: gnome-keyring and keychaind, one run",
             "",
             f"{time.strftime('%Y-%m-%d %H:%M %Z')} · {host} · Python {platform.python_version()}, secretstorage "
             f"{getattr(secretstorage, '__version__', '?')} (dh-ietf1024-sha256-aes128-cbc-pkcs7 session) · "
             f"{os.path.basename(args.keychaind)} {args.keychaind} · {args.gnome_keyring} · "
             f"{time.monotonic() - started:,.0f} s",
             "",
             "`" + " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "`",
             "",
             markdown_table(results, sizes),
             "",
             "Targets (from this run):",
             "",
             markdown_targets(checks, results)]
    text = "\n".join(lines) + "\n"
    if args.json:
        document = {
            "host": host,
            "keychaind": args.keychaind,
            "gnome_keyring": args.gnome_keyring,
            "sizes": sizes,
            "settings": {k: getattr(args, k) for k in ("lookups", "creates", "min_lookups", "min_creates", "budget",
                                                        "batch", "seed")},
            "results": [{"provider": name, "items": size, "operation": key, **row}
                        for (name, size, key), row in results.items()],
            "targets": checks,
        }
        encoded = json.dumps(without_nan(document), indent=2, allow_nan=False, default=str)
        if args.json == "-":
            sys.stderr.write(text)
            sys.stdout.write(encoded + "\n")
            return 0
        with open(args.json, "w") as f:
            f.write(encoded + "\n")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
