"""What Benchmarks/run and Benchmarks/compare share: the suite's data and the pipelines both measure, so that a
change compared between two builds is measured on what the suite reports."""
import subprocess

# The suite's data: seeded simulator readings of about 183 bytes, with the spikes that scenario 3's filter keeps.
SIMULATOR = ('sim: {type: simulator, devices: 1000, rate: max, count: %d, seed: 42, start_time: "2026-11-30T12:00:00Z",'
             ' anomalies: {spike_probability: 0.05, dropout_probability: 0.005}}')

STDIN_TO_BLACKHOLE = "sources:\n  in: {type: stdin}\nsinks:\n  out: {type: blackhole, inputs: [in]}"

FILTER_MAP = """sources:
  in: {type: stdin}
transforms:
  hot: {type: filter, inputs: [in], condition: ".temperature > 30"}
  f: {type: map, inputs: [hot], set: {temp_f: ".temperature * 9 / 5 + 32"}}
sinks:
  out: {type: stdout, inputs: [f]}"""

AGGREGATE = """sources:
  in: {type: stdin}
transforms:
  windows:
    type: aggregate
    inputs: [in]
    group_by: [.device]
    window: {type: tumbling, size_secs: 10}
    time: {field: .ts}
    aggregations:
      readings: count()
      avg_temp: avg(.temperature)
      max_temp: max(.temperature)
      p95_temp: percentile(.temperature, 95)
sinks:
  out: {type: stdout, inputs: [windows]}"""


def simulator_source(count):
    """The simulator at full speed as a pipeline's `sources`: `count` readings from 1,000 devices."""
    return (f"sources:\n  sim: {{type: simulator, devices: 1000, rate: max, count: {count}, seed: 1,"
            f" start_time: '2026-11-30T12:00:00Z'}}\n")


def simulator_to_blackhole(count):
    return simulator_source(count) + "sinks:\n  out: {type: blackhole, inputs: [sim]}"


def write_pipeline(path, text, interval=0):
    """Writes pipeline `text` to `path` with a final JSON metrics report (and one every `interval` seconds)."""
    with open(path, "w") as out:
        out.write(text + f"\nmetrics: {{interval_secs: {interval}, to: stderr, format: json}}\n")
    return path


def generate(sluice, pipeline_path, data_path, count):
    """Writes `count` of the suite's events to `data_path` with the `sluice` binary; `pipeline_path` is where the
    generating pipeline goes."""
    write_pipeline(pipeline_path, f"sources:\n  {SIMULATOR % count}\nsinks:\n  out: {{type: stdout, inputs: [sim]}}")
    with open(data_path, "wb") as out:
        subprocess.run([sluice, "run", pipeline_path], stdout=out, stderr=subprocess.DEVNULL, check=True)
    return data_path
