"""The headless Chromium that the page tests drive (tests/test_serve.py, tests/test_doc.py)."""
from __future__ import annotations

import os
import tempfile

import pytest


def headless_chromium(width: int, height: int):
    """A Selenium driver of headless Chromium (/usr/bin/chromium and chromedriver) and its
    profile folder (the caller quits the driver and removes the folder). Skips the test where
    Chromium or Selenium is missing; in CI that is a failure."""
    chromium, driver = "/usr/bin/chromium", "/usr/bin/chromedriver"
    missing = [p for p in (chromium, driver) if not os.path.exists(p)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} missing: .ci/run installs chromium and chromium-driver")
        pytest.skip(f"{', '.join(missing)} missing (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("selenium is missing (the test extra installs it)")
        pytest.skip("selenium is missing (pip install selenium)")
    profile = tempfile.mkdtemp(prefix="sk-chromium-")
    opts = Options()
    opts.binary_location = chromium
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(driver), options=opts), profile
