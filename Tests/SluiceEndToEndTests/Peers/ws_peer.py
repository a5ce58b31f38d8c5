#!/usr/bin/python3
"""An independent WebSocket peer for Sluice's end-to-end tests (Debian's python3-websockets 10.x).

It binds 127.0.0.1 only, prints "PORT <n>" once listening, records what clients send (handshake headers,
messages, close codes) as JSON lines in --record, and ends by itself after --lifetime seconds.

Modes:
  feed    after each connection's first message (the subscribe), send --messages messages of about --size bytes,
          numbered from where the previous connection stopped, then (with --close-after) close the connection.
  trades  after each connection's first message, send --messages messages, each a JSON array of 1 to 4 trades
          ({"symbol", "price", "size", "time"}) of two symbols, 100 ms of trade time apart from 2026-11-30T12:00:00Z,
          prices a seeded random walk; then record the one-minute candles (first, max, min, last price, summed
          size, count per symbol and minute) computed here, independently, and wait.
  reject  refuse every handshake with HTTP 401.
  silent  a raw socket server that completes the handshake and then never answers anything (not even pings).
  blast   a raw socket server that sends --messages pre-encoded text frames of about --size bytes in one go (the
          fastest feeder, for measuring the client), then waits.
  frames  a raw socket server that sends the messages listed in --frames (JSON lines: "hex" payload, "opcode" 1 for
          text or 2 for binary, "fragments" to split it into) as raw frames on the first connection, and
          {"reconnected": n} on the n-th connection after it; for hostile content no library would send.
  hostile a raw socket server that misbehaves on every connection as --behaviour says:
            invalid-frames  a good message {"conn": n}, then one protocol violation (reserved opcode, RSV bit,
                            masked frame, oversized ping, stray continuation, fragmented ping, close code 999),
                            recording whether the client hung up or tolerated it (then the peer hangs up);
            close-storm     close (1000) right after the handshake and hang up;
            huge-frame      a frame header announcing 2 GiB, 64 KiB of it, then nothing;
            no-handshake    read the request and never answer it.
          Each connection is recorded with its time.
  client  connect to --url, send --messages messages (with --send), or read messages, sleeping --delay seconds
          after each, until the server closes; records each message's "seq" and the close code.
  limits  probe a server at --url that allows --clients clients: fill it, try one more (records the HTTP status),
          flood with --messages messages from one client (records its close code), and hold a raw connection
          that never sends its upgrade request (records how long until the server hangs up); then "done".
  closer  a raw client of --url: read every message for --secs seconds, then stop reading for --pause seconds, or
          until the file --close-when exists (so the server's queue for us and the TCP buffers fill), then send a
          close frame (1000) and read on (with --read-when, once that file exists), discarding data, until the
          server's close frame arrives, as browsers do; records how long that took from when it read on, and the
          code the server answered with. (Python websockets' default queue of 32 messages stops reading when
          it is full, so there a close frame behind more data is never seen.)
  churn   against a server at --url: --clients clients that each connect, read a message and leave, 10 at a time,
          while --slow clients connect (raw, 4 KiB receive buffer) and never read; records "done" with counts.
"""
import argparse, asyncio, base64, hashlib, http, json, math, signal, socket, sys, threading, time

# A parent may start us with signals blocked (a Dispatch thread's mask is inherited): let SIGTERM end us at once.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=["feed", "trades", "reject", "silent", "blast", "frames", "hostile", "client", "limits", "churn",
                                    "closer"])
parser.add_argument("--clients", type=int, default=3)
parser.add_argument("--slow", type=int, default=0)
parser.add_argument("--frames", default=None)
parser.add_argument("--behaviour", choices=["invalid-frames", "close-storm", "huge-frame", "no-handshake"])
parser.add_argument("--url", default=None)
parser.add_argument("--delay", type=float, default=0)
parser.add_argument("--send", action="store_true")
parser.add_argument("--small-window", action="store_true", help="a 4 KiB receive buffer, so TCP pushes back at once")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--messages", type=int, default=10)
parser.add_argument("--size", type=int, default=0)
parser.add_argument("--start", type=int, default=0)
parser.add_argument("--record", default=None)
parser.add_argument("--lifetime", type=float, default=60)
parser.add_argument("--certfile", default=None)
parser.add_argument("--keyfile", default=None)
parser.add_argument("--close-after", action="store_true")
parser.add_argument("--secs", type=float, default=2)
parser.add_argument("--pause", type=float, default=0)
parser.add_argument("--close-when", default=None, help="closer: pause until this file exists, then close")
parser.add_argument("--read-when", default=None,
                    help="closer: after sending the close, read nothing until this file exists")
args = parser.parse_args()

record_lock = threading.Lock()


def record(entry):
    if args.record:
        with record_lock, open(args.record, "a") as out:
            out.write(json.dumps(entry) + "\n")


def announce(port):
    print(f"PORT {port}", flush=True)


def frame(opcode, payload, final=True):
    """One unmasked server-to-client frame."""
    first = (0x80 if final else 0) | opcode
    if len(payload) < 126:
        header = bytes([first, len(payload)])
    elif len(payload) < 65536:
        header = bytes([first, 126]) + len(payload).to_bytes(2, "big")
    else:
        header = bytes([first, 127]) + len(payload).to_bytes(8, "big")
    return header + payload


def message_frames(opcode, payload, fragments):
    """A message as `fragments` frames: the first carries the opcode, the rest are continuations."""
    if fragments <= 1:
        return frame(opcode, payload)
    step = max(1, -(-len(payload) // fragments))
    pieces = [payload[i:i + step] for i in range(0, len(payload), step)] or [b""]
    return b"".join(frame(opcode if i == 0 else 0, piece, i == len(pieces) - 1) for i, piece in enumerate(pieces))


VIOLATIONS = [
    bytes([0x83, 0x00]),                                    # reserved opcode 3
    bytes([0xC1, 0x01, 0x61]),                              # RSV1 without an extension
    bytes([0x81, 0x81, 1, 2, 3, 4, 0x61 ^ 1]),              # a masked frame from the server
    bytes([0x89, 0x7E, 0x00, 0x7E]) + b"p" * 126,           # a ping longer than 125 bytes
    bytes([0x80, 0x01, 0x61]),                              # a continuation with nothing to continue
    bytes([0x09, 0x00]),                                    # a fragmented ping
    bytes([0x88, 0x02, 0x03, 0xE7]),                        # close code 999
]


def hostile(conn, index):
    """Misbehaves on connection `index` as --behaviour says; returns False to hang up at once."""
    if args.behaviour == "invalid-frames":
        conn.sendall(frame(1, json.dumps({"conn": index}).encode()) + VIOLATIONS[index % len(VIOLATIONS)])
        # A strict client hangs up; one that tolerates the violation is hung up on after a second.
        conn.settimeout(1)
        try:
            while conn.recv(4096):
                pass
            record({"event": "client closed", "violation": index % len(VIOLATIONS)})
        except socket.timeout:
            record({"event": "tolerated", "violation": index % len(VIOLATIONS)})
        return False
    elif args.behaviour == "close-storm":
        conn.sendall(frame(8, (1000).to_bytes(2, "big")))
        return False
    elif args.behaviour == "huge-frame":
        conn.sendall(bytes([0x82, 127]) + (2 << 30).to_bytes(8, "big") + b"z" * 65536)
    return True


def raw_server():
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen()
    listener.settimeout(args.lifetime)
    announce(listener.getsockname()[1])
    deadline = time.time() + args.lifetime
    connections = []
    while time.time() < deadline:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            break
        try:
            keep = serve_raw(conn, len(connections))
        except OSError:  # the client hung up first: that is its right
            keep = False
        connections.append(conn if keep else None)  # kept open, never read or answered
        if not keep:
            conn.close()


def serve_raw(conn, index):
    """Handshakes (unless told not to) and acts out the mode on one raw connection; False to hang up."""
    request = b""
    while b"\r\n\r\n" not in request:
        chunk = conn.recv(4096)
        if not chunk:
            return False
        request += chunk
    if args.mode == "hostile" and args.behaviour == "no-handshake":
        record({"event": "connected", "at": time.time()})
        return True
    key = [l.split(b":", 1)[1].strip() for l in request.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")]
    accept = base64.b64encode(hashlib.sha1(key[0] + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    record({"event": "connected", "at": time.time()})
    if args.mode == "blast":
        frames = bytearray()
        for n in range(args.messages):
            body = json.dumps({"n": n, "pad": "x" * max(0, args.size - 20)}).encode()
            frames += frame(1, body)
        start = time.time()
        conn.sendall(frames)
        record({"event": "sent", "messages": args.messages, "secs": time.time() - start})
    elif args.mode == "hostile":
        return hostile(conn, index)
    elif args.mode == "frames":
        if index == 0:
            with open(args.frames) as listing:
                for line in listing:
                    spec = json.loads(line)
                    conn.sendall(message_frames(spec["opcode"], bytes.fromhex(spec["hex"]), spec.get("fragments", 1)))
        else:
            conn.sendall(frame(1, json.dumps({"reconnected": index}).encode()))
        record({"event": "sent"})
    return True


async def main():
    import ssl
    import websockets

    sent = {"next": args.start}

    async def trades(ws):
        import random
        rng = random.Random(args.start or 1)
        prices = {"BTC-USD": 91000.0, "ETH-USD": 3100.0}
        start = 1796040000000  # 2026-11-30T12:00:00Z
        candles = {}
        clock = 0
        for _ in range(args.messages):
            batch = []
            for _ in range(rng.randint(1, 4)):
                symbol = rng.choice(sorted(prices))
                prices[symbol] = round(prices[symbol] * (1 + rng.uniform(-0.001, 0.001)), 2)
                size = round(rng.uniform(0.001, 2), 3)
                millis = start + clock * 100
                clock += 1
                moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + ".%03dZ" % (millis % 1000)
                batch.append({"symbol": symbol, "price": prices[symbol], "size": size, "time": moment})
                key = (millis // 60000, symbol)
                candle = candles.setdefault(key, {"open": prices[symbol], "high": prices[symbol], "low": prices[symbol],
                                                  "volume": [], "trades": 0})
                candle["high"] = max(candle["high"], prices[symbol])
                candle["low"] = min(candle["low"], prices[symbol])
                candle["close"] = prices[symbol]
                candle["volume"].append(size)
                candle["trades"] += 1
            await ws.send(json.dumps(batch))
        rows = []
        for (minute, symbol), candle in sorted(candles.items()):
            candle["volume"] = math.fsum(candle["volume"])
            rows.append({"symbol": symbol, "minute": minute * 60000, **candle})
        record({"event": "candles", "rows": rows})

    async def handler(ws, path):
        record({"event": "connected", "path": path, "headers": dict(ws.request_headers)})
        try:
            first = await ws.recv()
            record({"event": "message", "data": first})
            if args.mode == "trades":
                await trades(ws)
                await asyncio.sleep(args.lifetime)
                return
            for _ in range(args.messages):
                n = sent["next"]
                sent["next"] += 1
                body = json.dumps({"n": n, "pad": "x" * max(0, args.size - 20)})
                await ws.send(body)
            if args.close_after:
                await ws.close(1001, "going away")
                return
            async for message in ws:
                record({"event": "message", "data": message})
        except websockets.ConnectionClosed:
            pass
        finally:
            record({"event": "closed", "code": ws.close_code, "reason": ws.close_reason})

    async def process_request(path, headers):
        if args.mode == "reject":
            record({"event": "rejected", "path": path})
            return (http.HTTPStatus.UNAUTHORIZED, [("Content-Type", "text/plain")], b"unauthorized\n")
        return None

    context = None
    if args.certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.certfile, args.keyfile)
    server = await websockets.serve(handler, "127.0.0.1", args.port, compression=None, max_size=None,
                                    process_request=process_request, ssl=context, ping_interval=None)
    announce(server.sockets[0].getsockname()[1])
    await asyncio.sleep(args.lifetime)
    server.close()


async def client():
    import websockets
    sock = None
    if args.small_window:
        host, port = args.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((host, int(port)))
    async with websockets.connect(args.url, compression=None, max_size=None, ping_interval=None, sock=sock,
                                  max_queue=1) as ws:
        announce(0)
        if args.send:
            for n in range(args.messages):
                await ws.send(json.dumps({"n": n}))
            await asyncio.sleep(args.lifetime)
            return
        seqs = []
        try:
            async for message in ws:
                seqs.append(json.loads(message).get("seq"))
                if args.delay:
                    await asyncio.sleep(args.delay)
        except websockets.ConnectionClosed:
            pass
        record({"event": "summary", "seqs": seqs, "code": ws.close_code})


def raw_upgrade(url, receive_buffer=None):
    """A client socket that completes the WebSocket handshake by hand and then reads nothing more."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect((host, int(port)))
    key = base64.b64encode(b"sluice-test-key!").decode()
    sock.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        response += chunk
    return sock


async def limits():
    import websockets
    announce(0)
    options = dict(compression=None, ping_interval=None, open_timeout=5)
    held = [await websockets.connect(args.url, **options) for _ in range(args.clients)]
    try:
        extra = await websockets.connect(args.url, **options)
        record({"event": "extra", "status": 101})
        await extra.close()
    except websockets.InvalidStatusCode as error:
        record({"event": "extra", "status": error.status_code})
    except (websockets.InvalidHandshake, OSError) as error:
        record({"event": "extra", "status": 0, "error": str(error)})
    flood = held[0]
    sent = 0
    try:
        for n in range(args.messages):
            await flood.send(json.dumps({"n": n}))
            sent += 1
        await asyncio.wait_for(flood.wait_closed(), 10)
    except (websockets.ConnectionClosed, asyncio.TimeoutError):
        pass
    record({"event": "flood", "code": flood.close_code, "sent": sent})
    host, port = args.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    idle = socket.create_connection((host, int(port)))
    idle.settimeout(30)
    started = time.time()
    try:
        idle.recv(1)
    except OSError:
        pass
    record({"event": "idle", "secs": time.time() - started})
    for ws in held[1:]:
        await ws.close()
    record({"event": "done"})


def closer():
    announce(0)
    # A small receive buffer, so that not reading fills the server's queue for us within the pause, however
    # slowly the server produces (under a sanitizer, say).
    sock = raw_upgrade(args.url, 4096 if args.small_window else None)
    reader = sock.makefile("rb")

    def read_frame():
        header = reader.read(2)
        if len(header) < 2:
            raise ConnectionError("the connection ended without a close frame")
        length = header[1] & 0x7F
        if length == 126:
            length = int.from_bytes(reader.read(2), "big")
        elif length == 127:
            length = int.from_bytes(reader.read(8), "big")
        return header[0] & 0x0F, reader.read(length)

    received = 0
    end = time.monotonic() + args.secs
    while time.monotonic() < end:
        opcode, body = read_frame()
        if opcode == 8:
            # The server closed first (the end of its input): that is the outcome.
            record({"event": "closer", "received": received, "close_secs": 0, "server_closed": True,
                    "code": int.from_bytes(body[:2], "big") if len(body) >= 2 else 1005})
            return
        received += opcode == 1
    time.sleep(args.pause)
    if args.close_when:
        import os
        while not os.path.exists(args.close_when):
            time.sleep(0.02)
    closing = time.monotonic()
    mask = b"\x01\x02\x03\x04"
    payload = (1000).to_bytes(2, "big") + b"bye"
    sock.sendall(bytes([0x88, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    if args.read_when:
        import os
        while not os.path.exists(args.read_when):
            time.sleep(0.02)
        closing = time.monotonic()
    code = None
    discarded = 0
    try:
        while True:
            opcode, body = read_frame()
            if opcode == 8:
                code = int.from_bytes(body[:2], "big") if len(body) >= 2 else 1005
                break
            discarded += 1
    except ConnectionError:
        pass
    record({"event": "closer", "received": received, "close_secs": time.monotonic() - closing, "code": code,
            "discarded_after_close": discarded})


async def churn():
    import websockets
    announce(0)
    slow = [raw_upgrade(args.url, 4096) for _ in range(args.slow)]
    counts = {"visits": 0, "messages": 0, "failures": 0}

    async def visitor(visits):
        for _ in range(visits):
            try:
                # max_queue=None: the client keeps reading during its close handshake (with a bounded queue it stops
                # reading, and the server's close frame would wait behind the data it still has queued for us).
                async with websockets.connect(args.url, compression=None, ping_interval=None, open_timeout=5,
                                              max_queue=None) as ws:
                    await asyncio.wait_for(ws.recv(), 5)
                    counts["messages"] += 1
                counts["visits"] += 1
            except (websockets.WebSocketException, OSError, asyncio.TimeoutError):
                counts["failures"] += 1

    await asyncio.gather(*(visitor(args.clients // 10) for _ in range(10)))
    record({"event": "done", **counts, "slow": len(slow)})
    await asyncio.sleep(args.lifetime)


if args.mode == "client":
    asyncio.run(asyncio.wait_for(client(), args.lifetime + 5))
elif args.mode == "limits":
    asyncio.run(asyncio.wait_for(limits(), args.lifetime))
elif args.mode == "churn":
    asyncio.run(churn())
elif args.mode == "closer":
    signal.alarm(int(args.lifetime))
    closer()
elif args.mode in ("silent", "blast", "frames", "hostile"):
    raw_server()
else:
    asyncio.run(main())
