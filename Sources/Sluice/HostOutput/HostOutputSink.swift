internal import SluiceCore

/// Hands its input buffer to the ``PipelineOutput`` of its component, and waits until the host has read it to
/// the end or stopped reading; the runner then closes the buffer, so what the host did not read is discarded and
/// counted under `error`, as for a sink that can no longer write.
struct HostOutputSink: Sink {
    let outputs: HostBindings

    func run(_ input: EventBuffer, _ context: SinkContext) async throws {
        guard let port = outputs.output(for: context.id) else { return }
        await port.serve(input, metrics: context.metrics)
    }
}
