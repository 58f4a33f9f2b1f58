#!/usr/bin/env python3
# Drives the real kwalletd5 (Debian 12, KF5 5.103) headless to write a wallet: the PAM login path
# (--pam-login, as pam_kwallet5 does) opens/creates "kdewallet" with a PBKDF2-SHA512 hash, then
# entries are written over D-Bus with dbus-send. Run inside dbus-run-session.
import hashlib, os, socket, subprocess, sys, time, struct

home = os.environ["HOME"]
password = sys.argv[1].encode("utf-8")
walletdir = os.path.join(home, ".local/share/kwalletd")
os.makedirs(walletdir, exist_ok=True)
os.makedirs(os.path.join(home, ".config"), exist_ok=True)
with open(os.path.join(home, ".config/kwalletrc"), "w") as f:
    f.write("[Wallet]\nEnabled=true\nFirst Use=false\nDefault Wallet=kdewallet\nLocal Wallet=kdewallet\n"
            "Use One Wallet=true\nPrompt on Open=false\nLaunch Manager=false\nClose When Idle=false\n")
saltpath = os.path.join(walletdir, "kdewallet.salt")
if not os.path.exists(saltpath):
    with open(saltpath, "wb") as f:
        f.write(os.urandom(56))
salt = open(saltpath, "rb").read()
key = hashlib.pbkdf2_hmac("sha512", password, salt, 50000, 56)

r, w = os.pipe()
sockpath = os.path.join(home, "kwallet-env.sock")
if os.path.exists(sockpath):
    os.unlink(sockpath)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sockpath); srv.listen(1)
env = dict(os.environ, PAM_KWALLET5_LOGIN="1", QT_QPA_PLATFORM="offscreen")
proc = subprocess.Popen(["kwalletd5", "--pam-login", str(r), str(srv.fileno())], env=env,
                        pass_fds=(r, srv.fileno()))
os.close(r)
os.write(w, key); os.close(w)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect(sockpath)
c.sendall(("DBUS_SESSION_BUS_ADDRESS=%s\n" % os.environ["DBUS_SESSION_BUS_ADDRESS"]).encode()); c.close()
srv.close()
print("kwalletd5 pid", proc.pid, flush=True)


def wait_until(what, check, seconds=30):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline or proc.poll() is not None:
            sys.exit("kwalletd5 never " + what)
        time.sleep(0.05)


def has_name():
    out = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus.NameHasOwner", "string:org.kde.kwalletd5"], capture_output=True, text=True)
    return "boolean true" in out.stdout


wait_until("took org.kde.kwalletd5 on the bus", has_name)

APP = "fixture-maker"
def call(method, *args):
    cmd = ["dbus-send", "--session", "--print-reply", "--dest=org.kde.kwalletd5", "/modules/kwalletd5",
           "org.kde.KWallet." + method] + list(args)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    print(method, out.stdout.strip().replace("\n", " "), out.stderr.strip(), flush=True)
    return out.stdout

out = call("open", "string:kdewallet", "int64:0", "string:" + APP)
handle = out.split()[-1]
def qstring(s):
    b = s.encode("utf-16-be"); return struct.pack(">I", len(b)) + b
def bytes_arg(b):
    return "array:byte:" + ",".join(str(x) for x in b) if b else "array:byte:"

call("writePassword", "int32:" + handle, "string:Passwords", "string:https://example.com", "string:s3cr3t-pässwörd ✓", "string:" + APP)
call("writePassword", "int32:" + handle, "string:Passwords", "string:empty", "string:", "string:" + APP)
call("writeEntry", "int32:" + handle, "string:Binary Stuff", "string:blob", bytes_arg(bytes([0, 1, 2, 0xfe, 0xff, 0x80, 0x7f, 10])), "string:" + APP)
m = [("login", "alice"), ("password", "hunter2"), ("üñí", "çødé")]
mapbytes = struct.pack(">I", len(m)) + b"".join(qstring(k) + qstring(v) for k, v in reversed(sorted(m)))
call("writeMap", "int32:" + handle, "string:Form Data", "string:site.example", bytes_arg(mapbytes), "string:" + APP)
wallet = os.path.join(walletdir, "kdewallet.kwl")
before = os.stat(wallet).st_mtime_ns if os.path.exists(wallet) else None
call("sync", "int32:" + handle, "string:" + APP)
call("close", "int32:" + handle, "boolean:true", "string:" + APP)
# Closing with force saves the wallet; kwalletd5 is stopped once the file has been written.
wait_until("saved the wallet", lambda: os.path.exists(wallet) and os.stat(wallet).st_mtime_ns != before and os.stat(wallet).st_size > 0)
proc.terminate(); proc.wait(timeout=10)
print("done", flush=True)
