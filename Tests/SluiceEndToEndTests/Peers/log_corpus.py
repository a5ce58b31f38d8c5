#!/usr/bin/env python3
"""A seeded corpus of real-looking log lines for the parse functions, with what each line holds.

    python3 log_corpus.py SEED COUNT NOW_MILLIS > cases.json
    python3 log_corpus.py multiline SEED COUNT > traces.json

Every line is built from fields chosen first (hosts, users, times with their zones, requests, agents with the
escapes nginx and Apache write, syslog priorities, structured data with its escapes, logfmt pairs, CSV records),
so what a line holds is known before it is written: the expectations are those fields, not a second parser. CSV
records are written by Python's csv module, regular-expression captures come from Python's re, and times from its
datetime. A few lines per case are broken on purpose; their expectation is null (the event is an `error`).

Output: a JSON array of cases {"name", "expression", "lines": [...], "expected": [object|array|number|null]}.

With `multiline`: COUNT log records of an application (a start line with a date, and for errors a Java or Python
stack trace, some longer than the limits, some with lines of several KiB), preceded by lines that belong to no
record, as {"input": text, "events": [...], "cuts": n, "joined": n}: the events a multiline decoder with
start_pattern '^\d{4}-\d{2}-\d{2} ', max_lines 40 and max_bytes 4096 gives, by the rules the README states.
"""
import csv
import io
import json
import random
import re
import sys
from datetime import datetime, timedelta, timezone

MULTILINE = sys.argv[1] == "multiline"
arguments = sys.argv[2:] if MULTILINE else sys.argv[1:]
SEED, COUNT = int(arguments[0]), int(arguments[1])
NOW_MILLIS = int(arguments[2]) if len(arguments) > 2 else 0
rng = random.Random(SEED)
NOW = datetime.fromtimestamp(NOW_MILLIS / 1000, timezone.utc)


def rfc3339(moment):
    """UTC with milliseconds, truncated, as Sluice writes every time."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def word(alphabet="abcdefghijklmnopqrstuvwxyz", low=3, high=10):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, high)))


def moment(after=datetime(2019, 1, 1, tzinfo=timezone.utc), span_days=2500):
    return after + timedelta(seconds=rng.randrange(span_days * 86400), microseconds=rng.randrange(1_000_000))


def zone():
    minutes = rng.choice([0, 0, 0, -7 * 60, -5 * 60, -210, 60, 120, 330, 345, 540, 765])
    return timezone(timedelta(minutes=minutes))


def ipv4():
    return ".".join(str(rng.randrange(1, 255)) for _ in range(4))


def ipv6():
    return ":".join(f"{rng.randrange(65536):x}" for _ in range(rng.choice([3, 8]))).replace(":0:", "::", 1)


def hostname():
    return rng.choice([ipv4(), ipv6(), f"{word()}.{word()}.example.com", f"web-{rng.randrange(100)}", word()])


# MARK: - Access logs


METHODS = ["GET"] * 8 + ["POST"] * 3 + ["PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"]
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "curl/8.4.0",
    "Go-http-client/1.1",
    "python-requests/2.31.0",
    'Agent "quoted" name/1.0',  # written with \" by nginx and Apache
    "back\\slash/2.0",  # written with \\
    "-",
]


def escape_log_field(text):
    """As nginx and Apache write a quoted field: a quote and a backslash get a backslash before them."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def path():
    segments = "/".join(word("abcdefghijklmnopqrstuvwxyz0123456789-_", 1, 12) for _ in range(rng.randint(0, 4)))
    query = "" if rng.random() < 0.6 else "?" + "&".join(f"{word(low=1, high=5)}={word(low=0, high=8)}%20x"
                                                        for _ in range(rng.randint(1, 3)))
    return "/" + segments + query


def access_line(combined):
    fields = {"host": hostname()}
    ident = "-" if rng.random() < 0.95 else word()
    user = "-" if rng.random() < 0.7 else rng.choice([word(), word() + "@example.com"])
    if ident != "-":
        fields["ident"] = ident
    if user != "-":
        fields["user"] = user
    when = moment().astimezone(zone()).replace(microsecond=0)
    fields["timestamp"] = rfc3339(when)
    shape = rng.random()
    if shape < 0.03:
        request = "-"
    elif shape < 0.06:
        # A TLS handshake sent to a plain HTTP port: nginx writes its bytes as \xHH, which stays as written.
        request = "\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xFC\\x03\\x03"
        fields["request"] = request
    else:
        method, target, protocol = rng.choice(METHODS), path(), rng.choice(["HTTP/1.0", "HTTP/1.1", "HTTP/2.0"])
        request = f"{method} {target} {protocol}"
        fields.update(method=method, path=target, protocol=protocol)
    status = rng.choice([200] * 10 + [201, 204, 301, 302, 304, 400, 401, 403, 404, 404, 499, 500, 502, 503])
    fields["status"] = status
    size = rng.choice(["-", 0, rng.randrange(100_000), rng.randrange(10**9)])
    if size != "-":
        fields["size"] = size
    line = f'{fields["host"]} {ident} {user} [{when.strftime("%d/%b/%Y:%H:%M:%S %z")}] "{request}" {status} {size}'
    if combined:
        referer = rng.choice(["-", "-", f"https://{word()}.example.org{path()}"])
        agent = rng.choice(AGENTS)
        if referer != "-":
            fields["referer"] = referer
        if agent != "-":
            fields["agent"] = agent
        line += f' "{escape_log_field(referer)}" "{escape_log_field(agent)}"'
    return line, fields


# MARK: - Syslog

FACILITIES = ["kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp",
              "ntp", "security", "console", "solaris-cron"] + [f"local{n}" for n in range(8)]
SEVERITIES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
MESSAGES = [
    "Accepted publickey for deploy from 10.0.0.5 port 52113 ssh2",
    "session opened for user root by (uid=0)",
    "Started Daily apt upgrade and clean activities.",
    "connection reset by peer: [42] broken pipe",
    "disk /dev/sda1 at 91% (warn: 90%)",
    'GET "/health" answered 200 in 3ms',
    "Überhitzung erkannt: 81 °C",
    "",
]


def priority():
    value = rng.randrange(192)
    return value, {"facility": FACILITIES[value // 8], "severity": SEVERITIES[value % 8]}


def syslog5424_line():
    value, fields = priority()
    fields["version"] = 1
    if rng.random() < 0.1:
        time_text = "-"
    else:
        when = moment().astimezone(zone())
        digits = rng.choice([0, 3, 3, 6])
        time_text = when.strftime("%Y-%m-%dT%H:%M:%S")
        if digits:
            time_text += "." + f"{when.microsecond:06d}"[:digits]
        else:
            when = when.replace(microsecond=0)
        offset = when.utcoffset()
        if offset == timedelta(0) and rng.random() < 0.7:
            time_text += "Z"
        else:
            minutes = int(offset.total_seconds() // 60)
            sign = "-" if minutes < 0 else "+"
            time_text += f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        fields["timestamp"] = rfc3339(when)
    parts = []
    for name, make in [("host", hostname), ("app", lambda: word("abcdefghijklmnopqrstuvwxyz-_", 2, 12)),
                       ("pid", lambda: rng.choice([rng.randrange(1, 65536), word("abcdef0123456789", 4, 8)])),
                       ("msg_id", lambda: rng.choice(["ID47", "TCPIN", "audit", word("ABCDEFGHIJKLMNOP", 2, 6)]))]:
        if rng.random() < 0.2:
            parts.append("-")
        else:
            value_ = make()
            if name == "pid" and isinstance(value_, str) and value_.isdigit():
                value_ = int(value_)
            fields[name] = value_
            parts.append(str(value_))
    if rng.random() < 0.4:
        sd_text = "-"
    else:
        elements = {}
        sd_text = ""
        for _ in range(rng.randint(1, 3)):
            element_id = rng.choice(["exampleSDID@32473", "origin", "meta", f"{word()}@{rng.randrange(1, 99999)}"])
            if element_id in elements:
                continue
            params = {}
            text = "[" + element_id
            for _ in range(rng.randint(0, 3)):
                name = rng.choice(["ip", "software", "sequenceId", "class", word()])
                if name in params:
                    continue
                raw = rng.choice([word(), str(rng.randrange(10**6)), 'say "hi"', "a]b", "back\\slash",
                                  "C:\\temp\\x", "Grüße"])
                params[name] = raw
                # RFC 5424, 6.3.3: '"', '\' and ']' are escaped, and a backslash before anything else is itself,
                # which writers that leave a lone backslash as it is count on.
                lone = r"\\(?=[\"\\\]])" if rng.random() < 0.5 else r"\\"
                escaped = re.sub(r'(["\]]|' + lone + ")", r"\\\1", raw)
                text += f' {name}="{escaped}"'
            elements[element_id] = params
            sd_text += text + "]"
        fields["structured_data"] = elements
    line = f"<{value}>1 {time_text} {' '.join(parts)} {sd_text}"
    if rng.random() < 0.85:
        message = rng.choice(MESSAGES)
        fields["message"] = message
        line += " " + ("\ufeff" if rng.random() < 0.3 else "") + message
    return line, fields


def syslog3164_line():
    value, fields = priority()
    # Within the last 300 days and at least two before now, so that the year it is read in is now's or the last.
    when = NOW - timedelta(days=2, seconds=rng.randrange(298 * 86400))
    when = when.replace(microsecond=0)
    fields["timestamp"] = rfc3339(when)
    host = rng.choice([hostname(), "FW01", "CORE", "SWITCH-A", "R1", "ROUTER"])
    fields["host"] = host
    line = f"<{value}>{when.strftime('%b')} {when.day:2d} {when.strftime('%H:%M:%S')} {host} "
    shape = rng.random()
    message = rng.choice(MESSAGES[:-1])
    if shape < 0.5:
        app, pid = word("abcdefghijklmnopqrstuvwxyz-_.", 2, 12), rng.randrange(1, 99999)
        fields.update(app=app, pid=pid)
        line += f"{app}[{pid}]: {message}"
    elif shape < 0.8:
        app = rng.choice(["kernel", "CRON", "sshd", word()])
        fields["app"] = app
        line += f"{app}: {message}"
    else:
        message = rng.choice(["Use the BFG!", "link up on port 7", "%LINK-3-UPDOWN: Interface Gi0/1, changed state"])
    fields["message"] = message
    return line + ("" if shape < 0.8 else message), fields


# MARK: - logfmt, CSV, regex, time

def logfmt_line():
    fields = {}
    pairs = []
    for _ in range(rng.randint(1, 7)):
        key = rng.choice(["level", "msg", "ts", "caller", "err", "duration", "path", "user", word("abcdefghij_.-", 1, 8)])
        if key in fields:
            continue
        shape = rng.random()
        if shape < 0.1:
            fields[key] = True
            pairs.append(key)
            continue
        if shape < 0.55:
            value = rng.choice([word(), str(rng.randrange(10**6)), "1.5s", "a=b", "C:\\x", "/v1/items?id=3"])
            pairs.append(f"{key}={value}")
        else:
            value = rng.choice(["two words", 'stopping "fetcher"', "back\\slash", "", "line\nbreak", "tab\there",
                                "Grüße aus Köln", "x=y z"])
            # As Go's logfmt encoders write a quoted value: \\ and \" escaped, \n \r \t written as escapes.
            escaped = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
                       .replace("\t", "\\t"))
            pairs.append(f'{key}="{escaped}"')
        fields[key] = value
    return rng.choice([" ", " ", "  "]).join(pairs), fields


def csv_line():
    record = []
    for _ in range(rng.randint(1, 8)):
        record.append(rng.choice([word(), str(rng.randrange(-1000, 10**6)), "", "with, comma", 'say "hi"',
                                  " padded ", "Grüße", "x;y"]))
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(record)
    return out.getvalue(), record


APP_PATTERN = (r"^(?P<time>\S+) (?P<level>[A-Z]+) service=(?P<service>[\w-]+)(?: req=(?P<req>\d+))?"
               r"(?: took=(?P<took>\d+)ms)? path=(?P<path>\S+)$")


def app_line():
    level = rng.choice(["INFO"] * 8 + ["WARN", "ERROR", "FATAL", "DEBUG"])
    line = f"{rfc3339(moment())} {level} service=api-{rng.randrange(9)}"
    if rng.random() < 0.8:
        line += f" req={rng.randrange(10**6)}"
    if rng.random() < 0.8:
        line += f" took={rng.randrange(1, 5000)}ms"
    line += f" path={path()}"
    match = re.match(APP_PATTERN, line)
    return line, match.groupdict()


# Formats as Python's strftime writes them; each case reads one. A zone-less time is UTC.
TIME_FORMATS = {
    "access log": "%d/%b/%Y:%H:%M:%S %z",
    "ISO with fraction": "%Y-%m-%dT%H:%M:%S.%f%z",
    "plain UTC": "%Y-%m-%d %H:%M:%S",
    "HTTP date": "%a, %d %b %Y %H:%M:%S GMT",
    "12-hour clock": "%m/%d/%Y %I:%M:%S %p",
    "day of year": "%Y %j %H:%M",
    "month name": "%d %B %Y %H:%M",
}


def time_line(name):
    def make():
        layout = TIME_FORMATS[name]
        zoned = "%z" in layout
        when = moment().astimezone(zone() if zoned else timezone.utc)
        if "%f" not in layout:
            when = when.replace(microsecond=0)
        if "%S" not in layout:
            when = when.replace(second=0)
        millis = int(when.replace(microsecond=0).timestamp()) * 1000 + when.microsecond // 1000
        return when.strftime(layout), millis
    return make


def key_value_line():
    fields = {}
    pairs = []
    for _ in range(rng.randint(1, 6)):
        key = rng.choice(["host", "user id", "status", "path", word()])
        if key in fields:
            continue
        if rng.random() < 0.6:
            value = rng.choice([word(), str(rng.randrange(10**5)), "a=b", "x y"])
            pairs.append(rng.choice(["", " "]) + f"{key}{rng.choice(['=', ' = ', '= '])}{value}")
        else:
            value = rng.choice(["two; words", 'say "hi"', "", "tab\there"])
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            pairs.append(f'{key}="{escaped}"')
        fields[key] = value
    # Runs of the field separator count as one.
    return rng.choice([";", "; ", ";;"]).join(pairs), fields


# MARK: - Cases

BROKEN = {
    "parse_combined_log": ['127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326',
                           '10.0.0.1 - - [31/Foo/2020:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-"'],
    "parse_common_log": ['10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" two 2326',
                         "just some text"],
    "parse_syslog": ["no priority here", "<200>1 2003-10-11T22:14:15Z h a - - -", "<34>Foo 11 22:14:15 h x"],
    "parse_logfmt": ['a="never closed', '=value'],
    "parse_csv": ['"open', 'a"b'],
    "parse_regex": ["2026-11-30T12:00:00.000Z info service=x path=/"],
    "parse_time": ["30/Nov/2026 12:00:00", "31/Foo/2026:12:00:00 +0000", "31/Feb/2026:12:00:00 +0000",
                   "2026-02-29T10:00:00.5+0000", "2026-04-31 08:00:00", "Sun, 31 Jun 2026 10:00:00 GMT",
                   "13/01/2026 01:00:00 AM", "2026 367 10:00", "2026 366 10:00", "30 February 2026 10:00"],
    "parse_key_value": ['a="open; b=1'],
}


def case(name, expression, make, function):
    lines, expected, seen = [], [], set()
    while len(lines) < COUNT:
        line, fields = make()
        if line in seen:
            continue
        seen.add(line)
        lines.append(line)
        expected.append(fields)
    for broken in BROKEN[function]:
        lines.insert(rng.randrange(len(lines) + 1), broken)
        expected.insert(lines.index(broken), None)
    return {"name": name, "expression": expression, "lines": lines, "expected": expected}


def record():
    """One application record: its lines, the first a start line."""
    when = moment(datetime(2026, 11, 30, tzinfo=timezone.utc), 1)
    level = rng.choice(["INFO"] * 6 + ["WARN", "ERROR", "ERROR"])
    first = f"{when.strftime('%Y-%m-%d %H:%M:%S')}.{when.microsecond // 1000:03d} {level} [worker-{rng.randrange(8)}] "
    if level != "ERROR":
        return [first + rng.choice(MESSAGES[:-1])]
    shape = rng.random()
    if shape < 0.5:
        lines = [first + "request failed", f"java.lang.IllegalStateException: state {word()}"]
        for depth in range(rng.choice([1, 3, 8, 20, 60, 130])):
            lines.append(f"\tat com.example.{word().capitalize()}.{word()}({word().capitalize()}.java:{rng.randrange(1, 900)})")
            if rng.random() < 0.05:
                lines.append(f"Caused by: java.io.IOException: {word()} 2026-11-30 not a start")
        lines.append(f"\t... {rng.randrange(1, 40)} more")
    elif shape < 0.9:
        lines = [first + "handler crashed", "Traceback (most recent call last):"]
        for depth in range(rng.choice([1, 2, 5, 45])):
            lines.append(f'  File "/srv/app/{word()}.py", line {rng.randrange(1, 500)}, in {word()}')
            lines.append(f"    {word()}({word()}, ü={rng.randrange(99)})")
        lines += ["", f"ValueError: {word()}"]
    else:
        # A dump with lines of several KiB: over max_bytes in a few lines.
        lines = [first + "payload dump"] + ["x" * rng.randrange(500, 3000) for _ in range(rng.randint(1, 6))]
    return lines


def assemble(lines, max_lines=40, max_bytes=4096):
    """The README's rules: a start line begins an event; another line joins the open one with a newline, unless
    that would pass max_lines or max_bytes, which cuts it (counted) and begins the next; at the end, the open event
    is emitted."""
    start = re.compile(r"^\d{4}-\d{2}-\d{2} ")
    events, pending, count, cuts, joined = [], None, 0, 0, 0
    for line in lines:
        size = len(line.encode())
        if pending is None or start.match(line):
            if pending is not None:
                events.append(pending)
            pending, count = line, 1
        elif count + 1 > max_lines or len(pending.encode()) + 1 + size > max_bytes:
            cuts += 1
            events.append(pending)
            pending, count = line, 1
        else:
            pending += "\n" + line
            count += 1
            joined += 1
    if pending is not None:
        events.append(pending)
    return events, cuts, joined


if MULTILINE:
    lines = ["    at a continuation before any record", "Traceback (most recent call last):"]
    for _ in range(COUNT):
        lines += record()
    events, cuts, joined = assemble(lines)
    json.dump({"input": "\n".join(lines) + "\n", "events": events, "cuts": cuts, "joined": joined}, sys.stdout,
              ensure_ascii=False)
    sys.exit(0)

cases = [
    case("combined access log", "parse_combined_log(.message)", lambda: access_line(True), "parse_combined_log"),
    case("common access log", "parse_common_log(.message)", lambda: access_line(False), "parse_common_log"),
    case("RFC 5424 syslog", "parse_syslog(.message)", syslog5424_line, "parse_syslog"),
    case("RFC 3164 syslog", "parse_syslog(.message)", syslog3164_line, "parse_syslog"),
    case("logfmt", "parse_logfmt(.message)", logfmt_line, "parse_logfmt"),
    case("CSV", "parse_csv(.message)", csv_line, "parse_csv"),
    case("named captures", "parse_regex(.message, " + json.dumps(APP_PATTERN) + ")", app_line, "parse_regex"),
    case("key=value; ...", 'parse_key_value(.message, ";", "=")', key_value_line, "parse_key_value"),
] + [
    case(f"time: {name}", "parse_time(.message, " + json.dumps(layout.replace(" GMT", " %Z")) + ")", time_line(name),
         "parse_time")
    for name, layout in TIME_FORMATS.items()
]
json.dump(cases, sys.stdout, ensure_ascii=False)
