internal import SluiceCore

/// Runs the host's ``PipelineInput`` for its component: each event counted as received and stamped with its
/// ingest time, the events sent on as the sequence gives them (a sequence of batches keeps its batches). Stopping
/// the pipeline, or cancelling its task, ends the iteration: an `AsyncStream` returns `nil` when its task is
/// cancelled.
struct HostInputSource: Source {
    let inputs: HostBindings

    func run(_ context: SourceContext) async throws {
        guard let input = inputs.input(for: context.id) else {
            // `Pipeline.run` checks that every host source is fed before it starts; this cannot happen.
            throw PipelineError(message: "no input was given for host source '\(context.id)'")
        }
        let iteration = Task { try await input.feed(context) }
        context.stop.onStop { iteration.cancel() }
        try await withTaskCancellationHandler {
            try await iteration.value
        } onCancel: {
            iteration.cancel()
        }
    }
}
