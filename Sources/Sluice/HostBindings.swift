/// The inputs and outputs of one run of a pipeline, by component id: the `host` components of that run find theirs
/// here. Made whole before the run starts and only read afterwards.
final class HostBindings: Sendable {
    private let inputs: [String: PipelineInput]
    private let outputs: [String: HostOutputPort]

    init(inputs: [String: PipelineInput], outputIDs: [String]) {
        self.inputs = inputs
        self.outputs = Dictionary(uniqueKeysWithValues: outputIDs.map { ($0, HostOutputPort(id: $0)) })
    }

    func input(for id: String) -> PipelineInput? { inputs[id] }

    func output(for id: String) -> HostOutputPort? { outputs[id] }

    /// Lets every output's sink go: the host reads no more. True when one of them had not ended yet.
    func releaseOutputs() -> Bool {
        // Every port is released: `||` would stop at the first that had not ended and leave the others' sinks
        // waiting for ever.
        outputs.values.map { $0.release() }.contains(true)
    }
}
