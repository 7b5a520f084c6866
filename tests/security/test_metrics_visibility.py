"""W14: `/metrics` shows a queue's series (its name, depth, counters, Raft group) only to those who may
see the queue: administrators and users tagged `monitoring` (the scrape credential) see every queue, other
users the queues they hold a permission on (as `GET /api/queues` lists them). With `metrics_public` it
answers everyone everything, as documented. Real nodes, real users."""

from __future__ import annotations

import asyncio
from pathlib import Path

from security_helpers import ADMIN, NO_GUEST, add_user, call, eventually_status

from cli.node_processes import ProcessCluster
from quorumq.auth import basic_header

MINE, SECRET = "w14-mine", "w14-secret"
PLAIN = basic_header("w14-plain", "w14-plain-pw")
SCRAPER = basic_header("w14-scraper", "w14-scraper-pw")


async def _queues_with_a_message(urls: list[str], *queues: str) -> None:
    for queue in queues:
        declared = await call("PUT", f"{urls[0]}/api/queues/{queue}", authorization=ADMIN, json={})
        assert declared.status in (201, 204), declared.body
        published = await call(
            "POST",
            f"{urls[0]}/api/queues/{queue}/messages",
            authorization=ADMIN,
            json={"messages": [{"body": "m"}]},
        )
        assert published.status == 201, published.body


async def _scraped(urls: list[str], authorization: str | None) -> str:
    """The /metrics of every node, one after the other."""
    answers = [await call("GET", f"{url}/metrics", authorization=authorization) for url in urls]
    assert {answer.status for answer in answers} == {200}, [answer.body for answer in answers]
    return "\n".join(answer.body for answer in answers)


async def test_w14_metrics_show_a_user_only_the_queues_it_may_see(secured: ProcessCluster) -> None:
    urls = secured.urls
    await add_user(urls, "w14-plain", "w14-plain-pw", {"read": f"^{MINE}$"})
    await _queues_with_a_message(urls, MINE, SECRET)
    plain = await _scraped(urls, PLAIN)
    assert f'rabbitmq_detailed_queue_messages_ready{{queue="{MINE}"}} 1.0' in plain.splitlines()
    assert f'rabbitmq_detailed_queue_messages_published_total{{queue="{MINE}"}} 1.0' in plain.splitlines()
    assert SECRET not in plain  # no series names it: depth, counters, Raft groups
    assert "process_resident_memory_bytes" in plain  # the node's own series stay
    assert SECRET in await _scraped(urls, ADMIN)


async def test_w14_a_user_tagged_monitoring_scrapes_every_queue_without_any_permission(
    secured: ProcessCluster,
) -> None:
    urls = secured.urls
    created = await call(
        "PUT",
        f"{urls[0]}/api/users/w14-scraper",
        authorization=ADMIN,
        json={"password": "w14-scraper-pw", "tags": ["monitoring"]},
    )
    assert created.status == 201, created.body
    for url in urls:
        await eventually_status(url + "/api/whoami", SCRAPER, 200)
    await _queues_with_a_message(urls, "w14-scraped")
    scraped = await _scraped(urls, SCRAPER)
    assert 'rabbitmq_detailed_queue_messages_ready{queue="w14-scraped"} 1.0' in scraped.splitlines()
    peek = await call("GET", f"{urls[0]}/api/queues/w14-scraped/messages", authorization=SCRAPER)
    assert peek.status == 403  # it reads figures, never messages


def test_metrics_public_answers_every_queue_without_credentials(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path, 1, env={**NO_GUEST, "QUORUMQ_METRICS_PUBLIC": "true"})
    try:
        asyncio.run(_queues_with_a_message(cluster.urls, "w14-public"))
        scraped = asyncio.run(_scraped(cluster.urls, None))
        assert 'rabbitmq_detailed_queue_messages_ready{queue="w14-public"} 1.0' in scraped.splitlines()
    finally:
        cluster.stop()
