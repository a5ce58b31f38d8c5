#!/usr/bin/python3
"""An independent Kafka peer for Sluice's end-to-end tests and benchmarks (Debian's python3-confluent-kafka).

It hosts librdkafka's mock cluster (3 brokers speaking the Kafka protocol on 127.0.0.1 ports; it lives as long as
this process and auto-creates a topic with 4 partitions on first use), prints "BROKERS host:port,..." and then
answers commands, one per line on stdin, with one JSON line on stdout each. TOPICS is one topic or several
separated by commas: the mock keeps only about the last 5 MB of a partition (older messages are gone), so a large
test spreads its messages over several topics.

  produce TOPICS N [KEYS [FIRST]] N messages {"n": i, "key": "k<i % KEYS>", "device": "d-<i % KEYS>",
                                  "temperature": i % 40 + 0.5, "lane": i % T, "pad": ...} with key k<i % KEYS>,
                                  message i to topic i % T of the T TOPICS, for i from FIRST (0); answers
                                  {"produced": N, "seconds": s}
  check TOPICS N [SECS]            reads TOPIC from the start (a fresh group) until N distinct values of "n" came and
                                  then nothing for a second, or nothing came for SECS seconds (default 20); answers count, distinct n, the
                                  duplicates, up to 10 missing n below N, order_violations: messages whose n is
                                  not above the previous one of the same key in the same partition, among first
                                  deliveries (a redelivery after a crash repeats a run of earlier n), and truncated:
                                  the partitions ("topic/p") whose oldest messages the mock dropped
  committed GROUP TOPICS          the group's committed offset per partition of TOPICS, and their sum
  consume TOPICS N                a plain consumer (librdkafka under Python), reading N messages from the start as
                                  fast as it can; answers {"count": n, "seconds": s} (the benchmarks' reference)
  spread TOPIC                    how many messages each partition of TOPIC holds (its end offset):
                                  {"messages": {"0": n0, "1": n1, ...}}
  visit GROUP TOPICS SECS         joins GROUP (cooperative-sticky, as Sluice) for SECS seconds (and until it has
                                  been given partitions once, at most a minute longer), reading what it is given and
                                  committing nothing, then leaves: its partitions go back to the others;
                                  answers {"held": the most partitions it held, "read": messages read}
  down                            (with --controllable) every broker closes its connections and refuses new ones, as
                                  a cluster being restarted does; answers {"down": 3}
  up                              (with --controllable) the brokers accept connections again; answers {"up": 3}
  holdsync GROUP SECS             (with --controllable) makes broker 1 GROUP's coordinator and holds back its answer
                                  to the next SyncGroup for SECS seconds: a member that asks has joined the group
                                  and has no assignment until then; answers {"held": 1}
  syncheld                        (with --controllable) whether that SyncGroup is still to come: {"waiting": 1 or 0}
  quit                            ends the process (the cluster goes with it)

Every loop is bounded by a deadline; the process ends by itself after --lifetime seconds.
"""
import argparse, json, signal, sys, threading, time, uuid

import confluent_kafka

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

parser = argparse.ArgumentParser()
parser.add_argument("--lifetime", type=float, default=600)
parser.add_argument("--pad", type=int, default=0, help="bytes of padding in each produced message")
parser.add_argument("--controllable", action="store_true",
                    help="host the cluster through librdkafka's C API (ctypes), so that its brokers can go down and up")
arguments = parser.parse_args()

threading.Timer(arguments.lifetime, lambda: (sys.stdout.flush(), __import__("os")._exit(3))).start()

BROKER_IDS = (1, 2, 3)
if arguments.controllable:
    # The Python client does not expose the mock cluster's handle; librdkafka's C API does: a client of our own
    # (never used to produce) hosts a cluster whose brokers rd_kafka_mock_broker_set_down/_up control.
    import ctypes
    rdkafka = ctypes.CDLL("librdkafka.so.1")
    rdkafka.rd_kafka_conf_new.restype = ctypes.c_void_p
    rdkafka.rd_kafka_new.restype = ctypes.c_void_p
    rdkafka.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    rdkafka.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    rdkafka.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    rdkafka.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    rdkafka.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    for name in ("rd_kafka_mock_broker_set_down", "rd_kafka_mock_broker_set_up"):
        getattr(rdkafka, name).argtypes = [ctypes.c_void_p, ctypes.c_int32]
        getattr(rdkafka, name).restype = ctypes.c_int
    rdkafka.rd_kafka_mock_coordinator_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                      ctypes.c_int32]
    rdkafka.rd_kafka_mock_coordinator_set.restype = ctypes.c_int
    # Variadic after the count: (error, delay in ms) pairs, passed as C ints.
    rdkafka.rd_kafka_mock_broker_push_request_error_rtts.restype = ctypes.c_int
    rdkafka.rd_kafka_mock_broker_error_stack_cnt.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int16,
                                                             ctypes.POINTER(ctypes.c_size_t)]
    rdkafka.rd_kafka_mock_broker_error_stack_cnt.restype = ctypes.c_int
    SYNC_GROUP = 14
    reason = ctypes.create_string_buffer(512)
    host = rdkafka.rd_kafka_new(0, rdkafka.rd_kafka_conf_new(), reason, len(reason))
    if not host:
        raise SystemExit("cannot make a librdkafka client: " + reason.value.decode())
    mock = rdkafka.rd_kafka_mock_cluster_new(host, len(BROKER_IDS))
    if not mock:
        raise SystemExit("cannot make a mock cluster")
    brokers = rdkafka.rd_kafka_mock_cluster_bootstraps(mock).decode()
else:
    cluster = confluent_kafka.Producer({"test.mock.num.brokers": 3})
    brokers = ",".join(f"{b.host}:{b.port}" for b in cluster.list_topics(timeout=10).brokers.values())
print("BROKERS " + brokers, flush=True)


def answer(value):
    print(json.dumps(value), flush=True)


def produce(topics, count, keys=10, first=0):
    producer = confluent_kafka.Producer({"bootstrap.servers": brokers, "linger.ms": 5, "enable.idempotence": True})
    began = time.time()
    pad = "x" * arguments.pad
    for i in range(first, first + count):
        key = f"k{i % keys}"
        lane = i % len(topics)
        value = json.dumps({"n": i, "key": key, "device": f"d-{i % keys}", "temperature": i % 40 + 0.5, "lane": lane,
                            "pad": pad}, separators=(",", ":")).encode()
        while True:
            try:
                producer.produce(topics[lane], key=key, value=value)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(60)
    answer({"produced": count - left, "seconds": time.time() - began})


def consumer(group=None):
    return confluent_kafka.Consumer({
        "bootstrap.servers": brokers, "group.id": group or f"check-{uuid.uuid4()}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False})


def check(topics, count, idle_secs=20.0):
    reader = consumer()
    reader.subscribe(topics)
    seen = {}
    last = {}
    violations = 0
    total = 0
    deadline = time.time() + 600
    quiet_since = time.time()
    # Until every n came, then on until the topic has been quiet for a second (duplicates may follow).
    while time.time() < deadline and time.time() - quiet_since < (idle_secs if len(seen) < count else 1.0):
        messages = reader.consume(10000, 0.5)
        if messages:
            quiet_since = time.time()
        for message in messages:
            if message.error():
                continue
            total += 1
            event = json.loads(message.value())
            n = event["n"]
            first = n not in seen
            seen[n] = seen.get(n, 0) + 1
            slot = (message.topic(), message.partition(), event.get("key"))
            if first:
                if slot in last and last[slot] >= n:
                    violations += 1
                last[slot] = n
    # A partition whose log no longer starts at 0 lost its oldest messages to the mock's limit, not to the tested
    # program: said apart, so that a test can tell the two.
    truncated = [f"{tp.topic}/{tp.partition}" for tp in reader.assignment()
                 if reader.get_watermark_offsets(tp, timeout=10)[0] > 0]
    reader.close()
    missing = [n for n in range(count) if n not in seen][:10]
    answer({"count": total, "distinct": len(seen), "duplicates": total - len(seen), "missing": missing,
            "order_violations": violations, "truncated": truncated})


def committed(group, topics):
    reader = consumer(group)
    wanted = [confluent_kafka.TopicPartition(topic, p) for topic in topics
              for p in sorted(reader.list_topics(topic, timeout=10).topics[topic].partitions)]
    offsets = {f"{tp.topic}/{tp.partition}": tp.offset for tp in reader.committed(wanted, timeout=10)}
    reader.close()
    answer({"offsets": offsets, "sum": sum(o for o in offsets.values() if o >= 0)})


def visit(group, topics, secs):
    member = confluent_kafka.Consumer({
        "bootstrap.servers": brokers, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "partition.assignment.strategy": "cooperative-sticky",
        # As the tests' Sluice members: the mock cluster times each step of a rebalance by the session timeout of
        # the member that joined last.
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    # librdkafka before 2.3.0 aborts when a cooperative-sticky member that joined is destroyed before its first
    # assignment (confluentinc/librdkafka#4312: the assignor's state is still null), which a loaded machine can make
    # the visitor do: it stays, at most a minute longer, until it has been given one.
    assigned = []
    member.subscribe(topics, on_assign=lambda _, partitions: assigned.append(len(partitions)))
    held = read = 0
    failures = []
    deadline = time.time() + secs
    while time.time() < deadline or (not assigned and time.time() < deadline + 60):
        try:
            read += sum(1 for m in member.consume(1000, 0.2) if not m.error())
            held = max(held, len(member.assignment()))
        except confluent_kafka.KafkaException as error:
            # A call can fail while the group rebalances; the member stays in the group until its time is up.
            failures.append(str(error))
            time.sleep(0.1)
    try:
        member.close()
    except confluent_kafka.KafkaException as error:
        failures.append(f"close: {error}")
    answer({"held": held, "read": read, "failures": failures[:5]})


def consume(topics, count):
    reader = consumer()
    reader.subscribe(topics)
    total = 0
    began = None
    deadline = time.time() + 300
    while total < count and time.time() < deadline:
        messages = reader.consume(10000, 0.5)
        if messages and began is None:
            began = time.time()
        total += sum(1 for m in messages if not m.error())
    answer({"count": total, "seconds": time.time() - (began or time.time())})
    reader.close()


def spread(topic):
    reader = consumer()
    partitions = sorted(reader.list_topics(topic, timeout=10).topics[topic].partitions)
    ends = {str(p): reader.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)[1]
            for p in partitions}
    reader.close()
    answer({"messages": ends})


def serve(command, rest):
    if command == "produce":
        produce(rest[0].split(","), int(rest[1]), *(int(w) for w in rest[2:4]))
    elif command == "check":
        check(rest[0].split(","), int(rest[1]), *(float(w) for w in rest[2:3]))
    elif command == "committed":
        committed(rest[0], rest[1].split(","))
    elif command == "visit":
        visit(rest[0], rest[1].split(","), float(rest[2]))
    elif command == "spread":
        spread(rest[0])
    elif command == "consume":
        consume(rest[0].split(","), int(rest[1]))
    elif command in ("down", "up") and arguments.controllable:
        change = rdkafka.rd_kafka_mock_broker_set_down if command == "down" else rdkafka.rd_kafka_mock_broker_set_up
        answer({command: sum(1 for broker in BROKER_IDS if change(mock, broker) == 0)})
    elif command == "holdsync" and arguments.controllable:
        # No error (0), answered after the delay.
        set_coordinator = rdkafka.rd_kafka_mock_coordinator_set(mock, b"group", rest[0].encode(), 1)
        pushed = rdkafka.rd_kafka_mock_broker_push_request_error_rtts(
            ctypes.c_void_p(mock), ctypes.c_int32(1), ctypes.c_int16(SYNC_GROUP), ctypes.c_size_t(1),
            ctypes.c_int(0), ctypes.c_int(int(float(rest[1]) * 1000)))
        answer({"held": 1} if set_coordinator == 0 and pushed == 0 else {"error": f"{set_coordinator} {pushed}"})
    elif command == "syncheld" and arguments.controllable:
        count = ctypes.c_size_t(0)
        code = rdkafka.rd_kafka_mock_broker_error_stack_cnt(mock, 1, SYNC_GROUP, ctypes.byref(count))
        answer({"waiting": count.value} if code == 0 else {"error": code})
    else:
        answer({"error": f"unknown command {command}"})


for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "quit":
        break
    try:
        serve(words[0], words[1:])
    except Exception as error:
        # A command that fails is answered, and the cluster lives on for the test's next command.
        answer({"error": f"{words[0]}: {type(error).__name__}: {error}"})
sys.stdout.flush()
__import__("os")._exit(0)
