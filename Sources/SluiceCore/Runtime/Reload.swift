/// What a reload of the pipeline file changes in the running pipeline: the transforms and sinks whose options
/// changed are replaced where they run, each at a batch boundary, so that every event is handled exactly once,
/// by the old component or by the new one. What cannot be changed in place (a component added, removed or rewired,
/// another type or buffer, a source's options) rejects the whole reload: the run goes on as it was.
public struct ReloadPlan: Sendable {
    /// The transforms and sinks to replace, as the new file defines them.
    public let replaced: [ComponentDefinition]
    /// What the new file changes that needs a restart; when not empty, nothing is applied.
    public let rejections: [String]
    /// What changed and is left as it was until a restart (the `metrics` and `api` sections).
    public let kept: [String]

    /// Compares the running pipeline `old` with `new`.
    public init(from old: PipelineDefinition, to new: PipelineDefinition) {
        var rejections: [String] = []
        let before = Dictionary(old.components.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.components.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for component in new.components where before[component.id] == nil {
            rejections.append("\(component.kind.rawValue) '\(component.id)' is new")
        }
        for component in old.components where after[component.id] == nil {
            rejections.append("\(component.kind.rawValue) '\(component.id)' was removed")
        }
        var replaced: [ComponentDefinition] = []
        for component in new.components {
            guard let running = before[component.id] else { continue }
            let name = "\(component.kind.rawValue) '\(component.id)'"
            if running.kind != component.kind || running.typeName != component.typeName {
                rejections.append("\(name) is now a \(component.typeName) \(component.kind.rawValue)")
                continue
            }
            if running.inputs != component.inputs {
                rejections.append("\(name) reads other inputs")
            }
            if running.buffer != component.buffer {
                rejections.append("\(name) has another buffer")
            }
            guard running.writtenOptions != component.writtenOptions else { continue }
            if component.kind == .source {
                rejections.append("\(name) has other options (a running source is kept as it is)")
            } else {
                replaced.append(component)
            }
        }
        var kept: [String] = []
        if old.metrics != new.metrics { kept.append("metrics") }
        if old.api != new.api { kept.append("api") }
        self.replaced = rejections.isEmpty ? replaced : []
        self.rejections = rejections
        self.kept = kept
    }
}

/// The reloads of a run, for metrics: how many were asked for, and how the last one went.
public struct ReloadStatus: Sendable, Equatable {
    /// Reloads asked for (SIGHUP, or a change `--watch` saw), whatever their result.
    public var total = 0
    /// The last one, if any.
    public var last: Reload?

    /// No reload yet.
    public init() {}

    /// One reload.
    public struct Reload: Sendable, Equatable {
        /// When it was asked for, in milliseconds since the Unix epoch.
        public var atMillis: Int64
        /// How it ended.
        public var result: Result
        /// What it did or why it did nothing, in one line.
        public var message: String

        /// A reload asked for at `atMillis` that ended with `result`, described by `message`.
        public init(atMillis: Int64, result: Result, message: String) {
            self.atMillis = atMillis
            self.result = result
            self.message = message
        }
    }

    /// How a reload ended.
    public enum Result: String, Sendable {
        /// Components were replaced.
        case applied
        /// The file defines the running pipeline already.
        case unchanged
        /// The file is valid but changes what needs a restart; nothing was changed.
        case rejected
        /// The file is not valid; nothing was changed.
        case invalid
    }
}
