# What a Secret Service provider answers around Lock: the default collection's Locked, SearchItems, an item's
# properties and secret while locked, and whether Unlock needs a prompt. Printed as JSON, to compare providers.
# Plain jeepney calls (no secretstorage logic in between), on the session bus of the environment.
import json
import sys

from jeepney import DBusAddress, Properties, new_method_call
from jeepney.io.blocking import open_dbus_connection

connection = open_dbus_connection(bus="SESSION")
SERVICE = "org.freedesktop.secrets"
ROOT = "/org/freedesktop/secrets"


def call(path, interface, member, signature=None, body=()):
    address = DBusAddress(path, bus_name=SERVICE, interface=interface)
    reply = connection.send_and_get_reply(new_method_call(address, member, signature, body))
    if reply.header.message_type.name == "error":
        return ("error", reply.header.fields.get(4), reply.body)
    return reply.body


def prop(path, interface, name):
    address = DBusAddress(path, bus_name=SERVICE, interface=interface)
    reply = connection.send_and_get_reply(Properties(address).get(name))
    if reply.header.message_type.name == "error":
        return "error " + str(reply.header.fields.get(4))
    return reply.body[0][1]


COLLECTION = "org.freedesktop.Secret.Collection"
ITEM = "org.freedesktop.Secret.Item"
SERVICE_INTERFACE = "org.freedesktop.Secret.Service"

out = {}
(_, session) = call(ROOT, SERVICE_INTERFACE, "OpenSession", "sv", ("plain", ("s", "")))
(collection,) = call(ROOT, SERVICE_INTERFACE, "ReadAlias", "s", ("default",))
# gnome-keyring loads a keyring without a password locked, and opens it without a prompt.
if prop(collection, COLLECTION, "Locked") is True:
    call(ROOT, SERVICE_INTERFACE, "Unlock", "ao", ([collection],))
properties = {
    "org.freedesktop.Secret.Item.Label": ("s", "Compared"),
    "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"compare": "locking"}),
}
created = call(collection, COLLECTION, "CreateItem", "a{sv}(oayays)b", (properties, (session, b"", b"compared-secret", "text/plain"), True))
if created[0] == "error":
    print("CreateItem failed:", created, file=sys.stderr)
    sys.exit(1)
item, prompt = created
out["created without a prompt"] = prompt == "/"
out["Locked before"] = prop(collection, COLLECTION, "Locked")

locked, prompt = call(ROOT, SERVICE_INTERFACE, "Lock", "ao", ([collection],))
out["Lock answers the collection"] = locked == [collection]
out["Lock prompt"] = prompt
out["Locked after"] = prop(collection, COLLECTION, "Locked")
unlocked, locked_items = call(ROOT, SERVICE_INTERFACE, "SearchItems", "a{ss}", ({"compare": "locking"},))
out["SearchItems unlocked"] = len(unlocked)
out["SearchItems locked is the item"] = locked_items == [item]
out["Items lists the item"] = item in prop(collection, COLLECTION, "Items")
out["item Locked"] = prop(item, ITEM, "Locked")
out["item Label"] = prop(item, ITEM, "Label")
attributes = prop(item, ITEM, "Attributes")
out["item Attributes"] = attributes.get("compare") if isinstance(attributes, dict) else attributes
secret = call(item, ITEM, "GetSecret", "o", (session,))
out["GetSecret"] = secret[1] if secret[0] == "error" else "answered"
out["GetSecrets answers"] = len(call(ROOT, SERVICE_INTERFACE, "GetSecrets", "aoo", ([item], session))[0])
opened, prompt = call(ROOT, SERVICE_INTERFACE, "Unlock", "ao", ([collection],))
out["Unlock needs a prompt"] = opened == [] and prompt != "/"
print(json.dumps(out, sort_keys=True))
