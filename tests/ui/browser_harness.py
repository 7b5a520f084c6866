"""The real browser the UI tests drive: Debian's chromium, headless, through its chromedriver (selenium),
and a wait for what its page shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PATIENT_S = 40


def chromium(*arguments: str) -> WebDriver:
    """A headless chromium with `arguments` besides the harness's own (quit it when done)."""
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), "install chromium and chromium-driver (.ci/run does)"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1600"):
        options.add_argument(argument)
    for argument in arguments:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def until(driver: WebDriver, check: Callable[[WebDriver], Any], what: str) -> Any:
    """Wait until the page shows `check` (stale elements of a page being redrawn count as not yet)."""

    def settled(d: WebDriver) -> Any:
        try:
            return check(d)
        except StaleElementReferenceException:
            return False

    return WebDriverWait(driver, PATIENT_S, poll_frequency=0.2).until(
        settled, f"the page never showed {what}"
    )


def click(driver: WebDriver, find: Callable[[WebDriver], Any], what: str) -> None:
    """Click what `find` finds (None: not shown yet) once the page shows it, again if the page redrew it
    between the finding and the click."""

    def clicked(d: WebDriver) -> bool:
        element = find(d)
        if element is None:
            return False
        element.click()
        return True

    until(driver, clicked, what)
