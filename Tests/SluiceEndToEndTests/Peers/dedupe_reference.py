#!/usr/bin/python3
"""An independent computation of Sluice's `dedupe` transform without a TTL, for the end-to-end tests (standard
library only).

    dedupe_reference.py generate --seed S --count N --fields F --values V > input.jsonl
        N events numbered by `i`, each with up to F key fields `f0`.. drawn from V integers, short strings
        (one with a non-ASCII letter), booleans, null, or missing (seeded).

    dedupe_reference.py compute --fields F --max-keys K < input.jsonl > kept.txt
        The `i` of each event dedupe keeps, a line each. An event's key is its fields' values as JSON text, a
        missing field as null; an LRU cache of at most K keys, in which every sighting, kept or not, makes the key
        the most recently seen, and the least recently seen is forgotten beyond K (README, "dedupe").
"""
import argparse, json, random, sys
from collections import OrderedDict

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=["generate", "compute"])
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--count", type=int, default=1000)
parser.add_argument("--fields", type=int, default=1)
parser.add_argument("--values", type=int, default=7)
parser.add_argument("--max-keys", type=int, default=100000)
args = parser.parse_args()
names = ["f%d" % index for index in range(args.fields)]


def generate():
    rng = random.Random(args.seed)
    for index in range(args.count):
        event = {"i": index}
        for name in names:
            kind = rng.random()
            if kind < 0.5:
                event[name] = rng.randrange(args.values)
            elif kind < 0.75:
                event[name] = rng.choice(["a", "b", "é", "a b"])
            elif kind < 0.85:
                event[name] = None
            elif kind < 0.92:
                event[name] = rng.choice([True, False])
        sys.stdout.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")


def compute():
    cache = OrderedDict()
    for line in sys.stdin:
        event = json.loads(line)
        key = tuple(json.dumps(event.get(name), ensure_ascii=False, separators=(",", ":")) for name in names)
        if key in cache:
            cache.move_to_end(key)
            continue
        cache[key] = True
        if len(cache) > args.max_keys:
            cache.popitem(last=False)
        sys.stdout.write("%d\n" % event["i"])


generate() if args.mode == "generate" else compute()
