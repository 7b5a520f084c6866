"""Network faults inside the hosts' namespaces: iptables packet drops (partitions), slow lossy links.

A partition is a *grudge*: for each node, the set of nodes whose packets it drops. Only packets from
peer nodes are dropped, never those from the test clients in the root namespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from jepsen_tests.hosts import CommandFailed, Host, NetnsHosts

Grudge = Mapping[str, Set[str]]


def apply_grudge(hosts: NetnsHosts, grudge: Grudge) -> None:
    """Make each node drop every packet coming from the nodes its grudge names."""
    for name, dropped in grudge.items():
        host = hosts.host(name)
        for peer in sorted(dropped):
            host.run("iptables", "-A", "INPUT", "-s", hosts.host(peer).address, "-j", "DROP")


def heal_partitions(hosts: NetnsHosts) -> None:
    """Remove every drop rule in every namespace."""
    for host in hosts.hosts:
        host.run("iptables", "-F", "INPUT")


def dropped_peers(hosts: NetnsHosts, host: Host) -> set[str]:
    """The nodes whose packets `host` drops now (read back from its iptables rules)."""
    rules = host.run("iptables", "-S", "INPUT").stdout.splitlines()
    by_address = {h.address: h.name for h in hosts.hosts}
    return {
        by_address[rule.split()[3].split("/")[0]]
        for rule in rules
        if rule.startswith("-A INPUT -s") and rule.endswith("-j DROP")
    }


def degrade_link(host: Host, delay_ms: int, jitter_ms: int, loss_percent: float) -> str:
    """Slow down and randomly drop the packets `host` sends; returns how it was done.

    Uses tc netem when the kernel has it. Kernels without sch_netem (e.g. this project's Firecracker
    VMs) get the nearest thing: a tbf rate limit whose queue delays packets under load by up to
    `delay_ms`, and an iptables `statistic` rule dropping `loss_percent` of the outgoing packets."""
    netem = host.run(
        "tc", "qdisc", "replace", "dev", "eth0", "root", "netem",
        "delay", f"{delay_ms}ms", f"{jitter_ms}ms", "loss", f"{loss_percent}%",
        check=False,
    )  # fmt: skip
    if netem.returncode == 0:
        return f"netem delay {delay_ms}±{jitter_ms} ms, loss {loss_percent}%"
    if "unknown" not in netem.stderr:
        raise CommandFailed(f"tc netem on {host.name}: {netem.stderr.strip()}")
    rate_kbit = max(64, 100_000 // max(delay_ms, 1))
    host.run(
        "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
        "rate", f"{rate_kbit}kbit", "burst", "16kbit", "latency", f"{delay_ms}ms",
    )  # fmt: skip
    if loss_percent:
        probability = f"{loss_percent / 100:.3f}"
        host.run(
            "iptables",
            "-A",
            "OUTPUT",
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            probability,
            "-j",
            "DROP",
        )
    return f"tbf {rate_kbit} kbit (queue ≤ {delay_ms} ms), loss {loss_percent}% (no sch_netem in this kernel)"


def restore_link(host: Host) -> None:
    """Remove `host`'s qdisc and outgoing-loss rules (nothing happens when there are none)."""
    host.run("tc", "qdisc", "del", "dev", "eth0", "root", check=False)
    host.run("iptables", "-F", "OUTPUT")
