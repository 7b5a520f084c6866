"""Test hosts: one network namespace per node on a private bridge, created and removed by the suite.

Loopback aliases cannot be partitioned (the kernel picks 127.0.0.1 as the source), so each node gets
its own namespace with a veth into a bridge in the root namespace, on a subnet 10.99.K.0/24 whose slot
K is the first free bridge name. The root namespace keeps 10.99.K.1, so the test clients reach every
node, as clients on both sides of a real partition would. When br_netfilter sends bridged frames
through the root namespace's FORWARD chain (Docker sets its policy to DROP), one ACCEPT rule for the
bridge lets the nodes talk; it is removed with everything else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self

SUBNET_PREFIX = "10.99"
NAME_PREFIX = "qqj"
MAX_SLOTS = 250
COMMAND_TIMEOUT_S = 10.0


class HostsUnavailable(RuntimeError):
    """This machine cannot host the suite (not root, or no `ip netns`, iptables or tc)."""


class CommandFailed(RuntimeError):
    """A host command (ip, iptables, tc) exited non-zero."""


def run_command(command: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a short host command, raising CommandFailed (with its stderr) when `check` and it fails."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    if check and done.returncode != 0:
        raise CommandFailed(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def unavailable_reason() -> str | None:
    """Why network namespaces cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "the fault suite needs root (network namespaces, iptables, tc); run it as root"
    for tool in ("ip", "iptables", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install iproute2 iptables)"
    probe = f"{NAME_PREFIX}probe{os.getpid()}"
    added = run_command(["ip", "netns", "add", probe], check=False)
    if added.returncode != 0:
        return f"`ip netns add` is not permitted here: {added.stderr.strip()}"
    try:
        iptables = run_command(["ip", "netns", "exec", probe, "iptables", "-S", "INPUT"], check=False)
        if iptables.returncode != 0:
            return f"iptables does not work inside a network namespace: {iptables.stderr.strip()}"
    finally:
        run_command(["ip", "netns", "del", probe], check=False)
    return None


@dataclass(frozen=True)
class Host:
    """One node's host: its namespace, address and the root-side end of its veth."""

    name: str
    namespace: str
    address: str
    veth: str

    def exec_prefix(self) -> list[str]:
        """The prefix that runs a command inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace]

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a host command inside this host's namespace."""
        return run_command([*self.exec_prefix(), *command], check=check)


class NetnsHosts:
    """`count` hosts named node1..nodeN; use as a context manager so they are removed even on errors."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.bridge: str | None = None
        self.gateway: str | None = None
        self.hosts: list[Host] = []
        self._forward_rule: list[str] | None = None

    def __enter__(self) -> Self:
        self.create()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.destroy()

    def host(self, name: str) -> Host:
        """A host by node name."""
        return next(h for h in self.hosts if h.name == name)

    def create(self) -> None:
        """Make the bridge, the namespaces and their links; on any failure remove what was made."""
        reason = unavailable_reason()
        if reason:
            raise HostsUnavailable(reason)
        try:
            slot = self._claim_bridge()
            subnet = f"{SUBNET_PREFIX}.{slot}"
            self.gateway = f"{subnet}.1"
            assert self.bridge is not None
            run_command(["ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge])
            run_command(["ip", "link", "set", self.bridge, "up"])
            self._allow_bridged_forwarding()
            for index in range(1, self.count + 1):
                host = Host(
                    f"node{index}",
                    f"{self.bridge}n{index}",
                    f"{subnet}.{10 + index}",
                    f"{self.bridge}v{index}",
                )
                self.hosts.append(host)  # listed first, so that destroy() removes a half-made one
                self._wire(host)
        except BaseException:
            self.destroy()
            raise

    def destroy(self) -> None:
        """Remove namespaces (their veths go with them), the bridge and the FORWARD rule; idempotent."""
        for host in self.hosts:
            run_command(["ip", "netns", "del", host.namespace], check=False)
            run_command(["ip", "link", "del", host.veth], check=False)
        self.hosts = []
        if self._forward_rule is not None:
            run_command(["iptables", "-D", *self._forward_rule], check=False)
            self._forward_rule = None
        if self.bridge is not None:
            run_command(["ip", "link", "del", self.bridge], check=False)
            self.bridge = None

    def _claim_bridge(self) -> int:
        """Create the first free bridge qqjK; K is also this run's subnet slot (concurrent runs differ)."""
        for slot in range(1, MAX_SLOTS):
            name = f"{NAME_PREFIX}{slot}"
            if run_command(["ip", "link", "add", name, "type", "bridge"], check=False).returncode == 0:
                self.bridge = name
                return slot
        raise HostsUnavailable(f"no free bridge name {NAME_PREFIX}1..{NAME_PREFIX}{MAX_SLOTS - 1}")

    def _allow_bridged_forwarding(self) -> None:
        assert self.bridge is not None
        rule = ["FORWARD", "-i", self.bridge, "-o", self.bridge, "-j", "ACCEPT"]
        run_command(["iptables", "-I", *rule])
        self._forward_rule = rule

    def _wire(self, host: Host) -> None:
        assert self.bridge is not None
        run_command(["ip", "netns", "add", host.namespace])
        run_command(
            ["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace]
        )
        run_command(["ip", "link", "set", host.veth, "master", self.bridge, "up"])
        host.run("ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
        host.run("ip", "link", "set", "eth0", "up")
        host.run("ip", "link", "set", "lo", "up")
