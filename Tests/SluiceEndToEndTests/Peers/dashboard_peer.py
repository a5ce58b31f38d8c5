#!/usr/bin/python3
"""The dashboard in a real browser: Debian's chromium and chromium-driver, driven by python3-selenium, headless.

  dashboard_peer.py BASE TOKEN PID COMPONENT[,COMPONENT...] TAPPED SCREENSHOT

Opens BASE/?token=TOKEN at 1280x800, waits for the graph, reads the figures twice three seconds apart, compares
them with /api/metrics of the same report, clicks TAPPED and waits for its events, saves SCREENSHOT, then stops
the pipeline (SIGTERM to PID) and waits for the page to say so. Prints one JSON object of what it saw; the Swift
test makes the assertions.
"""
import json
import os
import signal
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return condition()


def main():
    base, token, pid, components, tapped, screenshot = sys.argv[1:7]
    components = components.split(",")
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                     "--disable-dev-shm-usage"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(10)
    result = {}
    try:
        driver.get(f"{base}/?token={token}")
        result["url"] = driver.current_url
        result["graph"] = sorted(wait_for(lambda: [
            node.get_attribute("data-id") for node in driver.find_elements(By.CSS_SELECTOR, "#graph g.node")
        ] if len(driver.find_elements(By.CSS_SELECTOR, "#graph g.node")) == len(components) else None, 15) or [])

        def figures():
            uptime = driver.find_element(By.ID, "facts").get_attribute("data-uptime")
            rows = {}
            for row in driver.find_elements(By.CSS_SELECTOR, "#components tbody tr"):
                cells = row.find_elements(By.TAG_NAME, "td")
                rows[row.get_attribute("data-id")] = [cells[2].get_attribute("data-value"),
                                                      cells[3].get_attribute("data-value")]
            return uptime, rows

        def layout():
            return {name: driver.find_element(By.ID, name).rect for name in ["graph", "components", "tap"]}

        wait_for(lambda: figures()[0], 10)
        first, layout_first = figures(), layout()
        time.sleep(3)
        second, layout_second = figures(), layout()
        result["first"], result["second"] = first, second
        result["layout_unchanged"] = layout_first == layout_second

        # The page's figures against /api/metrics of the report it shows (fetched by the page, with its cookie).
        result["matched"] = False
        for _ in range(20):
            uptime, rows = figures()
            report = driver.execute_async_script(
                "const done = arguments[0];"
                "fetch('/api/metrics', {cache: 'no-store'}).then((r) => r.json()).then(done, (e) => done(String(e)));")
            if isinstance(report, dict) and uptime is not None and float(uptime) == report["uptime_secs"]:
                expected = {c["component_id"]: [str(c["received_events_total"]), str(c["sent_events_total"])]
                            for c in report["components"]}
                result["matched"] = expected == rows
                result["compared"] = {"page": rows, "api": expected}
                break
            time.sleep(0.3)

        # The tap panel: click the component's node, wait for its events, pretty-printed JSON.
        driver.find_element(By.CSS_SELECTOR, f"#node-{tapped}").click()
        events = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#tap-events div"), 15)
        result["tap_title"] = driver.find_element(By.ID, "tap-title").text
        result["tapped"] = [json.loads(event.text) for event in events[:3]]
        result["tapped_pretty"] = bool(events) and "\n  " in events[0].text
        time.sleep(1)
        driver.save_screenshot(screenshot)

        os.kill(int(pid), signal.SIGTERM)
        result["ended"] = bool(wait_for(lambda: "ended" in driver.find_element(By.TAG_NAME, "body").get_attribute("class"), 20))
        result["stopped_message"] = driver.find_element(By.ID, "stopped").text
        result["state"] = driver.find_element(By.ID, "state").text
        result["console_errors"] = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    finally:
        driver.quit()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
