internal import SluiceCore
internal import SluiceWebSocket
internal import SluiceWebSocketListener

/// Receives messages from any number of clients; with `block` downstream it stops reading from clients while the
/// pipeline is full.
struct WebSocketServerSource: Source {
    let config: WebSocketServerSourceConfig

    func run(_ context: SourceContext) async throws {
        let id = context.id
        let log = context.log
        let server = WebSocketServer(options: config.listener.serverOptions) {
            log.info("websocket_server '\(id)': \($0)")
        }
        let listening = try await server.start()
        log.info("websocket_server '\(id)': listening on \(config.listener.urls(listening))")
        context.metrics.provideDetails {
            let statistics = server.statistics
            var details = WebSocketListenerConfig.clientMetrics(statistics, listening)
            details["received_bytes_total"] = .int(Int64(statistics.receivedBytesTotal))
            return details
        }
        context.stop.onStop { server.stop() }
        var decoder = MessageDecoder(decoding: config.decoding, splitArrays: false, sourceID: id, log: log)
        for await event in server.events {
            switch event {
            case .messages(let messages):
                await decoder.deliver(messages, to: context)
                server.acknowledge(messages.count)
            case .oversize:
                decoder.countOversize(in: context)
            }
        }
    }
}
