// sd-bus, libsystemd's D-Bus client (Debian's libsystemd-dev), as one Swift module. Nothing is added here: every
// call KeychainDBus makes has a non-variadic form in sd-bus itself (sd_bus_message_append_basic, read_basic,
// open_container, sd_bus_call, sd_bus_match_signal), so no C wrapper target is needed.
//
// <sys/eventfd.h> is here too because Swift's Glibc module does not include it: DBusServerConnection wakes its
// bus thread with an eventfd.
#ifndef CSYSTEMDBUS_SHIM_H
#define CSYSTEMDBUS_SHIM_H

#include <systemd/sd-bus.h>
#include <sys/eventfd.h>

#endif
