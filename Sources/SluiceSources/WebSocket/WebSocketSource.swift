internal import SluiceCore
internal import SluiceWebSocket

/// Reads a WebSocket feed: every message is an event (or, with `split_arrays`, every element of an array
/// message). Sending waits while a `block` buffer downstream is full, and the client stops reading the socket once
/// too many messages are unacknowledged, so TCP pushes back on the server and memory stays bounded.
struct WebSocketSource: Source {
    let config: WebSocketSourceConfig

    func run(_ context: SourceContext) async throws {
        guard let options = config.options else { return }
        let id = context.id
        let log = context.log
        let client = WebSocketClient(options: options) { line in log.info("websocket '\(id)': \(line)") }
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
        client.start()
        var errors = RateLimitedReporter()
        for await event in client.events {
            switch event {
            case .messages(let messages):
                let now = MonotonicClock.nanos()
                var batch: [Event] = []
                batch.reserveCapacity(messages.count)
                var received = 0
                var discards = DiscardCounts()
                for message in messages {
                    let value: JSONValue
                    do {
                        value = try message.bytes.withUnsafeBufferPointer { (bytes) throws(JSONError) in
                            try config.decoding.decode(bytes)
                        }
                    } catch {
                        received += 1
                        discards[.parseError] += 1
                        errors.report(to: log, now: now) {
                            "\(id): a message is not valid JSON (\(error)); counted under parse_error"
                        } summary: { "\(id): \($0) more messages were not valid JSON; see parse_error in the metrics" }
                        continue
                    }
                    if config.splitArrays, case .array(let items) = value {
                        // Each element counts as one received event, so received = sent + discarded still holds.
                        received += items.count
                        batch.append(contentsOf: items.map { Event($0, ingestNanos: now) })
                    } else {
                        received += 1
                        batch.append(Event(value, ingestNanos: now))
                    }
                }
                context.metrics.recordReceived(received)
                context.metrics.recordDiscarded(discards)
                await context.output.send(batch)
                client.acknowledge(messages.count)
            case .oversize:
                context.metrics.recordReceived(1)
                context.metrics.recordDiscarded(1, cause: .oversize)
            case .reconnected(let start, let end):
                guard config.emitGapEvents else { continue }
                let gap: JSONValue = [
                    "type": "gap", "source": .string(id), "gap_start": .string(RFC3339.format(epochMillis: start)),
                    "gap_end": .string(RFC3339.format(epochMillis: end)), "gap_ms": .int(end - start),
                ]
                context.metrics.recordReceived(1)
                await context.output.send([Event(gap, ingestNanos: MonotonicClock.nanos())])
            case .gaveUp(let reason):
                throw WebSocketSourceError(message: "gave up: \(reason)")
            }
        }
    }
}

/// The failure that ends a `websocket` source: it gave up reconnecting.
struct WebSocketSourceError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
