"""The windowing peer for Benchmarks/run: bytewax (Rust core, Timely Dataflow) doing what Sluice's aggregate does in
scenario 8: per-device tumbling 10 s windows on event time (the readings' RFC 3339 `ts`), with count, mean and
max temperature, reading the same JSON lines from a file and writing one JSON line per window to stdout.

    python bytewax_windows.py EVENTS.jsonl > windows.jsonl
"""
import json
import sys
from datetime import datetime, timedelta, timezone

import bytewax.operators as op
import bytewax.operators.windowing as win
from bytewax.connectors.files import FileSource
from bytewax.connectors.stdio import StdOutSink
from bytewax.dataflow import Dataflow
from bytewax.operators.windowing import EventClock, TumblingWindower
from bytewax.testing import run_main


def event_time(reading):
    return datetime.fromisoformat(reading["ts"].replace("Z", "+00:00"))


def fold(accumulator, reading):
    count, total, maximum = accumulator
    temperature = reading.get("temperature")
    if temperature is None:
        return (count + 1, total, maximum)
    return (count + 1, total + temperature, temperature if maximum is None else max(maximum, temperature))


def merge(left, right):
    maxima = [m for m in (left[2], right[2]) if m is not None]
    return (left[0] + right[0], left[1] + right[1], max(maxima) if maxima else None)


def render(item):
    device, (window_id, (count, total, maximum)) = item
    return json.dumps({"device": device, "window": window_id, "readings": count,
                       "avg_temp": total / count if count else None, "max_temp": maximum})


flow = Dataflow("device_windows")
readings = op.map("parse", op.input("read", flow, FileSource(sys.argv[1])), json.loads)
keyed = op.key_on("device", readings, lambda reading: reading["device"])
clock = EventClock(event_time, wait_for_system_duration=timedelta(seconds=0))
windower = TumblingWindower(length=timedelta(seconds=10), align_to=datetime(2026, 1, 1, tzinfo=timezone.utc))
windows = win.fold_window("windows", keyed, clock, windower, lambda: (0, 0.0, None), fold, merge)
op.output("write", op.map("render", windows.down, render), StdOutSink())
run_main(flow)
