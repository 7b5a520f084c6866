"""Brute force and enumeration: failed logins are limited per source address, an unknown user costs
the scrypt of a known one, passwords are hashed at today's recommended cost (older hashes still
verify), checks and hashing leave the event loop free and a checked password is remembered, and a
token cannot mint a token that outlives it."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from pathlib import Path

from security_helpers import ADMIN, add_user, call, eventually_status, harness_assertion, loop_lag, peak_rss

from api.login_throttle import LOGIN_FAILURES, MAX_CHECKS_IN_FLIGHT
from api.password_checker import PASSWORD_CHECKS_AT_ONCE
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, NodeProcess, ProcessCluster
from cluster.security.peer_auth import NODE_AUTH_HEADER, body_digest
from cluster.security.users import hash_password, verify_password
from quorumq.auth import basic_header

WRONG = basic_header(HARNESS_USER, "not-the-password")
RIGHT = basic_header(HARNESS_USER, HARNESS_PASSWORD)


async def test_failed_logins_are_limited_per_source_address(secured: ProcessCluster) -> None:
    url = secured.urls[2] + "/api/whoami"
    attacker, bystander = "127.0.0.21", "127.0.0.22"
    for _ in range(LOGIN_FAILURES):
        assert (await call("GET", url, authorization=WRONG, source=attacker)).status == 401
    throttled = await call("GET", url, authorization=WRONG, source=attacker)
    assert throttled.status == 429, throttled.body
    assert throttled.body["error"] == "too_many_requests"
    assert int(throttled.headers["Retry-After"]) >= 1
    assert (await call("GET", url, authorization=RIGHT, source=attacker)).status == 429  # no check at all
    assert (await call("GET", url, authorization=RIGHT, source=bystander)).status == 200
    assert (await call("GET", url, authorization=WRONG, source=bystander)).status == 401


async def _failure_seconds(url: str, authorization: str, source: str) -> float:
    """The quickest of three failed logins."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        assert (await call("GET", url, authorization=authorization, source=source)).status == 401
        times.append(time.perf_counter() - started)
    return min(times)


async def test_an_unknown_user_costs_the_same_password_check_as_a_known_one(secured: ProcessCluster) -> None:
    url = secured.urls[1] + "/api/whoami"
    known = await _failure_seconds(url, WRONG, "127.0.0.31")
    unknown = await _failure_seconds(url, basic_header("no-such-user", "guess"), "127.0.0.32")
    assert unknown >= known / 2, (unknown, known)


OLD_HASH = (  # "old-password" as stored before the cost was raised (scrypt N=2^14, r=8, p=1)
    "scrypt$16384$8$1$AAECAwQFBgcICQoLDA0ODw==$LIrDORZeezT+LPJy54dTNZZCGKf3xaCj75Ex9K1MjF0="
)


def test_passwords_are_hashed_at_the_recommended_cost_and_older_hashes_still_verify() -> None:
    encoded = hash_password("s3cret")
    scheme, n, r, p, _, _ = encoded.split("$")
    assert (scheme, int(n), int(r), int(p)) == ("scrypt", 2**17, 8, 1)
    assert verify_password("s3cret", encoded) and not verify_password("s3cre", encoded)
    assert verify_password("old-password", OLD_HASH) and not verify_password("new-password", OLD_HASH)


async def test_a_token_cannot_mint_a_token_that_outlives_it(secured: ProcessCluster) -> None:
    base = secured.urls[0]
    await add_user(secured.urls, "minter", "m1nt", {"configure": "", "write": "", "read": ""})
    password = basic_header("minter", "m1nt")
    first = await call("POST", base + "/api/tokens", authorization=password, json={"ttl_s": 60})
    assert first.status == 201, first.body
    bearer = "Bearer " + first.body["token"]
    second = await call("POST", base + "/api/tokens", authorization=bearer, json={"ttl_s": 3600})
    assert second.status == 201, second.body
    assert second.body["expires_ms"] <= first.body["expires_ms"]
    shorter = await call("POST", base + "/api/tokens", authorization=bearer, json={"ttl_s": 5})
    assert shorter.body["expires_ms"] < first.body["expires_ms"]
    renewed = await call("GET", base + "/api/whoami", authorization="Bearer " + second.body["token"])
    assert renewed.status == 200 and renewed.body["name"] == "minter"
    longer = await call("POST", base + "/api/tokens", authorization=password, json={"ttl_s": 3600})
    assert longer.body["expires_ms"] > first.body["expires_ms"]  # a password still gets what it asks
    beyond = await call("POST", base + "/api/tokens", authorization=password, json={"ttl_s": 7 * 86400 + 1})
    assert beyond.status == 400, beyond.body  # a token lives at most 7 days
    assert (await call("GET", base + "/api/whoami", authorization=ADMIN)).status == 200


async def test_parallel_guesses_are_limited_and_do_not_starve_other_logins(secured: ProcessCluster) -> None:
    url = secured.urls[0] + "/api/whoami"
    await call("PUT", secured.urls[0] + "/api/users/bystander", authorization=ADMIN, json={"password": "b1"})
    await eventually_status(secured.urls[0] + "/api/users/bystander", ADMIN, 200)  # known, never checked
    finished: list[str] = []

    async def guess(n: int) -> int:  # distinct guesses: the same one sent at once is checked once
        wrong = basic_header(HARNESS_USER, f"guess-{n}")
        status = (await call("GET", url, authorization=wrong, source="127.0.0.41")).status
        finished.append(f"guess {status}")
        return status

    async def login() -> int:
        status = (await call("GET", url, authorization=basic_header("bystander", "b1"))).status
        finished.append("login")
        return status

    guesses = [asyncio.create_task(guess(n)) for n in range(40)]
    assert await login() == 200
    statuses = await asyncio.gather(*guesses)
    assert set(statuses) <= {401, 429}, statuses
    assert statuses.count(401) <= LOGIN_FAILURES, statuses  # the rest were answered without a check
    checked_first = finished[: finished.index("login")].count("guess 401")
    assert checked_first <= MAX_CHECKS_IN_FLIGHT, finished  # the login queued behind few guesses


async def test_many_logins_of_one_client_at_once_share_one_check_and_are_all_let_in(
    secured: ProcessCluster,
) -> None:
    """Found by CI (test_200_queues_on_3_nodes...): a client opening many requests at once with the same,
    right, password was refused 429 as if it were guessing in parallel."""
    url = secured.urls[1] + "/api/whoami"
    await call("PUT", secured.urls[0] + "/api/users/busy", authorization=ADMIN, json={"password": "b2"})
    await eventually_status(secured.urls[1] + "/api/users/busy", ADMIN, 200)  # known there, never checked
    answers = await asyncio.gather(
        *(call("GET", url, authorization=basic_header("busy", "b2"), source="127.0.0.42") for _ in range(30))
    )
    assert [a.status for a in answers] == [200] * 30, [a.body for a in answers if a.status != 200]


def _malformed(node: str) -> list[dict[str, str]]:
    """Credentials refused for their form or their signature, never for a password: their headers."""
    forged = harness_assertion(
        "@node", "GET", "/api/whoami", body_digest(b""), to=node, secret="not-the-cluster-secret"
    )
    replayed = harness_assertion("@node", "GET", "/api/queues", body_digest(b""), to=node)
    return [
        {"Authorization": "Basic %%%not-base64"},
        {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()},
        {"Authorization": "Bearer qq1.forged.token"},
        {"Authorization": "Bearer "},
        {NODE_AUTH_HEADER: forged},
        {NODE_AUTH_HEADER: replayed},  # genuine, but made for another path
    ]


def _cpu_seconds(node: NodeProcess) -> float:
    """The CPU time the node process (all its threads) has used."""
    assert node.process is not None
    fields = Path(f"/proc/{node.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_malformed_headers_tokens_and_assertions_are_not_counted_as_failed_logins(
    secured: ProcessCluster,
) -> None:
    url, source = secured.urls[2] + "/api/whoami", "127.0.0.43"
    malformed = _malformed("node3")
    for _ in range(2 * LOGIN_FAILURES):
        for headers in malformed:
            answer = await call("GET", url, headers=headers, source=source)
            assert answer.status == 401, (headers, answer.status, answer.body)
    assert (await call("GET", url, authorization=RIGHT, source=source)).status == 200
    for _ in range(LOGIN_FAILURES):  # all of its failures are still to come
        assert (await call("GET", url, authorization=WRONG, source=source)).status == 401
    assert (await call("GET", url, authorization=WRONG, source=source)).status == 429


async def test_a_node_runs_at_most_two_password_checks_at_once(secured: ProcessCluster) -> None:
    """Seen in the node's peak memory: each check holds scrypt's 128 MiB (r=8, N=2^17) while it runs;
    16 checks at once from 8 sources (each within its own limit of 2 in progress) must queue for the
    node's slots."""
    scrypt_bytes = 128 * 8 * 2**17
    node = secured.nodes[1]
    before = peak_rss(node)
    guesses = [
        call(
            "GET",
            node.url + "/api/whoami",
            authorization=basic_header(HARNESS_USER, f"cap-{s}-{n}"),
            source=f"127.0.0.{70 + s}",
        )
        for s in range(8)
        for n in range(MAX_CHECKS_IN_FLIGHT)
    ]
    statuses = [answer.status for answer in await asyncio.gather(*guesses)]
    assert statuses == [401] * len(guesses), statuses
    grown = peak_rss(node) - before
    assert grown < (PASSWORD_CHECKS_AT_ONCE + 1) * scrypt_bytes, grown / 2**20


async def test_malformed_headers_tokens_and_assertions_cost_no_password_check(
    secured: ProcessCluster,
) -> None:
    """Seen in the node's CPU time: a password check costs scrypt's (r=8, N=2^17); refusing each malformed
    credential, 3 times over, must cost less than a third of 3 wrong passwords."""
    node = secured.nodes[2]
    url = node.url + "/api/whoami"
    before = _cpu_seconds(node)
    for n in range(3):
        wrong = basic_header(HARNESS_USER, f"cost-{n}")
        assert (await call("GET", url, authorization=wrong, source="127.0.0.44")).status == 401
    checked = _cpu_seconds(node) - before
    before = _cpu_seconds(node)
    for _ in range(3):
        for headers in _malformed(node.name):
            assert (await call("GET", url, headers=headers, source="127.0.0.45")).status == 401
    refused = _cpu_seconds(node) - before
    assert refused < checked / 3, (refused, checked)


async def test_a_password_checked_once_is_remembered_and_costs_no_further_check(
    secured: ProcessCluster,
) -> None:
    """Seen in the node's CPU time: after one check of a user's password, ten more requests with it cost
    less than a third of three wrong passwords; a changed password is checked again, the old one is 401."""
    node = secured.nodes[0]
    url = node.url + "/api/whoami"
    await add_user([node.url], "remembered", "first-pw", {})  # its password checked here once
    before = _cpu_seconds(node)
    for n in range(3):
        wrong = basic_header("remembered", f"wrong-{n}")
        assert (await call("GET", url, authorization=wrong, source="127.0.0.46")).status == 401
    checked = _cpu_seconds(node) - before
    right = basic_header("remembered", "first-pw")
    before = _cpu_seconds(node)
    for _ in range(10):
        assert (await call("GET", url, authorization=right, source="127.0.0.47")).status == 200
    remembered = _cpu_seconds(node) - before
    assert remembered < checked / 3, (remembered, checked)
    changed = await call(
        "PUT", node.url + "/api/users/remembered", authorization=ADMIN, json={"password": "new-pw"}
    )
    assert changed.status == 204, changed.body
    await eventually_status(url, right, 401)
    assert (await call("GET", url, authorization=basic_header("remembered", "new-pw"))).status == 200


async def test_password_checks_and_hashing_run_while_the_event_loop_answers_other_requests(
    secured: ProcessCluster,
) -> None:
    """Six wrong passwords checked (two at a time) and two new passwords hashed, while `/api/health` is
    asked again and again: no answer waits half as long as one scrypt takes on this machine, as every
    one would behind a check or a hash made on the event loop."""
    started = time.perf_counter()
    hash_password("one check")  # scrypt at the nodes' cost
    one_scrypt_s = time.perf_counter() - started
    node = secured.nodes[2]
    guesses = [
        call(
            "GET",
            node.url + "/api/whoami",
            authorization=basic_header(HARNESS_USER, f"lag-{s}-{n}"),
            source=f"127.0.0.{90 + s}",
        )
        for s in range(3)
        for n in range(MAX_CHECKS_IN_FLIGHT)
    ]
    new_passwords = [
        call("PUT", f"{node.url}/api/users/lag-{n}", authorization=ADMIN, json={"password": f"lag-pw-{n}"})
        for n in range(2)
    ]
    async with loop_lag(node.url) as worst:
        statuses = [answer.status for answer in await asyncio.gather(*guesses, *new_passwords)]
    assert statuses == [401] * len(guesses) + [201] * len(new_passwords), statuses
    assert worst[0] < one_scrypt_s / 2, (worst[0], one_scrypt_s)
