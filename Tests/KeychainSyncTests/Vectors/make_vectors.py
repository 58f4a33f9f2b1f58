#!/usr/bin/python3
"""Computes the sync formats' golden vectors independently of the Swift code (hashlib and Python's cryptography),
for SyncFormatVectorTests.swift. Run it to see where the numbers come from; its output is pasted into the tests."""
import hashlib
import struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives import serialization

RAW = dict(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)


def field(b):
    return struct.pack(">I", len(b)) + b


def fields(domain, *parts):
    out = field(domain.encode())
    for p in parts:
        if isinstance(p, int):
            out += field(struct.pack(">Q", p))
        elif isinstance(p, str):
            out += field(p.encode())
        else:
            out += field(p)
    return out


def keys(seed):
    signing = Ed25519PrivateKey.from_private_bytes(bytes((seed + i) % 256 for i in range(32)))
    agreement = X25519PrivateKey.from_private_bytes(bytes((seed + 32 + i) % 256 for i in range(32)))
    return signing, signing.public_key().public_bytes(**RAW), agreement.public_key().public_bytes(**RAW)


signing, sign_pub, agree_pub = keys(0)
print("signing public", sign_pub.hex())
print("agreement public", agree_pub.hex())
print("device id", hashlib.sha256(sign_pub).digest()[:16].hex())
fp = hashlib.sha256(fields("keychain-sync/fingerprint/v1", sign_pub, agree_pub)).digest()[:16].hex()
print("fingerprint", " ".join(fp[i:i + 4] for i in range(0, 32, 4)))
digest = hashlib.sha256(fields("keychain-sync/join-code/v1", sign_pub, agree_pub)).digest()
bits = int.from_bytes(digest[:7], "big") >> 6
alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
code = "".join(alphabet[(bits >> (5 * i)) & 31] for i in reversed(range(10)))
print("join code", code[:5] + "-" + code[5:])

account, zone, item, version, key_id = "5f0c7a52-3d1e-4e8b-9a61-2b7c0d9e4f13", "keychain", "item-1", 7, "00112233445566778899aabbccddeeff"
record_aad = fields("keychain-sync/record/v1", account, zone, item, version, key_id)
item_key_aad = fields("keychain-sync/item-key/v1", account, zone, item, version, key_id)
print("record aad", record_aad.hex())
zone_key = bytes(range(100, 132))
item_key = bytes(range(200, 232))
payload = b"a synced item's payload"
nonce1, nonce2 = bytes(range(12)), bytes(range(12, 24))
print("ciphertext", (nonce1 + AESGCM(item_key).encrypt(nonce1, payload, record_aad)).hex())
print("wrapped key", (nonce2 + AESGCM(zone_key).encrypt(nonce2, item_key, item_key_aad)).hex())

_, sign2, agree2 = keys(64)
devices = sorted([(sign_pub, agree_pub, "laptop", 1_700_000_000), (sign2, agree2, "desktop", 1_700_000_100)],
                 key=lambda d: hashlib.sha256(d[0]).digest()[:16].hex())
parts = [account, 3, len(devices)]
for d in devices:
    parts += list(d)
listing = fields("keychain-sync/device-list/v1", *parts)
print("device list", listing.hex())
print("device list signature", signing.sign(listing).hex())
