# An attacker that tries to borrow a trusted program's identity at keychaind: it connects, then makes the process
# that connected exec the trusted program while a forked child keeps the socket, pausing keychaind (SIGSTOP) at
# random points so keychaind looks at the process only after the exec. Run by IdentityAttackTests; every line is
# the test's, not a copy of anything.
#
#   python3 borrow_identity.py SOCKET TRUSTED REQUEST_HEX SECRET_HEX RUNS VARIANT KEYCHAIND_PID SEED
#
# VARIANT: fork-keep        the process that connected execs TRUSTED; its child waits, then sends on the socket
#          send-then-exec   the process that connected sends at once (before keychaind's greeting), then execs
#          greet-send-exec  the process that connected reads the greeting, sends, then execs before keychaind reads
# Prints one line: borrowed=N answered=N refused=N lost=N (borrowed: the secret came back).
import os, random, signal, socket, sys, time

path, trusted, request, secret = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
runs, variant, daemon = int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
random.seed(int(sys.argv[8]))
counts = {"borrowed": 0, "answered": 0, "refused": 0, "lost": 0}


def frames(sock, deadline, first_only=False):
    """Frames until the answer to request 1 (or the first frame), the end of the stream, or the deadline: (request
    id, body) pairs."""
    out, buffer = [], b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, OSError):
            break
        if not chunk:
            break
        buffer += chunk
        while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
            length = int.from_bytes(buffer[:4], "big")
            body = buffer[4:4 + length]
            buffer = buffer[4 + length:]
            out.append((int.from_bytes(body[2:6], "big"), body))
        if any(ident == 1 for ident, _ in out) or (first_only and out):
            break
    return out


def pause():
    os.kill(daemon, signal.SIGSTOP)


def resume_after(pid):
    # Let keychaind run again only once the process that connected runs the trusted program (or after a while).
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{pid}/exe") == trusted:
                break
        except OSError:
            pass
        time.sleep(0.0005)
    time.sleep(random.random() * 0.003)
    os.kill(daemon, signal.SIGCONT)


def attack(report):
    """Runs in the process that connects (it ends by exec'ing the trusted program)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.set_inheritable(True)
    point = random.choice(["before-connect", "after-connect", "after-send", "none"])
    if point == "before-connect":
        pause()
    sock.connect(path)
    if point == "after-connect":
        pause()
    if variant == "send-then-exec":
        sock.sendall(request)
    elif variant == "greet-send-exec":
        if point in ("before-connect", "after-connect"):
            os.kill(daemon, signal.SIGCONT)  # the greeting needs keychaind running
        frames(sock, time.monotonic() + 5, first_only=True)
        sock.sendall(request)
    if point == "after-send":
        pause()
    me = os.getpid()
    child = os.fork()
    if child == 0:
        resume_after(me)
        got = []
        if variant == "fork-keep":
            got = frames(sock, time.monotonic() + 5, first_only=True)  # the greeting, or why there is none
            try:
                sock.sendall(request)
            except OSError:
                pass
        got += frames(sock, time.monotonic() + 5)
        bodies = b"".join(body for _, body in got)
        if secret in bodies:
            verdict = b"B"
        elif any(ident == 1 for ident, _ in got):
            verdict = b"A"
        elif any(ident == 0 and body[1] == 2 and body[6] != 0 for ident, body in got):
            verdict = b"R"  # a failure with id 0: keychaind refused or closed the connection and said why
        else:
            verdict = b"L"
        os.write(report, verdict)
        os._exit(0)
    os.execv(trusted, [trusted, "hold"])


for run in range(runs):
    read_end, write_end = os.pipe()
    worker = os.fork()
    if worker == 0:
        os.close(read_end)
        try:
            attack(write_end)
        finally:
            os._exit(1)
    os.close(write_end)
    verdict = os.read(read_end, 1)
    os.close(read_end)
    os.kill(daemon, signal.SIGCONT)
    os.kill(worker, signal.SIGKILL)
    os.waitpid(worker, 0)
    counts[{b"B": "borrowed", b"A": "answered", b"R": "refused"}.get(verdict, "lost")] += 1

print(" ".join(f"{key}={value}" for key, value in counts.items()), flush=True)
