#!/usr/bin/python3
"""An independent computation of Sluice's `aggregate` transform, for the end-to-end tests (standard library only).

    aggregate_reference.py prepare [--stretch K] [--seed S --late N] [--keep-mod M --keep-below B] < in > out
        Stretches the readings' times K-fold from the first (the simulator's virtual clock runs at 1 ms a reading);
        with a seed, moves each reading up to a few places out of order (within the lateness the tests allow) and
        inserts N copies of early readings far after their time (late beyond any lateness), deterministically; with
        --keep-mod, keeps only the readings whose seq % M < B (gaps, for sessions).

    aggregate_reference.py generate --seed S --count N > input.jsonl
        N random events (seeded) of one to four devices: times that mostly advance by up to 7 s, now and then jump
        by up to 40 s, and two in five lag behind by up to 3 or 15 s (far out of order); temperatures that are
        integers, decimals, null or missing.

    aggregate_reference.py compute --config CONFIG.json < input.jsonl > expected.jsonl
        Computes what the aggregate should emit for the input in arrival order. A line {"__flush__": true} stands for
        the moment the test let the input go idle (every open window is emitted, as idle_flush does), and
        {"__stop__": true} for a stop (what is open is emitted with "partial": true, and nothing after it counts).
        CONFIG: {"window": "tumbling"|"hopping"|"session", "size": ms, "hop": ms, "gap": ms, "lateness": ms,
                 "time": "ts", "group_by": ["device"], "aggregations": [[name, function, field, parameter], ...]}
        The last line written is {"__late__": n, "__errors__": n}.

The semantics follow the README: event time from RFC 3339 text or epoch milliseconds; the watermark is the largest
time seen minus the lateness, advanced event by event; a window [start, end) closes when the watermark reaches its
end; an event whose windows have all closed is late; output in window-end order, groups in first-seen order within a
window, and sessions ending together in the order they began. Percentiles here are exact (the item at rank floor(q (n - 1))) and distinct counts exact; the tests allow
Sluice's sketches their stated error.
"""
import argparse, datetime, json, math, random, sys

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=["prepare", "generate", "compute"])
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--stretch", type=int, default=1)
parser.add_argument("--late", type=int, default=0)
parser.add_argument("--count", type=int, default=300)
parser.add_argument("--config")
parser.add_argument("--keep-mod", type=int, default=0, help="with --keep-below: keep readings with seq % mod < below")
parser.add_argument("--keep-below", type=int, default=0)
args = parser.parse_args()


def prepare():
    lines = [line for line in sys.stdin.read().split("\n") if line]
    if args.stretch != 1:
        start = parse_time(json.loads(lines[0])["ts"])
        stretched = []
        for line in lines:
            reading = json.loads(line)
            reading["ts"] = fmt_time(start + (parse_time(reading["ts"]) - start) * args.stretch)
            stretched.append(json.dumps(reading, separators=(",", ":")))
        lines = stretched
    if args.keep_mod:
        # Gaps per device (for sessions): keep a run of readings, then drop the rest of each cycle.
        lines = [line for line in lines if json.loads(line)["seq"] % args.keep_mod < args.keep_below]
    if not args.seed:
        sys.stdout.write("\n".join(lines) + "\n")
        return
    rng = random.Random(args.seed)    # Swap neighbours at random distances up to 5: out of order by at most a few readings.
    for index in range(len(lines)):
        other = min(len(lines) - 1, index + rng.randint(0, 5))
        lines[index], lines[other] = lines[other], lines[index]
    # Late copies of readings from the first tenth, put in the last tenth.
    for _ in range(args.late):
        early = lines[rng.randrange(len(lines) // 10)]
        lines.insert(len(lines) - rng.randrange(len(lines) // 10), early)
    sys.stdout.write("\n".join(lines) + "\n")


def generate():
    rng = random.Random(args.seed)
    t = 1_796_040_000_000 + rng.randrange(5000)
    devices = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    for _ in range(args.count):
        t += rng.choice([0, 0, 1, 10, 100, 300, 1000, 2500, 7000]) if rng.random() < 0.97 else rng.randint(8000, 40000)
        lag = rng.choice([0, 0, 0, rng.randint(0, 3000), rng.randint(0, 15000)])
        event = {"device": rng.choice(devices), "ts": t - lag}
        kind = rng.random()
        if kind < 0.6:
            event["temperature"] = rng.randint(-50, 50)
        elif kind < 0.85:
            event["temperature"] = round(rng.uniform(-100, 100), rng.randint(0, 3))
        elif kind < 0.93:
            event["temperature"] = None
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")


def parse_time(value):
    if isinstance(value, str):
        text = value.replace("Z", "+00:00")
        return int(round(datetime.datetime.fromisoformat(text).timestamp() * 1000))
    return int(value)


def fmt_time(millis):
    moment = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (millis % 1000)


class State:
    def __init__(self, group, start, end, order):
        self.group, self.start, self.end, self.order = group, start, end, order
        self.last_time = start
        self.items = []  # (time, arrival, event)

    def merge(self, other):
        self.start = min(self.start, other.start)
        self.last_time = max(self.last_time, other.last_time)
        self.items += other.items


def numeric(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def results(state, aggregations):
    out = {}
    ordered = sorted(state.items, key=lambda item: (item[0], item[1]))
    for name, function, field, parameter in aggregations:
        values = [(t, a, e.get(field)) for t, a, e in ordered] if field else []
        present = [(t, a, v) for t, a, v in values if v is not None]
        numbers = [v for _, _, v in present]
        if function == "count":
            out[name] = len(state.items) if not field else len(present)
        elif function == "sum":
            if not numbers:
                out[name] = None
            elif all(isinstance(v, int) for v in numbers):
                out[name] = sum(numbers)
            else:
                out[name] = math.fsum(numbers)
        elif function == "avg":
            out[name] = math.fsum(numbers) / len(numbers) if numbers else None
        elif function in ("min", "max"):
            out[name] = (min if function == "min" else max)(numbers) if numbers else None
        elif function == "first":
            out[name] = present[0][2] if present else None
        elif function == "last":
            # The latest time; among equal times, the last to arrive.
            out[name] = max(present, key=lambda item: (item[0], item[1]))[2] if present else None
        elif function == "stddev":
            if len(numbers) < 2:
                out[name] = None
            else:
                mean = math.fsum(numbers) / len(numbers)
                out[name] = math.sqrt(math.fsum((v - mean) ** 2 for v in numbers) / (len(numbers) - 1))
        elif function == "percentile":
            ranked = sorted(numbers)
            out[name] = ranked[int(math.floor(parameter / 100 * (len(ranked) - 1)))] if ranked else None
        elif function == "distinct_count":
            out[name] = len({json.dumps(v, sort_keys=True) for v in numbers or [v for _, _, v in present]})
        elif function == "collect":
            out[name] = [v for _, _, v in present][: int(parameter)]
    return out


def compute():
    config = json.load(open(args.config))
    kind = config["window"]
    size, hop, gap = config.get("size", 0), config.get("hop", config.get("size", 0)), config.get("gap", 0)
    lateness, groups, aggregations = config.get("lateness", 0), config["group_by"], config["aggregations"]
    time_field = config["time"]
    windows = {}  # (start, end) -> {group: State}
    sessions = {}  # group -> [State]
    emitted = []
    watermark = -(1 << 62)
    late = errors = 0
    arrival = 0

    def emit(state, partial):
        row = dict(zip(groups, state.group))
        row["window_start"] = fmt_time(state.start)
        row["window_end"] = fmt_time(state.end)
        row.update(results(state, aggregations))
        if partial:
            row["partial"] = True
        emitted.append(row)

    def close(limit, partial=False):
        closing = []
        if kind == "session":
            for group, states in sessions.items():
                for state in states:
                    if state.end <= limit:
                        # Sessions ending together, in the order they began: their first event's arrival.
                        closing.append((state.end, min(item[1] for item in state.items), state))
            for group in list(sessions):
                sessions[group] = [s for s in sessions[group] if s.end > limit]
                if not sessions[group]:
                    del sessions[group]
        else:
            for bounds in sorted(windows):
                if bounds[1] <= limit:
                    for state in sorted(windows[bounds].values(), key=lambda s: s.order):
                        closing.append((bounds[1], state.order, state))
                    del windows[bounds]
        for _, _, state in sorted(closing, key=lambda item: (item[0], item[1])):
            emit(state, partial)

    def latest_end():
        if kind == "session":
            return max((s.end for states in sessions.values() for s in states), default=None)
        return max((bounds[1] for bounds in windows), default=None)

    for line in sys.stdin:
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("__flush__"):
            end = latest_end()
            if end is not None:
                close(end)
                watermark = max(watermark, end)
            continue
        if event.get("__stop__"):
            end = latest_end()
            if end is not None:
                close(end, partial=True)
            break
        try:
            t = parse_time(event[time_field])
        except (KeyError, ValueError, TypeError):
            errors += 1
            continue
        if any(fn in ("sum", "avg", "min", "max", "percentile", "stddev") and event.get(field) is not None
               and not numeric(event.get(field)) for _, fn, field, _ in aggregations):
            errors += 1
            continue
        group = tuple(event.get(name) for name in groups)
        arrival += 1
        if kind == "session":
            if t + gap <= watermark:
                late += 1
                continue
            states = sessions.setdefault(group, [])
            touching = [s for s in states if s.start - gap <= t < s.end]
            if touching:
                target = touching[0]
                for other in touching[1:]:
                    target.merge(other)
                    states.remove(other)
            else:
                target = State(group, t, t + gap, arrival)
                states.append(target)
            target.start = min(target.start, t)
            target.last_time = max(target.last_time, t)
            target.end = target.last_time + gap
            target.items.append((t, arrival, event))
        else:
            step = size if kind == "tumbling" else hop
            last = (t // step) * step
            starts = [last] if kind == "tumbling" else list(range(last - size + hop, last + 1, hop))
            open_starts = [s for s in starts if s + size > watermark]
            if not open_starts:
                late += 1
                continue
            for start in open_starts:
                bucket = windows.setdefault((start, start + size), {})
                if group not in bucket:
                    bucket[group] = State(group, start, start + size, len(bucket))
                bucket[group].items.append((t, arrival, event))
        if t - lateness > watermark:
            watermark = t - lateness
            close(watermark)
    else:
        end = latest_end()
        if end is not None:
            close(end)
    for row in emitted:
        sys.stdout.write(json.dumps(row) + "\n")
    sys.stdout.write(json.dumps({"__late__": late, "__errors__": errors}) + "\n")


if args.mode == "prepare":
    prepare()
elif args.mode == "generate":
    generate()
else:
    compute()
