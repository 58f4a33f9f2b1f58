"""A real Secret Service client (Python's secretstorage over jeepney) exercising the API end to end.

Run as: python3 secretstorage_client.py dh|plain
Prints one line per check and "ok" at the end; any failure raises (non-zero exit).
"""
import sys

import secretstorage
import secretstorage.util

mode = sys.argv[1]
if mode == "plain":
    # An algorithm the service refuses with NotSupported makes secretstorage fall back to plain.
    secretstorage.util.ALGORITHM_DH = "x-not-an-algorithm"

connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
print("default collection", collection.collection_path)
if collection.is_locked():
    collection.unlock()
assert not collection.is_locked(), "the default collection is still locked"

attributes = {"xdg:schema": "org.example.Password", "service": "client-" + mode, "user": "alice"}
item = collection.create_item("Example " + mode, attributes, b"s3cret-\x00\xff-" + mode.encode())
print("created", item.item_path)
print("session encrypted", item.session.encrypted if item.session else None)
assert item.get_secret() == b"s3cret-\x00\xff-" + mode.encode()

found = list(collection.search_items({"service": "client-" + mode}))
assert [i.item_path for i in found] == [item.item_path], found
found = list(secretstorage.search_items(connection, {"user": "alice", "service": "client-" + mode}))
assert [i.item_path for i in found] == [item.item_path], found
assert list(collection.search_items({"service": "client-" + mode, "user": "bob"})) == []

assert item.get_label() == "Example " + mode
item.set_label("Renamed " + mode)
assert item.get_label() == "Renamed " + mode
assert item.get_attributes() == attributes
item.set_attributes(dict(attributes, extra="1"))
assert item.get_attributes()["extra"] == "1"
item.set_secret(b"changed")
assert item.get_secret() == b"changed"
assert item.get_created() > 0 and item.get_modified() >= item.get_created()

# Replace: the same attributes give the same item back with the new secret.
again = collection.create_item("Again", dict(attributes, extra="1"), b"replaced", replace=True)
assert again.item_path == item.item_path, (again.item_path, item.item_path)
assert item.get_secret() == b"replaced"

# Another collection, an alias for it, found through the alias.
other = secretstorage.create_collection(connection, "Other " + mode, alias="other" + mode)
print("other collection", other.collection_path)
same = secretstorage.get_collection_by_alias(connection, "other" + mode)
assert same.collection_path == other.collection_path
assert other.get_label() == "Other " + mode
other.set_label("Other renamed")
assert other.get_label() == "Other renamed"
moved = other.create_item("In other", {"service": "other"}, b"x")
assert [i.item_path for i in other.get_all_items()] == [moved.item_path]

# Lock and unlock: without a passcode, Lock locks the collection for everyone, and Unlock's prompt asks the
# person to confirm (the test queues the answer).
collection.lock()
assert collection.is_locked()
assert not collection.unlock()
assert not collection.is_locked()

moved.delete()
assert list(other.get_all_items()) == []
other.delete()
assert other.collection_path not in [c.collection_path for c in secretstorage.get_all_collections(connection)]
item.delete()
assert list(collection.search_items({"service": "client-" + mode})) == []
print("ok")
