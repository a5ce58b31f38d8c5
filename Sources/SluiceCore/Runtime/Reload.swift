/// What a reload of the pipeline file changes in the running pipeline. New components start; removed ones stop
/// after draining what they hold; a component that reads other inputs is connected to them (and disconnected from
/// the old ones, which tell it they are done); a transform or sink whose options changed is replaced where it runs,
/// at a batch boundary, so that every event is handled once, by the old component or by the new one; a source
/// whose options changed stops and hands its place in its input to one made from the new options; an input buffer
/// given another `buffer` applies it to what it holds and what comes. Another type of the same kind is a change of
/// options like any other (a `filter` becomes an `aggregate`, a `stdout` sink a `file` sink), and so is a change of
/// which named outputs of a transform are read. An id that names a component of another kind now (a transform that
/// became a sink) is a removal and an addition: the old component drains and ends while the new one starts.
public struct ReloadPlan: Sendable {
    /// Components the new file adds.
    public let added: [ComponentDefinition]
    /// Components the new file no longer has, as the running pipeline defines them.
    public let removed: [ComponentDefinition]
    /// Running components that read other inputs now: as they run, and as the new file defines them.
    public let rewired: [(running: ComponentDefinition, new: ComponentDefinition)]
    /// The components to replace: as they run, and as the new file defines them.
    public let replaced: [(running: ComponentDefinition, new: ComponentDefinition)]
    /// The transforms and sinks whose input buffer takes another policy, as the new file defines them.
    public let rebuffered: [ComponentDefinition]
    /// What changed and is left as it was until a restart (the `metrics` and `api` sections).
    public let kept: [String]

    /// Compares the running pipeline `old` with `new`.
    public init(from old: PipelineDefinition, to new: PipelineDefinition) {
        let before = Dictionary(old.components.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.components.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var rewired: [(running: ComponentDefinition, new: ComponentDefinition)] = []
        var replaced: [(running: ComponentDefinition, new: ComponentDefinition)] = []
        var rebuffered: [ComponentDefinition] = []
        for component in new.components {
            guard let running = before[component.id], running.kind == component.kind else { continue }
            if (running.buffer ?? .default) != (component.buffer ?? .default) { rebuffered.append(component) }
            if running.inputs != component.inputs { rewired.append((running, component)) }
            // A transform learns at its start which of its named outputs are read (a `route` discards what matches
            // no route unless `_unmatched` is read), so a change there replaces it too.
            if running.typeName != component.typeName || running.writtenOptions != component.writtenOptions
                || old.readOutputs(of: running) != new.readOutputs(of: component)
            {
                replaced.append((running, component))
            }
        }
        var kept: [String] = []
        if old.metrics != new.metrics { kept.append("metrics") }
        if old.api != new.api { kept.append("api") }
        self.added = new.components.filter { before[$0.id]?.kind != $0.kind }
        self.removed = old.components.filter { after[$0.id]?.kind != $0.kind }
        self.rewired = rewired
        self.replaced = replaced
        self.rebuffered = rebuffered
        self.kept = kept
    }

    /// True when the running pipeline already is what the new file defines.
    public var changesNothing: Bool {
        added.isEmpty && removed.isEmpty && rewired.isEmpty && replaced.isEmpty && rebuffered.isEmpty
    }

    /// What it changes, in one line: `added 'a'; removed 'b'; rewired 'c'; replaced 'd'`.
    public var summary: String {
        let parts: [(String, [String])] = [
            ("added", added.map(\.id)), ("removed", removed.map(\.id)), ("rewired", rewired.map(\.new.id)),
            ("replaced", replaced.map(\.new.id)), ("rebuffered", rebuffered.map(\.id)),
        ]
        return parts.filter { !$0.1.isEmpty }.map { verb, ids in
            verb + " " + ids.map { "'\($0)'" }.joined(separator: ", ")
        }.joined(separator: "; ")
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
        /// The file is valid but came before the pipeline started; nothing was changed.
        case rejected
        /// The file is not valid; nothing was changed.
        case invalid
    }
}
