"""Who is knocking: the key under which per-source limits count a client's address.

An IPv4 address counts alone; an IPv6 address counts with its /64 network, since one host commonly
holds a whole /64 and could otherwise step around a per-address limit.
"""

from __future__ import annotations

import functools
import ipaddress

IPV6_PREFIX = 64
KEYS_CACHED = 16384


@functools.lru_cache(maxsize=KEYS_CACHED)
def source_key(address: str | None) -> str:
    """The per-source key of a peer address ("" when unknown); remembered, as parsing an address costs
    more than the rest of a request's login check."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)
