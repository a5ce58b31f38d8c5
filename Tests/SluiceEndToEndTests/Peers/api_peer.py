#!/usr/bin/python3
"""An independent client of Sluice's HTTP API, on Python's standard library, Debian's python3-websockets and
python3-prometheus-client. Each command prints one JSON object on stdout; the Swift tests make the assertions.

  get URL [--header NAME:VALUE]...          one GET: status, headers, body
  upgrade URL [--header NAME:VALUE]...      a WebSocket upgrade request sent with http.client: status and body
  scrape BASE --token T                     /metrics (parsed by prometheus_client) and /api/metrics of one report
  live BASE --token T --count N             the first N messages of /api/live
  live-until-stopped BASE --token T --pid P two reports, then SIGTERM to P, then every report until the close
  tap BASE PATH_AND_QUERY --token T         every message of a tap until the server closes it, and the close code
  stall BASE PATH_AND_QUERY --token T --secs S   a tap client that reads nothing for S seconds, then everything
"""
import asyncio
import base64
import http.client
import json
import os
import sys
import time
import urllib.parse


def split_url(url):
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts.hostname, parts.port, path


def request(url, headers, upgrade=False):
    host, port, path = split_url(url)
    connection = http.client.HTTPConnection(host, port, timeout=10)
    if upgrade:
        headers = dict(headers)
        headers.update({
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        })
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = b"" if response.status == 101 else response.read()
    result = {
        "status": response.status,
        "headers": {name.lower(): value for name, value in response.getheaders()},
        "body": body.decode("utf-8", "replace"),
    }
    connection.close()
    return result


def parse_headers(arguments):
    headers = {}
    for index, argument in enumerate(arguments):
        if argument == "--header":
            name, value = arguments[index + 1].split(":", 1)
            headers[name.strip()] = value.strip()
    return headers


def option(arguments, name, default=None):
    return arguments[arguments.index(name) + 1] if name in arguments else default


def scrape(base, token):
    """/metrics and /api/metrics from the same report: both are read until their uptimes agree (bounded)."""
    from prometheus_client.parser import text_string_to_metric_families
    auth = {"Authorization": f"Bearer {token}"}
    for _ in range(50):
        report = request(base + "/api/metrics", auth)
        metrics = request(base + "/metrics", auth)
        uptime = json.loads(report["body"])["uptime_secs"]
        # The exposition's first line names its report: "# sluice report uptime_secs=12.003 final=false".
        if f"uptime_secs={uptime} " not in metrics["body"].split("\n", 1)[0]:
            time.sleep(0.05)
            continue
        samples = []
        for family in text_string_to_metric_families(metrics["body"]):
            for sample in family.samples:
                samples.append({"name": sample.name, "labels": sample.labels, "value": sample.value,
                                "type": family.type, "help": family.documentation})
        return {"samples": samples, "report": json.loads(report["body"]), "text": metrics["body"],
                "content_type": metrics["headers"].get("content-type")}
    return {"error": "no /metrics and /api/metrics pair of the same report in 50 tries"}


async def live(base, token, count):
    import websockets
    url = base.replace("http://", "ws://") + "/api/live"
    messages = []
    async with websockets.connect(url, extra_headers={"Authorization": f"Bearer {token}"}, max_size=None) as socket:
        while len(messages) < count:
            messages.append(json.loads(await asyncio.wait_for(socket.recv(), 10)))
    return {"messages": messages}


async def live_until_stopped(base, token, pid):
    """Reads two reports, stops the pipeline (SIGTERM to PID), then reads until the server closes."""
    import signal
    import websockets
    url = base.replace("http://", "ws://") + "/api/live"
    messages = []
    async with websockets.connect(url, extra_headers={"Authorization": f"Bearer {token}"}, max_size=None) as socket:
        try:
            while True:
                messages.append(json.loads(await asyncio.wait_for(socket.recv(), 20)))
                if len(messages) == 2:
                    os.kill(pid, signal.SIGTERM)
        except websockets.exceptions.ConnectionClosed:
            pass
        code = socket.close_code
    return {"messages": messages, "close_code": code}


async def tap(base, path, token, stall_secs=0):
    import websockets
    url = base.replace("http://", "ws://") + path
    messages = []
    started = time.monotonic()
    async with websockets.connect(url, extra_headers={"Authorization": f"Bearer {token}"}, max_size=None,
                                  max_queue=1, close_timeout=2) as socket:
        if stall_secs:
            # Reads nothing meanwhile: the socket buffers fill and the server's queue for this client overflows.
            await asyncio.sleep(stall_secs)
        # A stalled client reads for one second more and leaves; any other reads until the server closes.
        until = time.monotonic() + 1 if stall_secs else started + 60
        try:
            while time.monotonic() < until:
                messages.append(await asyncio.wait_for(socket.recv(), 20))
        except websockets.exceptions.ConnectionClosed:
            pass
        code = socket.close_code
    return {"messages": messages, "close_code": code}


def main():
    command, arguments = sys.argv[1], sys.argv[2:]
    token = option(arguments, "--token")
    if command == "get":
        result = request(arguments[0], parse_headers(arguments))
    elif command == "upgrade":
        result = request(arguments[0], parse_headers(arguments), upgrade=True)
    elif command == "scrape":
        result = scrape(arguments[0], token)
    elif command == "live":
        result = asyncio.run(live(arguments[0], token, int(option(arguments, "--count", "3"))))
    elif command == "live-until-stopped":
        result = asyncio.run(live_until_stopped(arguments[0], token, int(option(arguments, "--pid"))))
    elif command == "tap":
        result = asyncio.run(tap(arguments[0], arguments[1], token))
    elif command == "stall":
        result = asyncio.run(tap(arguments[0], arguments[1], token, float(option(arguments, "--secs", "3"))))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
