"""kro.cel.lib_ip: the Kubernetes IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library
ip.go, cidr.go), on top of Python's `ipaddress`.

Like Go's net/netip as used upstream: IPv4-mapped IPv6 addresses and zones are rejected,
a CIDR keeps its host bits (`cidr("10.0.0.5/8").ip()` is 10.0.0.5; `masked()` clears
them), and the predicates follow Go's definitions (e.g. private ranges are still global
unicast).
"""

from __future__ import annotations

import ipaddress
from typing import Final

from google.protobuf.message import Message

from kro.cel.library import Overload
from kro.cel.opaque import CIDR, IP, make, text_of

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


def _parse_ip(text: str) -> Address:
    if "%" in text:
        raise ValueError("IP address with zone value is not allowed")
    try:
        addr = ipaddress.ip_address(text)
    except ValueError as err:
        raise ValueError(
            f"IP Address {text!r} parse error during conversion from string: {err}"
        ) from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError("IPv4-mapped IPv6 address is not allowed")
    return addr


def _parse_cidr(text: str) -> Interface:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        raise ValueError(
            f"network address parse error during conversion from string: "
            f"netip.ParsePrefix(\"{text}\"): no '/' or bad bits"
        )
    _parse_ip(address)
    try:
        return ipaddress.ip_interface(text)
    except ValueError as err:
        raise ValueError(
            f"network address parse error during conversion from string: {err}"
        ) from None


def ip(text: str) -> Message:
    return make(IP, value=str(_parse_ip(text)))


def is_ip(text: str) -> bool:
    try:
        _parse_ip(text)
    except ValueError:
        return False
    return True


def is_canonical(text: str) -> bool:
    return str(_parse_ip(text)) == text


def _addr(value: Message) -> Address:
    return ipaddress.ip_address(text_of(value))


def family(value: Message) -> int:
    return _addr(value).version


def is_unspecified(value: Message) -> bool:
    return _addr(value).is_unspecified


def is_loopback(value: Message) -> bool:
    return _addr(value).is_loopback


def is_link_local_multicast(value: Message) -> bool:
    addr = _addr(value)
    if addr.version == 4:
        return addr in ipaddress.ip_network("224.0.0.0/24")
    return (int(addr) >> 112) & 0xFF0F == 0xFF02


def is_link_local_unicast(value: Message) -> bool:
    addr = _addr(value)
    if addr.version == 4:
        return addr in ipaddress.ip_network("169.254.0.0/16")
    return addr in ipaddress.ip_network("fe80::/10")


def is_global_unicast(value: Message) -> bool:
    addr = _addr(value)
    if addr.version == 4 and int(addr) in (0, 0xFFFFFFFF):
        return False
    return not (
        addr.is_unspecified or addr.is_loopback or addr.is_multicast or is_link_local_unicast(value)
    )


def ip_to_string(value: Message) -> str:
    return text_of(value)


def cidr(text: str) -> Message:
    iface = _parse_cidr(text)
    return make(CIDR, value=f"{iface.ip}/{iface.network.prefixlen}")


def is_cidr(text: str) -> bool:
    try:
        _parse_cidr(text)
    except ValueError:
        return False
    return True


def _iface(value: Message) -> Interface:
    return ipaddress.ip_interface(text_of(value))


def contains_ip(value: Message, other: Message | str) -> bool:
    addr = _parse_ip(other) if isinstance(other, str) else _addr(other)
    network = _iface(value).network
    return addr.version == network.version and addr in network


def contains_cidr(value: Message, other: Message | str) -> bool:
    inner = _parse_cidr(other) if isinstance(other, str) else _iface(other)
    outer = _iface(value).network
    if inner.version != outer.version:
        return False
    return outer.prefixlen <= inner.network.prefixlen and inner.ip in outer


def cidr_ip(value: Message) -> Message:
    return make(IP, value=str(_iface(value).ip))


def prefix_length(value: Message) -> int:
    return _iface(value).network.prefixlen


def masked(value: Message) -> Message:
    network = _iface(value).network
    return make(CIDR, value=f"{network.network_address}/{network.prefixlen}")


_IP: Final = "net.IP"
_CIDR: Final = "net.CIDR"
OVERLOADS: Final = (
    Overload("ip", "string_to_ip", ("string",), _IP, ip),
    Overload("isIP", "is_ip_string", ("string",), "bool", is_ip),
    Overload("ip.isCanonical", "ip_is_canonical", ("string",), "bool", is_canonical),
    Overload("family", "ip_family", (_IP,), "int", family, True),
    Overload("isUnspecified", "ip_is_unspecified", (_IP,), "bool", is_unspecified, True),
    Overload("isLoopback", "ip_is_loopback", (_IP,), "bool", is_loopback, True),
    Overload("isLinkLocalMulticast", "ip_is_link_local_multicast", (_IP,), "bool",
             is_link_local_multicast, True),
    Overload("isLinkLocalUnicast", "ip_is_link_local_unicast", (_IP,), "bool",
             is_link_local_unicast, True),
    Overload("isGlobalUnicast", "ip_is_global_unicast", (_IP,), "bool", is_global_unicast, True),
    Overload("string", "ip_to_string", (_IP,), "string", ip_to_string),
    Overload("cidr", "string_to_cidr", ("string",), _CIDR, cidr),
    Overload("isCIDR", "is_cidr_string", ("string",), "bool", is_cidr),
    Overload("containsIP", "cidr_contains_ip_ip", (_CIDR, _IP), "bool", contains_ip, True),
    Overload("containsIP", "cidr_contains_ip_string", (_CIDR, "string"), "bool", contains_ip,
             True),
    Overload("containsCIDR", "cidr_contains_cidr", (_CIDR, _CIDR), "bool", contains_cidr, True),
    Overload("containsCIDR", "cidr_contains_cidr_string", (_CIDR, "string"), "bool",
             contains_cidr, True),
    Overload("ip", "cidr_ip", (_CIDR,), _IP, cidr_ip, True),
    Overload("prefixLength", "cidr_prefix_length", (_CIDR,), "int", prefix_length, True),
    Overload("masked", "cidr_masked", (_CIDR,), _CIDR, masked, True),
    Overload("string", "cidr_to_string", (_CIDR,), "string", ip_to_string),
)  # fmt: skip
