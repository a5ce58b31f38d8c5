internal import SluiceCore
internal import SluiceWebSocket
internal import SluiceWebSocketListener

/// Broadcasts events; a slow client loses its own oldest messages and never slows the pipeline or other clients.
/// An event counts as sent once it is handed to the server, whether or not any client is connected.
struct WebSocketServerSink: Sink {
    let listener: WebSocketListenerConfig

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        let id = context.id
        let log = context.log
        let server = WebSocketServer(options: listener.serverOptions) { log.info("websocket_server '\(id)': \($0)") }
        let listening = try await server.start()
        log.info("websocket_server '\(id)': listening on \(listener.urls(listening))")
        context.metrics.provideDetails {
            let statistics = server.statistics
            var details = WebSocketListenerConfig.clientMetrics(statistics, listening)
            details["client_discarded_events_total"] = [
                "slow_client": .int(Int64(statistics.slowClientDroppedTotal)),
                "disconnected": .int(Int64(statistics.disconnectedClientDroppedTotal)),
            ]
            return details
        }
        while var batch = await input.next() {
            var messages: [[UInt8]] = []
            messages.reserveCapacity(batch.count)
            batch.forEachInPlace { event in
                var bytes: [UInt8] = []
                event.writeJSON(to: &bytes)
                messages.append(bytes)
            }
            await server.broadcast(messages)
            context.metrics.recordWritten(batch, at: MonotonicClock.nanos())
            TextRecycler.shared.recycle(&batch)
        }
        server.stop()
        for await _ in server.events {}
    }
}
