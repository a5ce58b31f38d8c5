#!/usr/bin/env python3
"""The dashboard in Firefox (Debian's firefox-esr, headless), driven over Marionette, Firefox's own remote
protocol, with Mozilla's marionette_driver (from PyPI, in the venv scripts/install-deps makes; Debian has no
geckodriver for selenium).

  firefox_peer.py BASE TOKEN SCREENSHOT

Opens BASE/?token=TOKEN at 1280x800, waits for the graph and two reports, clicks the first transform for the tap
panel, saves SCREENSHOT and prints one JSON object of what the page showed.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from marionette_driver.marionette import Marionette


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    base, token, screenshot = sys.argv[1:4]
    profile = tempfile.mkdtemp(prefix="sluice-firefox-")
    port = free_port()
    with open(f"{profile}/user.js", "w") as prefs:
        prefs.write(f'user_pref("marionette.port", {port});\n')
    firefox = subprocess.Popen(
        ["firefox-esr", "--headless", "--marionette", "--no-remote", "--profile", profile, "-width", "1280",
         "-height", "800"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    result = {}
    try:
        client = Marionette(host="127.0.0.1", port=port, startup_timeout=60)
        client.start_session()
        client.navigate(f"{base}/?token={token}")
        result["url"] = client.get_url()
        read = ("return {nodes: [...document.querySelectorAll('#graph g.node')].map((n) => n.dataset.id),"
                " uptime: document.getElementById('facts').dataset.uptime || null,"
                " state: document.getElementById('state').textContent,"
                " rows: document.querySelectorAll('#components tbody tr').length,"
                " tap: document.querySelectorAll('#tap-events div').length};")
        first = None
        for _ in range(100):
            seen = client.execute_script(read)
            if seen["uptime"] and first is None:
                first = seen
            if first and seen["uptime"] != first["uptime"]:
                break
            time.sleep(0.1)
        result["first"], result["second"] = first, seen
        client.execute_script("document.querySelectorAll('#graph g.node')[1].dispatchEvent(new MouseEvent('click'))")
        for _ in range(100):
            if client.execute_script(read)["tap"] > 0:
                break
            time.sleep(0.1)
        result["tapped"] = client.execute_script(read)["tap"]
        with open(screenshot, "wb") as out:
            out.write(client.screenshot(format="binary"))
        client.delete_session()
    finally:
        # Firefox and its content processes are one process group of their own: SIGTERM to all of it, then SIGKILL
        # (a child of the test runner may have SIGTERM blocked).
        for signal_number in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(firefox.pid, signal_number)
                firefox.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                break
        try:
            os.killpg(firefox.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
