"""Per-source limits count an IPv4 address alone and an IPv6 address with its /64."""

from __future__ import annotations

from cluster.security.source_address import source_key


def test_sources_are_addresses_or_ipv6_networks() -> None:
    assert source_key("192.0.2.7") == "192.0.2.7"
    assert source_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert source_key("2001:db8:1:2:aaaa::1") == source_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert source_key("2001:db8:1:3::1") != source_key("2001:db8:1:2::1")
    assert source_key(None) == "" and source_key("not-an-address") == "not-an-address"
