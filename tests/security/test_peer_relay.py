"""W1 of issue 38, played as the attacker: a process without the cluster secret sits on an address the
nodes dial (a stopped member's Raft address), takes a challenge from one node, hands it to the node that
dialled it, and passes that node's hello back. The handshake binds both names and both nonces, so the
node challenged refuses the hello (it was made for the member the dialler believed it dialled); and with
`tls_raft`, a relay that holds a certificate of the cluster's CA (but not the secret) and terminates TLS
on both sides is refused by the channel binding. Nor can an administrator (who has no secret) join a
node at such an address: `POST /api/nodes` takes only a node's own assertion."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import ssl
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
import pytest
from security_helpers import ADMIN, NO_GUEST, call, harness_assertion
from support.eventually import eventually

from cli.dev_tls import make_certificates
from cli.node_processes import HARNESS_SECRET, NodeProcess, ProcessCluster, free_ports
from cluster.config import Address
from cluster.replication.transport import FRAME_HEADER, KIND_RAFT, Transport
from cluster.security.peer_auth import NODE_AUTH_HEADER, body_digest

RELAY_DEADLINE_S = 60.0


async def _frame(reader: asyncio.StreamReader) -> bytes:
    """One whole frame, header included, as it came."""
    header = await reader.readexactly(FRAME_HEADER.size)
    return header + await reader.readexactly(FRAME_HEADER.unpack(header)[0])


@dataclass
class Relay:
    """The attacker: on each connection a node dials, it fetches a challenge from one of `targets` (at
    random: it learns who dials only from the hello, and taking them in turn could keep in step with
    the diallers), hands it to the dialler and passes the dialler's hello back to that target."""

    targets: list[tuple[str, Address]]
    connect_tls: ssl.SSLContext | None = None
    attempts: list[tuple[str, str, bool]] = field(default_factory=list)  # (dialler, target, welcomed)
    relayed: asyncio.Event = field(default_factory=asyncio.Event)

    async def serve(self, dialler: asyncio.StreamReader, back: asyncio.StreamWriter) -> None:
        name, address = random.choice(self.targets)
        try:
            reader, writer = await asyncio.open_connection(address.host, address.port, ssl=self.connect_tls)
        except OSError:
            back.close()
            return
        try:
            back.write(await _frame(reader))  # the target's challenge, handed to the dialler
            await back.drain()
            hello = await _frame(dialler)
            dialler_name = msgpack.unpackb(hello[FRAME_HEADER.size :], raw=False)[1]
            if dialler_name == name:
                return  # the target would refuse its own name anyway: try the next dial
            writer.write(hello)
            await writer.drain()
            try:
                answer = await asyncio.wait_for(_frame(reader), 10)
                welcomed = msgpack.unpackb(answer[FRAME_HEADER.size :], raw=False)[0] == "welcome"
            except (asyncio.IncompleteReadError, ConnectionError):
                welcomed = False
            self.attempts.append((dialler_name, name, welcomed))
            self.relayed.set()
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass
        finally:
            writer.close()
            back.close()

    async def until_attempts(self, count: int) -> None:
        """Wait (up to RELAY_DEADLINE_S) until `count` hellos were passed on to a node other than their
        dialler."""
        async with asyncio.timeout(RELAY_DEADLINE_S):
            while len(self.attempts) < count:
                self.relayed.clear()
                await self.relayed.wait()


async def _listen_on(address: Address, relay: Relay, tls: ssl.SSLContext | None = None) -> asyncio.Server:
    """Take over `address` (a stopped node's port is free a moment after it exits)."""
    return await eventually(
        lambda: asyncio.start_server(relay.serve, address.host, address.port, reuse_address=True, ssl=tls),
        f"{address} to be free",
        timeout=RELAY_DEADLINE_S,
        interval=0.05,
    )


def _raft(node: NodeProcess) -> Address:
    return Address(node.host, node.raft_port)


async def test_w1_a_relay_without_the_secret_is_refused(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path, 3, env=NO_GUEST)
    try:
        node1, node2, node3 = cluster.nodes
        node3.stop()  # its address stays in every node's member list: the attacker takes it over
        relay = Relay([(node1.name, _raft(node1)), (node2.name, _raft(node2))])
        server = await _listen_on(_raft(node3), relay)
        try:
            await relay.until_attempts(4)
        finally:
            server.close()
        assert not any(welcomed for _, _, welcomed in relay.attempts), relay.attempts
        assert (await call("GET", node1.url + "/api/health")).status == 200
    finally:
        cluster.stop()


async def test_w1_an_administrator_cannot_join_a_node(secured: ProcessCluster) -> None:
    body = {"name": "node9", "http": "http://127.0.0.1:1", "raft": "127.0.0.1:2"}
    for url in secured.urls:  # the metadata leader, and the followers that would forward it
        answer = await call("POST", url + "/api/nodes", authorization=ADMIN, json=body)
        assert answer.status == 403, answer.body
    nodes = await call("GET", secured.urls[0] + "/api/nodes", authorization=ADMIN)
    assert sorted(n["name"] for n in nodes.body) == ["node1", "node2", "node3"]


async def test_w1_a_node_assertion_of_another_user_cannot_join_a_node(secured: ProcessCluster) -> None:
    """Only the nodes' own assertion (`@node`) joins: not one vouching for a user, even an
    administrator (as a follower forwarding an administrator's request would make)."""
    data = json.dumps({"name": "node9", "http": "http://127.0.0.1:1", "raft": "127.0.0.1:2"}).encode()
    for url, node in zip(secured.urls, secured.nodes, strict=True):
        digest = body_digest(data)
        vouched = harness_assertion("quorumq-harness", "POST", "/api/nodes", digest, to=node.name)
        headers = {NODE_AUTH_HEADER: vouched, "Content-Type": "application/json"}
        answer = await call("POST", url + "/api/nodes", data=data, headers=headers)
        assert answer.status == 403, (node.name, answer.body)


def _tls_contexts(env: dict[str, str]) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts for the Raft port, as `cluster.security.tls.raft_contexts` makes them."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=env["QUORUMQ_TLS_CA"])
    server.load_cert_chain(env["QUORUMQ_TLS_CERT"], env["QUORUMQ_TLS_KEY"])
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=env["QUORUMQ_TLS_CA"])
    client.check_hostname = False
    client.load_cert_chain(env["QUORUMQ_TLS_CERT"], env["QUORUMQ_TLS_KEY"])
    return server, client


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_w1_a_relay_holding_a_cluster_certificate_is_refused_by_channel_binding(tmp_path: Path) -> None:
    """The relay sits where `a` dials `b` (so `a`'s hello names `b` rightly), holds a certificate of the
    cluster's CA, and terminates TLS on both sides: only the channel binding tells `b` that the hello was
    proved over another TLS connection."""
    tls = _tls_contexts(make_certificates(tmp_path))
    port_a, port_b, port_relay = free_ports(3)
    a = Transport("a", Address("127.0.0.1", port_a), HARNESS_SECRET, lambda *_: None, tls=tls)
    delivered: list[tuple[str, int, bytes]] = []
    b = Transport("b", Address("127.0.0.1", port_b), HARNESS_SECRET, lambda *f: delivered.append(f), tls=tls)
    relay = Relay([("b", b.listen)], connect_tls=tls[1])
    await a.start()
    await b.start()
    server = await _listen_on(Address("127.0.0.1", port_relay), relay, tls=tls[0])
    try:
        b.set_peer("a", a.listen)
        a.set_peer("b", Address("127.0.0.1", port_relay))
        await relay.until_attempts(2)
        assert not any(welcomed for _, _, welcomed in relay.attempts), relay.attempts
        a.set_peer("b", b.listen)  # the genuine address: the two link over TLS as before

        def sent_until_delivered() -> bool:
            a.send("b", "g1", KIND_RAFT, b"genuine")  # until the link is up, a frame is dropped
            return bool(delivered)

        await eventually(sent_until_delivered, "a frame delivered", timeout=RELAY_DEADLINE_S, interval=0.05)
        assert delivered[0] == ("a", KIND_RAFT, b"genuine")
    finally:
        server.close()
        await a.stop()
        await b.stop()
