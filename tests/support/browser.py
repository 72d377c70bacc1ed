"""Driving the console in a real browser (Selenium): waits that name what they waited for,
page loads told apart, forms filled as a user types, screenshots checked to be pictures.

Imported by the browser tests after their check that Chromium and Selenium are installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

WAIT_S = 20  # generous: the machine is shared


def wait(driver: WebDriver, condition: Callable[[Any], Any], what: str) -> Any:
    """Wait for a condition, failing with what was awaited and the page's text."""
    try:
        return WebDriverWait(driver, WAIT_S).until(condition)
    except TimeoutException:
        body = driver.find_element(By.TAG_NAME, "body").text[:2000]
        raise AssertionError(f"timed out waiting for {what}; page {driver.current_url}:\n{body}"
                             ) from None


def mark_page(driver: WebDriver) -> str:
    """Tag the current document so that a later wait can tell when another one replaced it."""
    marker = uuid.uuid4().hex
    driver.execute_script("window.__semmemPage = arguments[0]", marker)
    return marker


def wait_for_next_page(driver: WebDriver, marker: str, what: str) -> None:
    """Wait until a document other than the one tagged ``marker`` has completely loaded.

    Polls a script instead of ``staleness_of``: mid-navigation chromedriver can answer an element
    query with an inspector error ("Node with given id does not belong to the document") that
    ``staleness_of`` does not treat as stale, so it failed the test on a busy machine.
    """
    def loaded(d: WebDriver) -> bool:
        try:
            return bool(d.execute_script(
                "return document.readyState === 'complete' && window.__semmemPage !== arguments[0]",
                marker))
        except WebDriverException:  # the old document is being torn down; ask again
            return False
    wait(driver, loaded, what)


def submit(driver: WebDriver, button: WebElement, *, accept_confirm: bool = False) -> None:
    """Click a submit button and wait for the next page to load."""
    marker = mark_page(driver)
    button.click()
    if accept_confirm:
        wait(driver, ec.alert_is_present(), "the confirmation dialog")
        driver.switch_to.alert.accept()
    wait_for_next_page(driver, marker, "the next page")


def fill(driver: WebDriver, field_id: str, value: str) -> None:
    """Replace a field's value by typing, as a user would."""
    field = driver.find_element(By.ID, field_id)
    field.clear()
    field.send_keys(value)


def text(driver: WebDriver, selector: str = "main") -> str:
    """Visible text of an element."""
    return str(driver.find_element(By.CSS_SELECTOR, selector).text)


def shoot(driver: WebDriver, folder: Path, name: str, height: int | None = None) -> Path:
    """Screenshot the window, grown to the page's whole height (or to ``height``)."""
    width = driver.get_window_size()["width"]
    measure = ("return Math.max(document.body.scrollHeight, "
               "document.documentElement.scrollHeight) + window.outerHeight - window.innerHeight")
    for _ in range(2):  # the viewport is smaller than the window; measure again once resized
        driver.set_window_size(width, height or max(int(driver.execute_script(measure)), 400))
    driver.execute_script("window.scrollTo(0, 0)")
    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path))
    return path


def assert_real_picture(path: Path) -> None:
    """A screenshot that shows something: a PNG, not one flat colour."""
    from PIL import Image

    with Image.open(path) as img:
        assert img.format == "PNG" and img.width >= 300
        colours = img.convert("RGB").getcolors(maxcolors=1_000_000)
        assert colours is None or len(colours) > 50, f"{path} looks blank"


def sign_in(driver: WebDriver, base: str, token: str) -> None:
    """Go to the console and submit the sign-in form with ``token``."""
    driver.get(f"{base}/console/")
    wait(driver, ec.title_contains("Sign in"), "the sign-in page")
    fill(driver, "token", token)
    submit(driver, driver.find_element(By.ID, "signin"))


def item_numbers(driver: WebDriver) -> list[int]:
    """The numbers of the items listed on a partition page, in page order."""
    return [int(str(el.get_attribute("id")).split("-")[1])
            for el in driver.find_elements(By.CSS_SELECTOR, "#items > li")]
