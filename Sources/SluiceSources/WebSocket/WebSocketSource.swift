internal import SluiceCore
internal import SluiceWebSocket

/// Reads a WebSocket feed: every message is an event (or, with `split_arrays`, every element of an array
/// message). Sending waits while a `block` buffer downstream is full, and the client stops reading the socket once
/// too many messages are unacknowledged, so TCP pushes back on the server and memory stays bounded.
struct WebSocketSource: Source {
    let config: WebSocketSourceConfig

    func run(_ context: SourceContext) async throws {
        let id = context.id
        let log = context.log
        let client = WebSocketClient(options: config.client) { line in log.info("websocket '\(id)': \(line)") }
        context.metrics.provideDetails {
            let statistics = client.statistics
            return [
                "connection": [
                    "state": .string(statistics.state.rawValue),
                    "connects_total": .int(Int64(statistics.connectsTotal)),
                    "disconnects_total": .int(Int64(statistics.disconnectsTotal)),
                    "reconnect_attempts_total": .int(Int64(statistics.reconnectAttemptsTotal)),
                    "received_bytes_total": .int(Int64(statistics.receivedBytesTotal)),
                    "last_error": statistics.lastError.map { .string($0) } ?? .null,
                ]
            ]
        }
        context.stop.onStop { client.stop() }
        try client.start()
        var decoder = MessageDecoder(
            decoding: config.decoding, splitArrays: config.splitArrays, sourceID: id, log: log)
        var gaveUp: String?
        for await event in client.events {
            switch event {
            case .messages(let messages):
                await decoder.deliver(messages, to: context)
                client.acknowledge(messages.count)
            case .oversize:
                decoder.countOversize(in: context)
            case .reconnected(let start, let end):
                guard config.emitGapEvents else { continue }
                let gap: JSONValue = [
                    "type": "gap", "source": .string(id), "gap_start": .string(RFC3339.format(epochMillis: start)),
                    "gap_end": .string(RFC3339.format(epochMillis: end)), "gap_ms": .int(end - start),
                ]
                context.metrics.recordReceived(1)
                await context.output.send([Event(gap, ingestNanos: MonotonicClock.nanos())])
            case .gaveUp(let reason):
                // Thrown once `events` ends: the service thread is still freeing libwebsockets' context (and
                // OpenSSL's objects in it), and a run that failed at once could let the process exit, with OpenSSL's
                // exit handlers freeing its locks, under it (ThreadSanitizer caught a crash in CRYPTO_THREAD_unlock).
                gaveUp = reason
            }
        }
        if let gaveUp { throw WebSocketSourceError(message: "gave up: \(gaveUp)") }
    }
}

/// The failure that ends a `websocket` source: it gave up reconnecting.
struct WebSocketSourceError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
