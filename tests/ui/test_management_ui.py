"""The management UI in a real browser (Debian's chromium, headless, driven by its chromedriver through
selenium) against a real 3-node cluster: log in, see the nodes, declare a queue, publish, watch the
counts and the publish rate move, get, peek, purge, move the leader, declare, bind, publish through and
delete an exchange, the other pages, an error shown where it happened. Each page's screenshot is saved
under docs/screenshots/ (linked from the README)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_harness import chromium, click, until
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.expected_conditions import alert_is_present, staleness_of
from selenium.webdriver.support.ui import Select

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster
from quorumq import SyncClient, UnauthorizedError

SCREENSHOTS = Path(__file__).parents[2] / "docs" / "screenshots"
UI_TOKEN_S = 8 * 3600
"""The longest the UI's token lasts (docs/operate/security.md)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    running = ProcessCluster.start(tmp_path_factory.mktemp("ui"), count=3)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = chromium()
    yield driver
    driver.quit()


def text_of(driver: WebDriver, element_id: str) -> str:
    found = driver.find_elements(By.ID, element_id)
    return found[0].text if found else ""


def stat(driver: WebDriver, element_id: str) -> str:
    """The value of a stat card."""
    return text_of(driver, element_id).split("\n")[0]


def fill(driver: WebDriver, form_id: str, **values: str | bool) -> None:
    """Fill form `form_id` (a checkbox takes a bool) and submit it."""
    form = driver.find_element(By.ID, form_id)
    for name, value in values.items():
        field = form.find_element(By.NAME, name)
        if isinstance(value, bool):
            if field.is_selected() != value:
                field.click()
        elif field.tag_name == "select":
            Select(field).select_by_value(value)
        else:
            field.clear()
            field.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def screenshot(driver: WebDriver, page: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.execute_script("window.scrollTo(0, 0)")
    assert driver.save_screenshot(str(SCREENSHOTS / f"{page}.png")), page


def go(driver: WebDriver, cluster: ProcessCluster, page: str) -> None:
    driver.get(f"{cluster.urls[0]}/#/{page}")


def test_the_ui_logs_in_declares_publishes_and_shows_the_counts_and_rates_move(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    browser.get(cluster.urls[0] + "/")
    until(browser, lambda d: d.find_elements(By.ID, "login"), "the login form")
    fill(browser, "login", user="guest", password="wrong")
    until(
        browser,
        lambda d: "wrong" in text_of(d, "error") or "credentials" in text_of(d, "error"),
        "a login error",
    )
    fill(browser, "login", user="guest", password="guest")
    until(
        browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#nodes-table tbody tr")) == 3, "three nodes"
    )
    assert {
        row.text.split()[0] for row in browser.find_elements(By.CSS_SELECTOR, "#nodes-table tbody tr")
    } == {
        "node1",
        "node2",
        "node3",
    }

    go(browser, cluster, "queues")
    until(browser, lambda d: d.find_elements(By.ID, "declare-form"), "the declare form")
    fill(browser, "declare-form", name="ui-orders", arguments='{"x-max-length": 5000}')
    until(browser, lambda d: "ui-orders" in text_of(d, "queues-table"), "the declared queue in the table")
    fill(browser, "declare-form", name="ui-broken", arguments='{"x-no-such-argument": 1}')
    until(browser, lambda d: "x-no-such-argument" in text_of(d, "error"), "the refusal of a bad argument")

    browser.find_element(By.LINK_TEXT, "ui-orders").click()
    until(browser, lambda d: d.find_elements(By.ID, "publish-form"), "the queue page")
    fill(browser, "publish-form", body="hello from the UI", count="40")
    until(browser, lambda d: stat(d, "queue-ready") == "40", "40 ready messages")
    assert "published 40" in text_of(browser, "queue-result")

    go(browser, cluster, "overview")
    until(browser, lambda d: float(stat(d, "rate-publish") or 0) > 0, "a publish rate above 0")
    assert int(stat(browser, "total-ready")) >= 40
    screenshot(browser, "overview")

    go(browser, cluster, "queues")
    until(browser, lambda d: "ui-orders" in text_of(d, "queues-table"), "the queue list")
    screenshot(browser, "queues")


def test_the_queue_page_gets_peeks_purges_and_moves_the_leader(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    go(browser, cluster, "queue/ui-orders")
    until(browser, lambda d: stat(d, "queue-ready") == "40", "the queue's page")
    fill(browser, "get-form", count="2", ack="auto")
    until(
        browser, lambda d: text_of(d, "deliveries-table").count("hello from the UI") == 2, "two messages got"
    )
    fill(browser, "peek-form", position="1")
    until(
        browser,
        lambda d: text_of(d, "deliveries-table").count("hello from the UI") == 1,
        "the peeked message",
    )
    before = stat(browser, "queue-leader")
    target = (
        Select(browser.find_element(By.CSS_SELECTOR, "#move-leader select")).options[0].get_attribute("value")
    )
    assert target != before
    fill(browser, "move-leader", node=target)
    until(browser, lambda d: stat(d, "queue-leader") == target, f"the leader moved to {target}")
    click(browser, lambda d: d.find_element(By.ID, "purge"), "the purge button")
    until(browser, alert_is_present(), "the question").accept()
    until(browser, lambda d: stat(d, "queue-ready") == "0", "a purged queue")
    screenshot(browser, "queue")


def test_the_other_pages_show_nodes_users_policies_and_dead_letters(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    go(browser, cluster, "queues")
    until(browser, lambda d: d.find_elements(By.ID, "declare-form"), "the declare form")
    fill(browser, "declare-form", name="ui-orders.dlq", arguments="")
    until(browser, lambda d: "ui-orders.dlq" in text_of(d, "queues-table"), "the dead-letter queue")
    dead_letters_after_1_ms = '{"x-dead-letter-queue": "ui-orders.dlq", "x-message-ttl": 1}'
    fill(browser, "declare-form", name="ui-payments", arguments=dead_letters_after_1_ms)
    until(browser, lambda d: "ui-payments" in text_of(d, "queues-table"), "the source queue")
    browser.find_element(By.LINK_TEXT, "ui-payments").click()
    until(browser, lambda d: d.find_elements(By.ID, "publish-form"), "the source queue's page")
    fill(browser, "publish-form", body="a payment nobody took in time", count="3")
    until(browser, lambda d: "published 3" in text_of(d, "queue-result"), "the publish confirmed")

    go(browser, cluster, "nodes")
    until(
        browser,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#nodes-table tbody tr")) == 3,
        "the nodes page",
    )
    nodes = text_of(browser, "nodes-table")
    assert "running" in nodes and "Alarms" in nodes and "alarm" not in nodes.replace("Alarms", "")
    screenshot(browser, "nodes")

    go(browser, cluster, "users")
    until(browser, lambda d: d.find_elements(By.ID, "user-form"), "the users page")
    fill(
        browser,
        "user-form",
        name="ui-reader",
        password="s3cret-reader",
        configure="",
        write="",
        read="^ui-.*",
    )
    until(browser, lambda d: "ui-reader" in d.find_element(By.ID, "main").text, "the new user")
    screenshot(browser, "users")

    go(browser, cluster, "policies")
    until(browser, lambda d: d.find_elements(By.ID, "policy-form"), "the policies page")
    fill(
        browser,
        "policy-form",
        name="ui-limits",
        pattern="^ui-",
        priority="1",
        definition='{"max-length": 100000}',
    )
    until(browser, lambda d: "ui-limits" in d.find_element(By.ID, "main").text, "the new policy")
    screenshot(browser, "policies")

    go(browser, cluster, "dead-letters")
    until(browser, lambda d: d.find_elements(By.LINK_TEXT, "ui-orders.dlq"), "the dead-letter queue listed")

    def three_dead_letters(d: WebDriver) -> bool:
        d.find_element(By.LINK_TEXT, "ui-orders.dlq").click()  # read the queue again
        return text_of(d, "dead-letter-detail").count("a payment nobody took in time") == 3

    until(browser, three_dead_letters, "the three expired payments in the dead-letter queue")
    assert "expired" in text_of(browser, "dead-letter-detail")  # their x-death says why
    browser.find_element(By.ID, "redrive").click()
    until(browser, lambda d: "/ 3" in text_of(d, "redrive-tasks"), "a redrive task of the three")
    screenshot(browser, "dead-letters")


def test_w9_the_user_form_changes_only_what_the_operator_changed(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    permissions = {"configure": "^w9-c", "write": "^w9-w", "read": "^w9-r"}
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.put_user("w9-user", "the-first-password", tags=["monitoring"])
        client.set_permissions("w9-user", **permissions)
    go(browser, cluster, "users")
    until(browser, lambda d: "w9-user" in d.find_element(By.ID, "main").text, "the user listed")
    fill(browser, "user-form", name="w9-user", password="the-second-password")

    def changed_password(_: WebDriver) -> dict[str, Any] | None:
        with SyncClient(cluster.urls, auth=("w9-user", "the-second-password")) as client:
            try:
                return client.whoami()
            except UnauthorizedError:
                return None

    me = until(browser, changed_password, "the new password in force")
    with SyncClient(
        cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)
    ) as client:  # after the form's last call
        user = next(u for u in client.users() if u["name"] == "w9-user")
    assert user["permissions"] == me["permissions"] == permissions and user["tags"] == ["monitoring"], user


def test_w15_deleting_a_user_asks_first(cluster: ProcessCluster, browser: WebDriver) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.put_user("w15-doomed", "a-doomed-password")

        def delete_button(d: WebDriver) -> Any:
            rows = d.find_elements(By.XPATH, "//tr[td[1][text()='w15-doomed']]//button")
            return rows[0] if rows else None

        go(browser, cluster, "nodes")  # from another page, so that the users page is drawn again
        go(browser, cluster, "users")
        click(browser, delete_button, "the user's Delete button")
        until(browser, alert_is_present(), "the question").dismiss()
        assert "w15-doomed" in {u["name"] for u in client.users()}
        click(browser, delete_button, "the user's Delete button")
        until(browser, alert_is_present(), "the question").accept()
        until(browser, lambda d: delete_button(d) is None, "the user gone from the page")
        assert "w15-doomed" not in {u["name"] for u in client.users()}


def test_w15_log_out_revokes_the_token_on_every_node(cluster: ProcessCluster, browser: WebDriver) -> None:
    """The UI logs in with a token of at most UI_TOKEN_S, and its log-out revokes it on every node."""
    go(browser, cluster, "overview")
    browser.find_element(By.ID, "logout").click()
    until(browser, lambda d: d.find_elements(By.ID, "login"), "the login form")
    fill(browser, "login", user=HARNESS_USER, password=HARNESS_PASSWORD)
    until(browser, lambda d: text_of(d, "who") == HARNESS_USER, "the administrator logged in")
    auth = browser.execute_script("return sessionStorage.getItem('quorumq.auth')")
    assert auth.startswith("Bearer "), auth
    token = auth.removeprefix("Bearer ")
    for url in cluster.urls:
        with SyncClient([url], token=token) as client:
            assert client.whoami()["name"] == HARNESS_USER
    with SyncClient([cluster.urls[0]], token=token) as client:  # no later than the token asking: its expiry
        _, expires_ms = client.create_token(7 * 24 * 3600)
    assert expires_ms <= (time.time() + UI_TOKEN_S + 60) * 1000, (expires_ms / 1000 - time.time()) / 3600
    browser.find_element(By.ID, "logout").click()
    until(browser, lambda d: d.find_elements(By.ID, "login"), "the login form again")
    for url in cluster.urls:  # the log-out answered only once every node had revoked it
        with SyncClient([url], token=token) as client, pytest.raises(UnauthorizedError):
            client.whoami()


def log_in(driver: WebDriver, cluster: ProcessCluster) -> None:
    """Logged in (as the administrator, unless an earlier test logged in already)."""
    go(driver, cluster, "overview")
    until(driver, lambda d: d.find_elements(By.ID, "login") or text_of(d, "who"), "the login form or a user")
    if driver.find_elements(By.ID, "login"):
        fill(driver, "login", user=HARNESS_USER, password=HARNESS_PASSWORD)
        until(driver, lambda d: text_of(d, "who") == HARNESS_USER, "the administrator logged in")


def button_in_row(first_cell: str) -> Any:
    """A finder of the button in the table row whose first cell is `first_cell`."""

    def find(d: WebDriver) -> Any:
        buttons = d.find_elements(By.XPATH, f"//tr[td[1][text()='{first_cell}']]//button")
        return buttons[0] if buttons else None

    return find


def test_w15_deleting_a_queue_asks_first(cluster: ProcessCluster, browser: WebDriver) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.declare("w15-doomed-queue")
        log_in(browser, cluster)
        go(browser, cluster, "queue/w15-doomed-queue")
        click(browser, lambda d: d.find_element(By.ID, "delete-queue"), "the Delete queue button")
        until(browser, alert_is_present(), "the question").dismiss()
        assert client.queue("w15-doomed-queue")["name"] == "w15-doomed-queue"
        click(browser, lambda d: d.find_element(By.ID, "delete-queue"), "the Delete queue button")
        until(browser, alert_is_present(), "the question").accept()
        until(
            browser,
            lambda _: "w15-doomed-queue" not in {q["name"] for q in client.queues()},
            "the queue deleted",
        )


def test_w15_removing_a_replica_asks_first(cluster: ProcessCluster, browser: WebDriver) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.declare("w15-shrunk")

        def replicas() -> set[str]:
            return {m["node"] for m in client.members("w15-shrunk")["members"]}

        assert len(replicas()) == 3
        leader = client.queue("w15-shrunk")["leader"]
        follower = sorted(replicas() - {leader})[0]
        log_in(browser, cluster)
        go(browser, cluster, "queue/w15-shrunk")
        click(browser, button_in_row(follower), f"the Remove button of the replica on {follower}")
        until(browser, alert_is_present(), "the question").dismiss()
        assert follower in replicas()
        click(browser, button_in_row(follower), f"the Remove button of the replica on {follower}")
        until(browser, alert_is_present(), "the question").accept()
        until(browser, lambda _: follower not in replicas(), f"the replica on {follower} removed")


def test_w15_clearing_a_policy_asks_first(cluster: ProcessCluster, browser: WebDriver) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.set_policy("w15-doomed-policy", "^w15-nothing$", {"max-length": 10})
        log_in(browser, cluster)
        go(browser, cluster, "policies")
        click(browser, button_in_row("w15-doomed-policy"), "the policy's Clear button")
        until(browser, alert_is_present(), "the question").dismiss()
        assert "w15-doomed-policy" in {p["name"] for p in client.policies()}
        click(browser, button_in_row("w15-doomed-policy"), "the policy's Clear button")
        until(browser, alert_is_present(), "the question").accept()
        until(
            browser,
            lambda _: "w15-doomed-policy" not in {p["name"] for p in client.policies()},
            "the policy cleared",
        )


def test_the_publish_form_sends_a_message_id_and_the_queue_page_counts_the_duplicates(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.declare("ui-deduped", {"x-dedupe-window": 3_600_000})
    log_in(browser, cluster)
    go(browser, cluster, "queue/ui-deduped")
    until(browser, lambda d: d.find_elements(By.ID, "publish-form"), "the queue page")
    fill(browser, "publish-form", body="pay 7", message_id="pay-7", count="3")
    until(
        browser, lambda d: "2 duplicates by message id" in text_of(d, "queue-result"), "the duplicates told"
    )
    until(browser, lambda d: stat(d, "queue-ready") == "1", "one ready message")
    assert stat(browser, "queue-dedupe-refused") == "2"
    assert stat(browser, "queue-dedupe-ids") == "1"


def test_the_policies_page_sets_an_operator_policy_and_the_queue_page_names_it(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.declare("ui-capped", {"x-max-length": 1000})
    log_in(browser, cluster)
    go(browser, cluster, "policies")
    until(browser, lambda d: d.find_elements(By.ID, "policy-form"), "the policies page")
    fill(
        browser,
        "policy-form",
        kind="operator",
        name="ui-cap",
        pattern="^ui-capped$",
        definition='{"max-length": 7}',
    )
    until(browser, lambda d: "ui-cap" in text_of(d, "operator-policies-table"), "the operator policy listed")
    assert "ui-cap" not in text_of(browser, "policies-table")

    def capped(d: WebDriver) -> bool:
        go(d, cluster, "queue/ui-capped")  # the page again: the queue's leader applies it meanwhile
        until(d, lambda d: d.find_elements(By.ID, "publish-form"), "the queue page")
        shown = d.find_element(By.ID, "main").text
        return "ui-cap" in shown and '"x-max-length": 7' in shown

    until(browser, capped, "the queue page naming the operator policy and its limit in force")


def drawn_after_change(
    driver: WebDriver, before: WebElement, check: Callable[[WebDriver], Any], what: str
) -> None:
    """Wait until the page, drawn again once a change it made answered (`before` gone), shows `check`;
    reloaded meanwhile, as the node it talks to applies a change of the metadata leader a moment later."""
    until(driver, staleness_of(before), f"the page drawn again before {what}")

    def shown(d: WebDriver) -> bool:
        if check(d):
            return True
        d.refresh()
        until(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#main h1, #main .error"), "the page reloaded")
        return bool(check(d))

    until(driver, shown, what)


def change(
    driver: WebDriver, form_id: str, check: Callable[[WebDriver], Any], what: str, **values: str | bool
) -> None:
    """Submit form `form_id` with `values` and wait until the page shows `check`."""
    form = driver.find_element(By.ID, form_id)
    fill(driver, form_id, **values)
    drawn_after_change(driver, form, check, what)


def shows(element_id: str, wanted: str) -> Callable[[WebDriver], bool]:
    """A check that element `element_id` shows `wanted`."""
    return lambda d: wanted in text_of(d, element_id)


def unbind_button(routing_key: str) -> Callable[[WebDriver], Any]:
    """A finder of the Unbind button of the binding with `routing_key`."""

    def find(d: WebDriver) -> Any:
        buttons = d.find_elements(By.XPATH, f"//tr[td[text()='{routing_key}']]//button[text()='Unbind']")
        return buttons[0] if buttons else None

    return find


def test_the_exchanges_page_declares_binds_publishes_through_and_deletes_a_topic_exchange(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        for queue in ("ui-eu-orders", "ui-all-orders"):
            client.declare(queue)
        log_in(browser, cluster)
        go(browser, cluster, "exchanges")
        until(browser, lambda d: "(AMQP default)" in text_of(d, "exchanges-table"), "the default exchange")
        fill(browser, "exchange-form", name="amq.ui", type="topic")
        until(
            browser, lambda d: "'amq.' are reserved" in text_of(d, "error"), "the refusal of a reserved name"
        )
        change(
            browser,
            "exchange-form",
            shows("exchanges-table", "ui-unrouted"),
            "the exchange listed with its alternate exchange",
            name="ui-events",
            type="topic",
            alternate="ui-unrouted",
        )
        screenshot(browser, "exchanges")

        click(browser, lambda d: d.find_element(By.LINK_TEXT, "ui-events"), "the exchange's link")
        until(browser, lambda d: d.find_elements(By.ID, "bind-form"), "the exchange's page")
        for queue, key in (("ui-eu-orders", "order.*.eu"), ("ui-all-orders", "order.#")):
            change(
                browser,
                "bind-form",
                shows("bindings-table", key),
                f"the binding of {queue}",
                destination_type="queue",
                destination=queue,
                routing_key=key,
            )
        assert browser.execute_script("return state.routingRevision") > 0  # what the publish waits for
        fill(
            browser,
            "exchange-publish-form",
            routing_key="order.17.eu",
            body="order 17",
            headers='{"region": "eu"}',
            mandatory=True,
        )
        until(
            browser,
            lambda d: (
                {"ui-eu-orders", "ui-all-orders"} <= set(text_of(d, "routed").replace("(", " ").split())
            ),
            "the message routed to both queues",
        )
        screenshot(browser, "exchange")
        fill(browser, "exchange-publish-form", routing_key="invoice.17", body="invoice 17", headers="")
        until(browser, lambda d: "unroutable" in text_of(d, "exchange-result"), "the unroutable message told")
        for queue in ("ui-eu-orders", "ui-all-orders"):
            got = client.browse(queue)
            assert [(m.body, m.headers.get("region")) for m in got] == [(b"order 17", "eu")], (queue, got)

        fill(browser, "delete-exchange", if_unused=True)
        until(browser, alert_is_present(), "the question").accept()
        until(browser, lambda d: "precondition_failed" in text_of(d, "error"), "the refusal: it has bindings")

        go(browser, cluster, "exchange/amq.default")
        until(browser, lambda d: "takes no bindings" in text_of(d, "main"), "the default exchange's page")
        fill(browser, "exchange-publish-form", routing_key="ui-all-orders", body="by the queue's name")
        until(browser, lambda d: "ui-all-orders" in text_of(d, "routed"), "routed to the queue it names")

        go(browser, cluster, "queue/ui-eu-orders")
        until(browser, lambda d: "ui-events" in text_of(d, "queue-bindings-table"), "the queue's binding")
        table = browser.find_element(By.ID, "queue-bindings-table")
        click(browser, unbind_button("order.*.eu"), "the queue page's Unbind button")
        until(browser, alert_is_present(), "the question").accept()
        drawn_after_change(
            browser, table, lambda d: unbind_button("order.*.eu")(d) is None, "the queue unbound"
        )

        go(browser, cluster, "exchange/ui-events")
        until(browser, lambda d: "order.#" in text_of(d, "bindings-table"), "the other binding")
        table = browser.find_element(By.ID, "bindings-table")
        click(browser, unbind_button("order.#"), "the exchange page's Unbind button")
        until(browser, alert_is_present(), "the question").accept()
        drawn_after_change(browser, table, lambda d: "No bindings." in text_of(d, "main"), "no bindings left")

        form = browser.find_element(By.ID, "delete-exchange")
        fill(browser, "delete-exchange", if_unused=True)
        until(browser, alert_is_present(), "the question").accept()
        drawn_after_change(
            browser,
            form,
            lambda d: (
                "amq.topic" in text_of(d, "exchanges-table")
                and "ui-events" not in text_of(d, "exchanges-table")
            ),
            "the exchanges without the deleted one",
        )
        assert "ui-events" not in {x["name"] for x in client.exchanges()}


def test_the_publish_form_names_a_group_and_the_queue_page_counts_the_groups(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    """A grouped queue's page shows its groups, and the publish form's group reaches the message
    (docs/use/message-groups.md)."""
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        client.declare("ui-grouped", {"x-message-groups": True})
        log_in(browser, cluster)
        go(browser, cluster, "queue/ui-grouped")
        until(browser, lambda d: d.find_elements(By.ID, "publish-form"), "the queue page")
        fill(browser, "publish-form", body="order 1 of acme", group="acme", count="2")
        until(browser, lambda d: stat(d, "queue-ready") == "2", "two ready messages")
        until(browser, lambda d: stat(d, "queue-groups") == "1", "one group")
        taken = client.get("ui-grouped", 5, ack="manual")
        assert [d.group for d in taken] == ["acme"]  # one of a group out at a time
        browser.refresh()
        until(browser, lambda d: stat(d, "queue-groups-blocked") == "1", "the group waiting for its message")


def test_the_vhost_selector_shows_a_vhosts_queues_and_publishes_into_them(
    cluster: ProcessCluster, browser: WebDriver
) -> None:
    """With a vhost besides `/`, the header offers it; chosen, the pages show its queues and a publish
    goes to its queue (docs/use/vhosts.md)."""
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD)) as admin:
        admin.declare_vhost("ui-tenant")
    with SyncClient(cluster.urls, auth=(HARNESS_USER, HARNESS_PASSWORD), vhost="ui-tenant") as tenant:
        tenant.declare("ui-tenant-q")
        log_in(browser, cluster)
        browser.refresh()  # the selector lists the vhosts when the page starts
        choice = until(browser, lambda d: d.find_elements(By.ID, "vhost"), "the vhost selector")[0]
        until(browser, lambda _: choice.is_displayed(), "the selector shown")
        Select(choice).select_by_value("ui-tenant")
        go(browser, cluster, "queues")
        until(browser, lambda d: "ui-tenant-q" in text_of(d, "queues-table"), "the vhost's queue listed")
        assert "ui-deduped" not in text_of(browser, "queues-table")  # a queue of `/`
        go(browser, cluster, "queue/ui-tenant-q")
        until(browser, lambda d: d.find_elements(By.ID, "publish-form"), "the queue page")
        fill(browser, "publish-form", body="tenant order")
        until(browser, lambda d: stat(d, "queue-ready") == "1", "one ready message")
        assert [d.body for d in tenant.get("ui-tenant-q", 5, ack="auto")] == [b"tenant order"]
        Select(browser.find_element(By.ID, "vhost")).select_by_value("/")
