internal import SluiceSync
internal import Synchronization

/// How a run ended.
public struct RunOutcome: Sendable, Equatable {
    /// Runtime failures, one message each; empty when the run succeeded.
    public var failures: [String]
    /// True when standard output was closed by its reader, which ends a run quietly.
    public var outputClosed: Bool
}

/// Runs a ``PipelineDefinition``: one task per component, an ``EventBuffer`` on every transform's and sink's
/// input, and a ``MetricsReporter`` alongside.
///
/// Chained transforms are fused: a transform with the default buffer whose only input is a transform that feeds
/// nothing else runs in that transform's task, on the same batch, with no buffer or hop between them (as sync
/// transforms do in Vector and processors in Benthos). Its metrics are kept as usual; its `buffer` is null and
/// `runs_in` names the task's first transform. A `buffer` other than the default keeps a transform in a task of
/// its own, and nothing fuses after a transform with named outputs (`route`). Stateful transforms fuse too: the
/// task waits for its input until the earliest deadline of its transforms, and at the end of input finishes each
/// in order, what one emits flowing through those after it.
///
/// Stateless transforms (filter, map) whose input is a source that feeds nothing else, and asks for them
/// (``RunsFollowingStatelessTransforms``), go further: they run in the source's own sending
/// (`SourceChain`), on the batch as it is made, and the source's edge leads to what follows
/// them; their metrics say `runs_in` the source. A reload that changes anything first splits such a chain off: each
/// of its transforms gets an input buffer and a task of its own, and the source sends into the first.
///
/// The run ends when every source has ended and every buffer has drained. ``stop()`` makes sources stop reading;
/// what they already sent still drains to the sinks. Cancelling the task that runs the pipeline does the same.
public final class PipelineRunner: Sendable {
    /// The pipeline as it started.
    public let definition: PipelineDefinition
    private let log: Logger
    private let stopSignal = StopSignal()
    private let failures = Mutex<[String]>([])
    private let outputClosed = Mutex(false)
    /// What holds events, upstream first: each component's input buffer, then its task's or sink's mark.
    private let holders = Mutex<[(id: String, read: @Sendable () -> UInt64)]>([])
    /// The running components, what reloads changed and have not been applied yet, and how they went.
    private let live: Mutex<LiveState>
    /// How many replacements wait in `live`: every task looks here after each batch, without taking the lock.
    private let pendingReplacements = Atomic(0)

    private struct LiveState {
        /// The definition the last applied reload (or the start) gave.
        var current: PipelineDefinition
        /// Every component's counters, in the order reports list them.
        var metrics: [ComponentMetrics]
        /// The running components, by id, once the run started.
        var running: [String: Running] = [:]
        /// The counters of components a reload removed that have not ended yet: they leave the reports when they
        /// end.
        var removed: Set<ObjectIdentifier> = []
        /// Components to replace at their next batch boundary, by id.
        var pending: [String: Replacement] = [:]
        /// Chains of fused transforms to split at their next batch boundary, by their first transform: its output
        /// from then on, and the parts that go on in tasks of their own.
        var splits: [String: (output: EventOutput, parts: [SplitPart])] = [:]
        /// The stateless transforms that run in a source's sending, by source, in order, with the source's edge.
        var sourceChains: [String: (members: [String], edge: EventOutput, chain: SourceChain)] = [:]
        /// The tasks of components a reload added.
        var added: [Task<Void, Never>] = []
        /// Every source instance that ran or runs, those of the start, of reloads and of replacements: each is told
        /// when the pipeline drained (a source that keeps positions commits them then).
        var sourceInstances: [any Source] = []
        /// The running instance of each source: its own stop, and its hand-over to a replacement.
        var sourceRuns: [String: (stop: StopSignal, handOver: SourceHandOver)] = [:]
        /// True once every component of the start is registered in `running`.
        var started = false
        var status = ReloadStatus()
    }

    /// What replaces a running component at its next batch boundary.
    private struct Replacement {
        let maker: ComponentBlueprint.Maker
        let typeName: String
        /// For a transform: its named outputs that some component reads now.
        let readOutputs: Set<String>
        /// For a transform whose named outputs changed: where it sends from then on, and the outputs it no longer
        /// has, which end then.
        var output: ChainOutput?
        var retired: [EventOutput] = []
    }

    /// What a reload needs of a running component.
    private struct Running {
        let kind: ComponentKind
        /// Its input buffer; `nil` for a source and for a transform that runs in another's task.
        let input: EventBuffer?
        /// Where it sends, by named output (`""` for its only one); empty when a transform fused after it takes its
        /// output in the same task. A reload that gives a transform other named outputs changes them.
        var outputs: [String: EventOutput]
        /// A source's own stop, which ends it and every instance that replaces it.
        let stop: StopSignal?
        /// For a transform that runs in another's task: that task's first transform.
        let runsIn: String?
    }

    /// Prepares to run `definition`; its components' warnings and errors go to `log`. What a component needs of
    /// the process (the descriptor `stdin` reads, say) was given to its type in the catalog, not to the runner.
    public init(definition: PipelineDefinition, log: Logger) {
        self.definition = definition
        self.log = log
        live = Mutex(
            LiveState(
                current: definition,
                metrics: definition.components.map {
                    ComponentMetrics(id: $0.id, kind: $0.kind, typeName: $0.typeName)
                }))
    }

    /// Every component's counters, in definition order (components a reload added come last).
    public var metrics: [ComponentMetrics] { live.locked { $0.metrics } }

    /// Asks every source to stop; buffered events still drain.
    public func stop() { stopSignal.stop() }

    // MARK: - Reload

    /// Applies a reloaded pipeline file (see ``ReloadPlan``). New components start; removed ones are disconnected
    /// from their inputs (a source is stopped) and end once they drained what they hold; a rewired one is
    /// connected to its new inputs and disconnected from its old ones, each old one telling it so once its current
    /// batch is delivered; a transform or sink whose options or type changed is replaced at its next batch boundary,
    /// a transform after emitting what it holds (and sending to new named outputs from then on, when they changed),
    /// a sink after writing what it took, both with their input buffers and counters; a source whose options or type
    /// changed hands its place to its replacement (``SourceHandOver``); another
    /// buffer policy applies in place. A change that involves a transform running in another's task (fused), other
    /// than new options, first splits its chain. Returns what was done, as metrics show it.
    @discardableResult
    public func reload(_ new: PipelineDefinition) -> ReloadStatus.Reload {
        let now = WallClock.nowMillis()
        let (reload, start) = live.locked {
            state -> (ReloadStatus.Reload, [(ComponentMetrics, @Sendable () async -> Void)]) in
            let plan = ReloadPlan(from: state.current, to: new)
            let kept = plan.kept.isEmpty ? "" : "; kept until a restart: " + plan.kept.joined(separator: ", ")
            let reload: ReloadStatus.Reload
            var start: [(ComponentMetrics, @Sendable () async -> Void)] = []
            if !state.started {
                reload = .init(
                    atMillis: now, result: .rejected,
                    message: "the pipeline has not started yet; nothing was changed")
            } else if plan.changesNothing {
                state.current = new
                reload = .init(atMillis: now, result: .unchanged, message: "no component changed" + kept)
            } else {
                start = apply(plan, to: new, &state)
                state.current = new
                reload = .init(atMillis: now, result: .applied, message: plan.summary + kept)
            }
            state.status.total += 1
            state.status.last = reload
            return (reload, start)
        }
        for (counters, body) in start {
            let task = Task { [self] in
                await body()
                ended(counters)
            }
            live.locked { $0.added.append(task) }
        }
        return reload
    }

    /// The chains of fused transforms a plan changes, by their first transform: a fused transform has no input
    /// buffer of its own, and the transform before it no output of its own, so such a chain is split first
    /// (``prepareSplit(of:_:)``) and the change applies to its parts.
    private func chainsToSplit(_ plan: ReloadPlan, _ running: [String: Running]) -> Set<String> {
        var heads: Set<String> = []
        /// `id`, when it runs in another's task.
        func reader(_ id: String) {
            if let head = running[id]?.runsIn { heads.insert(head) }
        }
        /// The transform `reference` names, when a transform after it runs in its task.
        func feeder(_ reference: String) {
            let id = InputReference(reference).id
            guard let component = running[id], component.kind == .transform, component.outputs.isEmpty else { return }
            heads.insert(component.runsIn ?? id)
        }
        for component in plan.removed {
            reader(component.id)
            feeder(component.id)
        }
        for (old, new) in plan.rewired {
            reader(new.id)
            for input in Set(old.inputs).symmetricDifference(new.inputs) { feeder(input) }
        }
        for component in plan.added { component.inputs.forEach(feeder) }
        for component in plan.rebuffered { reader(component.id) }
        return heads
    }

    /// Gives every transform of the chain `head` runs its own input buffer, output and (once the chain's task
    /// reaches a batch boundary) task, and registers them as running, so that a reload can change each as if it
    /// had never been fused. Until the split, batches flow through the chain as before.
    private func prepareSplit(of head: String, _ state: inout LiveState) {
        // The chain in order: each member reads the one before it.
        var chain = [head]
        while let next = state.current.components.first(where: {
            state.running[$0.id]?.runsIn == head && $0.inputs.first == chain.last
        }) {
            chain.append(next.id)
        }
        guard chain.count > 1, let tailOutputs = state.running[chain.last!]?.outputs else { return }
        let metrics = Dictionary(uniqueKeysWithValues: state.metrics.map { ($0.id, $0) })
        let definitions = Dictionary(uniqueKeysWithValues: state.current.components.map { ($0.id, $0) })
        let inputs = chain.dropFirst().map { id in
            let buffer = EventBuffer(policy: .default, producers: 1, owner: metrics[id]!)
            let mark = HeldMark()
            addHolders(id, [{ buffer.oldestHeldIngestNanos }, { mark.value }], in: state.current)
            return (buffer, mark)
        }
        // Each part sends into the next one's buffer; the last keeps the chain's outputs.
        var parts: [SplitPart] = []
        for (index, id) in chain.enumerated() {
            let own =
                index == chain.count - 1
                ? tailOutputs : ["": EventOutput(targets: [inputs[index].0], metrics: metrics[id]!)]
            let input = index == 0 ? state.running[id]!.input : inputs[index - 1].0
            state.running[id] = Running(kind: .transform, input: input, outputs: own, stop: nil, runsIn: nil)
            guard index > 0 else { continue }
            let ports = definitions[id]!.blueprint.outputs
            parts.append(
                SplitPart(
                    id: id, input: inputs[index - 1].0,
                    output: ports.isEmpty ? .single(own[""]!) : .named(ports.map { own[$0]! }),
                    held: inputs[index - 1].1))
            metrics[id]!.provideDetails { [:] }
        }
        state.splits[head] = (state.running[head]!.outputs[""]!, parts)
        pendingReplacements.add(1, ordering: .releasing)
    }

    /// Connects, disconnects and schedules what `plan` changes; returns the tasks of the new components to start.
    private func apply(_ plan: ReloadPlan, to new: PipelineDefinition, _ state: inout LiveState)
        -> [(ComponentMetrics, @Sendable () async -> Void)]
    {
        let removedIDs = Set(plan.removed.map(\.id))
        var start = splitSourceChains(&state)
        for head in chainsToSplit(plan, state.running) { prepareSplit(of: head, &state) }
        // Replacements first: a transform whose named outputs change has the new ones before anything connects.
        var replacements: [String: Replacement] = [:]
        for (old, component) in plan.replaced {
            var replacement = Replacement(
                maker: component.blueprint.maker, typeName: component.typeName,
                readOutputs: new.readOutputs(of: component))
            if component.kind == .transform, component.blueprint.outputs != old.blueprint.outputs {
                (replacement.output, replacement.retired) = addOutputs(of: component, &state)
            }
            replacements[component.id] = replacement
        }
        // New components' counters and input buffers first, so that outputs can be made into them.
        var metrics: [String: ComponentMetrics] = [:]
        var inputs: [String: EventBuffer] = [:]
        var marks: [String: HeldMark] = [:]
        for component in plan.added {
            let counters = ComponentMetrics(id: component.id, kind: component.kind, typeName: component.typeName)
            metrics[component.id] = counters
            state.metrics.append(counters)
            guard component.kind != .source else { continue }
            let buffer = EventBuffer(
                policy: component.buffer ?? .default, producers: component.inputs.count, owner: counters)
            inputs[component.id] = buffer
            marks[component.id] = HeldMark()
            addHolders(
                component.id, [{ buffer.oldestHeldIngestNanos }, { [mark = marks[component.id]!] in mark.value }],
                in: new)
        }
        let running = state.running
        /// The input buffer of `id`, new or running.
        func input(of id: String) -> EventBuffer? { inputs[id] ?? running[id]?.input }
        /// The changes to each running output, applied together so that no batch goes to both old and new
        /// consumers.
        var rewiring: [ObjectIdentifier: (output: EventOutput, attach: [EventBuffer], detach: [EventBuffer])] = [:]
        func connect(_ reference: String, to buffer: EventBuffer, attach: Bool) {
            let parsed = InputReference(reference)
            guard let output = running[parsed.id]?.outputs[parsed.output ?? ""] else { return }
            var change = rewiring[ObjectIdentifier(output)] ?? (output, [], [])
            if attach { change.attach.append(buffer) } else { change.detach.append(buffer) }
            rewiring[ObjectIdentifier(output)] = change
        }
        // New components' outputs; a running consumer counts each as one more producer.
        var outputs: [String: [String: EventOutput]] = [:]
        for component in plan.added where component.kind != .sink {
            func targets(_ port: String?) -> [EventBuffer] {
                new.consumers(of: component.id, output: port).compactMap { consumer in
                    guard let buffer = input(of: consumer) else { return nil }
                    if inputs[consumer] == nil, !buffer.addProducer() { return nil }
                    return buffer
                }
            }
            let ports = component.blueprint.outputs
            outputs[component.id] =
                ports.isEmpty
                ? ["": EventOutput(targets: targets(nil), metrics: metrics[component.id]!)]
                : Dictionary(
                    uniqueKeysWithValues: ports.map {
                        ($0, EventOutput(targets: targets($0), namedOutput: $0, of: metrics[component.id]!))
                    })
        }
        // New components reading running ones (outputs of new ones were made into their consumers above).
        for component in plan.added where component.kind != .source {
            for reference in component.inputs where metrics[InputReference(reference).id] == nil {
                connect(reference, to: inputs[component.id]!, attach: true)
            }
        }
        // Running components that read other inputs: new running inputs attach, old ones detach (a removed one
        // tells it at its end, as it tells all its consumers).
        for (old, component) in plan.rewired {
            guard let buffer = running[component.id]?.input else { continue }
            for reference in component.inputs where !old.inputs.contains(reference) {
                let id = InputReference(reference).id
                guard running[id] != nil, metrics[id] == nil, buffer.addProducer() else { continue }
                connect(reference, to: buffer, attach: true)
            }
            for reference in old.inputs where !component.inputs.contains(reference) {
                guard !removedIDs.contains(InputReference(reference).id) else { continue }
                connect(reference, to: buffer, attach: false)
            }
        }
        // Removed components: disconnected from the inputs that stay, or stopped; each ends once drained.
        for component in plan.removed {
            if let counters = state.metrics.first(where: { $0.id == component.id && $0 !== metrics[component.id] }) {
                state.removed.insert(ObjectIdentifier(counters))
            }
            if let stop = running[component.id]?.stop { stop.stop() }
            guard let buffer = running[component.id]?.input else { continue }
            for reference in component.inputs where !removedIDs.contains(InputReference(reference).id) {
                connect(reference, to: buffer, attach: false)
            }
        }
        for change in rewiring.values { change.output.rewire(attach: change.attach, detach: change.detach) }
        for component in plan.rebuffered {
            running[component.id]?.input?.change(to: component.buffer ?? .default)
        }
        // New options (or another type): replaced where they run.
        for (_, component) in plan.replaced {
            if state.pending.updateValue(replacements[component.id]!, forKey: component.id) == nil {
                pendingReplacements.add(1, ordering: .releasing)
            }
            switch component.kind {
            case .sink: running[component.id]?.input?.handOver()
            case .source:
                // The running instance stops and leaves its place; `runSource` starts the next one.
                if let run = state.sourceRuns[component.id] {
                    run.handOver.want()
                    run.stop.stop()
                }
            case .transform: break
            }
        }
        // The new components' tasks, registered as running so that a later reload finds them (an id given to a
        // component of another kind is the new one's from now on).
        for component in plan.added {
            let own = outputs[component.id] ?? [:]
            let stop = component.kind == .source ? sourceStop() : nil
            state.running[component.id] = Running(
                kind: component.kind, input: inputs[component.id], outputs: own, stop: stop, runsIn: nil)
            let body = task(
                for: component, metrics: metrics[component.id]!, input: inputs[component.id], outputs: own,
                stop: stop, held: marks[component.id], in: new, &state)
            start.append((metrics[component.id]!, body))
        }
        return start
    }

    /// Gives every transform that runs in a source's sending an input buffer, an output and a task of its own, and
    /// registers them as running, so that a reload can change each as if it had never been fused; returns their
    /// tasks. The source's edge sends into the first one's buffer from its next send that no other overlaps
    /// (``EventOutput/unfuse(into:)``); until then batches go through the chain as before. The transforms are
    /// stateless: the new instances need nothing of the old.
    private func splitSourceChains(_ state: inout LiveState) -> [(ComponentMetrics, @Sendable () async -> Void)] {
        var tasks: [(ComponentMetrics, @Sendable () async -> Void)] = []
        for (_, fused) in state.sourceChains {
            let members = zip(fused.members, fused.chain.members).map { (id: $0, member: $1) }
            let inputs = members.map { id, member in
                let buffer = EventBuffer(policy: .default, producers: 1, owner: member.metrics)
                let mark = HeldMark()
                addHolders(id, [{ buffer.oldestHeldIngestNanos }, { mark.value }], in: state.current)
                return (buffer, mark)
            }
            // The last one sends where the chain did: each consumer counts it as one more producer.
            let last = members[members.count - 1]
            let consumers = state.current.consumers(of: last.id).compactMap { state.running[$0]?.input }
                .filter { $0.addProducer() }
            for (index, (id, member)) in members.enumerated() {
                let output =
                    index == members.count - 1
                    ? EventOutput(targets: consumers, metrics: member.metrics)
                    : EventOutput(targets: [inputs[index + 1].0], metrics: member.metrics)
                state.running[id] = Running(
                    kind: .transform, input: inputs[index].0, outputs: ["": output], stop: nil, runsIn: nil)
                member.metrics.provideDetails { [:] }
                let stage = TransformStage(id: id, transform: member.make(), metrics: member.metrics)
                let (input, held) = inputs[index]
                tasks.append((member.metrics, { [self] in await runTransforms([stage], input, .single(output), held) }))
            }
            fused.edge.unfuse(into: [inputs[0].0])
        }
        state.sourceChains = [:]
        return tasks
    }

    /// Gives the running transform `component` the named outputs (or the single one) the new file defines, keeping
    /// those it has, so that consumers can connect to them before it is replaced; returns its output from the
    /// replacement on, and the outputs that end then.
    private func addOutputs(of component: ComponentDefinition, _ state: inout LiveState) -> (ChainOutput, [EventOutput])
    {
        guard let running = state.running[component.id],
            let metrics = state.metrics.first(where: { $0.id == component.id })
        else { return (.named([]), []) }
        let ports = component.blueprint.outputs
        let now =
            ports.isEmpty
            ? ["": running.outputs[""] ?? EventOutput(targets: [], metrics: metrics)]
            : Dictionary(
                uniqueKeysWithValues: ports.map {
                    ($0, running.outputs[$0] ?? EventOutput(targets: [], namedOutput: $0, of: metrics))
                })
        // The old ones stay listed until the replacement, so that consumers leaving them are disconnected.
        state.running[component.id]?.outputs.merge(now) { _, new in new }
        let retired = running.outputs.filter { now[$0.key] == nil }.map(\.value)
        let output: ChainOutput = ports.isEmpty ? .single(now[""]!) : .named(ports.map { now[$0]! })
        // A transform whose input ended has finished its outputs and takes no replacement: so do the new ones.
        if running.outputs.values.contains(where: \.isFinished) { output.finish() }
        return (output, retired)
    }

    /// A stop for one source, which the pipeline's stop fires too.
    private func sourceStop() -> StopSignal {
        let own = StopSignal()
        stopSignal.onStop { own.stop() }
        return own
    }

    /// Makes the next instance of source `id` and registers it as running: its own stop, which `componentStop`
    /// fires too, and its hand-over, carrying what `previous` left.
    private func sourceInstance(
        _ id: String, make: @Sendable () -> any Source, stoppedBy componentStop: StopSignal,
        after previous: SourceHandOver?, _ state: inout LiveState
    ) -> (source: any Source, stop: StopSignal, handOver: SourceHandOver) {
        let stop = StopSignal()
        componentStop.onStop { stop.stop() }
        let handOver = SourceHandOver(after: previous)
        let source = make()
        state.sourceRuns[id] = (stop, handOver)
        state.sourceInstances.append(source)
        return (source, stop, handOver)
    }

    /// Marks the component `counters` count as ended: one a reload removed leaves the reports.
    private func ended(_ counters: ComponentMetrics) {
        let id = counters.id
        let (unsplit, unreplaced) = live.locked {
            state -> ((output: EventOutput, parts: [SplitPart])?, ChainOutput?) in
            // A reload may have given the id to a component of another kind, which runs on.
            let succeeded = state.metrics.contains { $0.id == id && $0 !== counters }
            // A change a reload made after the component's last look is moot now.
            var unreplaced: ChainOutput?
            if !succeeded, let replacement = state.pending.removeValue(forKey: id) {
                pendingReplacements.subtract(1, ordering: .releasing)
                unreplaced = replacement.output
            }
            // (Only a transform that runs a chain is split, and a successor of another kind is none.)
            let unsplit = counters.kind == .transform ? state.splits.removeValue(forKey: id) : nil
            if unsplit != nil { pendingReplacements.subtract(1, ordering: .releasing) }
            if state.removed.remove(ObjectIdentifier(counters)) != nil {
                state.metrics.removeAll { $0 === counters }
                if !succeeded { state.running[id] = nil }
            }
            return (unsplit, unreplaced)
        }
        // A chain that ended before its split, or a transform before its replacement with other named outputs:
        // the outputs made for them, which consumers a reload connected may count on, end too.
        if let unsplit {
            unsplit.output.finish()
            for part in unsplit.parts { part.output.finish() }
        }
        unreplaced?.finish()
    }

    /// Records a reload whose file was not valid: nothing changed.
    public func recordInvalidReload(_ message: String) {
        live.locked { state in
            state.status.total += 1
            state.status.last = .init(atMillis: WallClock.nowMillis(), result: .invalid, message: message)
        }
    }

    /// The reloads so far.
    public var reloadStatus: ReloadStatus { live.locked { $0.status } }

    /// The replacement waiting for component `id`, taken.
    private func takeReplacement(_ id: String, _ kind: ComponentKind) -> Replacement? {
        guard pendingReplacements.load(ordering: .acquiring) > 0 else { return nil }
        return live.locked { state in
            // The kind tells a component from one of another kind a reload gave its id to.
            guard state.pending[id]?.maker.kind == kind, let replacement = state.pending.removeValue(forKey: id)
            else { return nil }
            pendingReplacements.subtract(1, ordering: .releasing)
            // The outputs it no longer has leave the running component as it changes.
            if !replacement.retired.isEmpty, var running = state.running[id] {
                running.outputs = running.outputs.filter { _, output in !replacement.retired.contains { $0 === output }
                }
                state.running[id] = running
            }
            return replacement
        }
    }

    /// The earliest ingest time (``MonotonicClock`` nanoseconds) of any event still held in a buffer, a component's
    /// hands, a stateful transform or a sink's unwritten output; `UInt64.max` when nothing is. Every event ingested
    /// before it is finished: written, or discarded on purpose. A sink that failed holds the batch it could not
    /// write for the rest of the run (its input's batch in hand), so the floor never passes it, although what
    /// arrives at its closed input afterwards is discarded.
    ///
    /// No event slips past: holders are read upstream first, and each hands a batch on (its consumer's buffer
    /// holds it) before it lets go of it, so an event moving while they are read is found further down. (What a
    /// reload adds or a split makes takes its place in that order: `addHolders`.)
    public func heldSinceNanos() -> UInt64 {
        holders.locked { $0 }.reduce(UInt64.max) { min($0, $1.read()) }
    }

    /// Adds what component `id` holds to `holders`, before what any component downstream of it in `definition`
    /// holds, so that they are still read upstream first.
    private func addHolders(_ id: String, _ reads: [@Sendable () -> UInt64], in definition: PipelineDefinition) {
        var downstream: Set<String> = []
        var next = definition.allConsumers(of: id)
        while let consumer = next.popLast() {
            guard downstream.insert(consumer).inserted else { continue }
            next += definition.allConsumers(of: consumer)
        }
        holders.locked { holders in
            let position = holders.firstIndex { downstream.contains($0.id) } ?? holders.endIndex
            holders.insert(contentsOf: reads.map { (id, $0) }, at: position)
        }
    }

    /// Component ids with every component after all those it reads from.
    private func upstreamFirst() -> [String] {
        let sources = definition.components.filter { $0.kind == .source }.map(\.id)
        return definition.upstreamFirst(from: sources + definition.components.map(\.id))
    }

    /// The ids that read from each component, through any of its outputs, as the pipeline is now.
    public var consumers: [String: [String]] {
        let current = live.locked { $0.current }
        return Dictionary(uniqueKeysWithValues: current.components.map { ($0.id, current.allConsumers(of: $0.id)) })
    }

    /// Runs the pipeline to the end; `reporter` reports periodically during the run and once more at the end.
    public func run(reporter: MetricsReporter?) async -> RunOutcome {
        // Cancellation reaches every component task too; each source treats it as a stop, and what is buffered
        // still drains.
        await withTaskCancellationHandler {
            await runToEnd(reporter: reporter)
        } onCancel: {
            stop()
        }
    }

    /// The task that runs `component`: a source (registered in `state` as running), a sink, or a transform on its
    /// own (what a reload adds; at the start, chains of transforms are made in ``runToEnd(reporter:)``).
    private func task(
        for component: ComponentDefinition, metrics: ComponentMetrics, input: EventBuffer?,
        outputs: [String: EventOutput], stop: StopSignal?, held: HeldMark?, in pipeline: PipelineDefinition,
        _ state: inout LiveState
    ) -> @Sendable () async -> Void {
        switch component.blueprint.maker {
        case .source(let makeSource):
            let first = sourceInstance(component.id, make: makeSource, stoppedBy: stop!, after: nil, &state)
            let context = SourceContext(
                id: component.id, output: outputs[""]!, metrics: metrics, log: log, stop: first.stop,
                handOver: first.handOver, finishedBefore: { [self] in heldSinceNanos() })
            return { [self] in await runSource(first.source, context, stoppedBy: stop!) }
        case .transform(let makeTransform):
            let ports = component.blueprint.outputs
            let read = pipeline.readOutputs(of: component)
            let stage = TransformStage(
                id: component.id,
                transform: makeTransform(TransformContext(id: component.id, log: log, readOutputs: read)),
                metrics: metrics)
            let output: ChainOutput = ports.isEmpty ? .single(outputs[""]!) : .named(ports.map { outputs[$0]! })
            return { [self] in await runTransforms([stage], input!, output, held!) }
        case .sink(let makeSink):
            let context = SinkContext(id: component.id, metrics: metrics, log: log, held: held!)
            let sink = makeSink()
            return { [self] in await runSink(sink, input!, context) }
        }
    }

    private func runToEnd(reporter: MetricsReporter?) async -> RunOutcome {
        let metricsByID = Dictionary(uniqueKeysWithValues: metrics.map { ($0.id, $0) })
        let (fused, inSource) = fusedTransforms()
        /// True for a component that runs in another's task or sending: it has no buffer, mark or task.
        func runsElsewhere(_ id: String) -> Bool { fused[id] != nil || inSource[id] != nil }
        var buffers: [String: EventBuffer] = [:]
        for component in definition.components where component.kind != .source && !runsElsewhere(component.id) {
            buffers[component.id] = EventBuffer(
                policy: component.buffer ?? .default, producers: component.inputs.count,
                owner: metricsByID[component.id]!)
        }
        var marks: [String: HeldMark] = [:]
        for component in definition.components where component.kind != .source && !runsElsewhere(component.id) {
            marks[component.id] = HeldMark()
        }
        holders.locked { holders in
            for id in upstreamFirst() {
                if let buffer = buffers[id] { holders.append((id, { buffer.oldestHeldIngestNanos })) }
                if let mark = marks[id] { holders.append((id, { mark.value })) }
            }
        }
        let periodic = Task { await reporter?.runPeriodically() }
        var running: [String: Running] = [:]
        var sourceChains: [String: (members: [String], edge: EventOutput, chain: SourceChain)] = [:]
        // Every component's task, made and registered before any starts, so that a reload finds them all.
        var tasks: [@Sendable () async -> Void] = []
        do {
            /// The edge out of `id` into its consumers' buffers; it counts what `id` sends.
            func output(of id: String) -> EventOutput {
                EventOutput(targets: definition.consumers(of: id).map { buffers[$0]! }, metrics: metricsByID[id]!)
            }
            /// The outputs of the transform `definition`: one edge, or one per named output (which count nothing:
            /// the transform says how many distinct events it routed).
            func outputs(of definition: ComponentDefinition) -> ChainOutput {
                let ports = definition.blueprint.outputs
                guard !ports.isEmpty else { return .single(output(of: definition.id)) }
                return .named(
                    ports.map { port in
                        EventOutput(
                            targets: self.definition.consumers(of: definition.id, output: port).map { buffers[$0]! },
                            namedOutput: port, of: metricsByID[definition.id]!)
                    })
            }
            /// The edge out of source `id` through the transforms that run in its sending, if it has any.
            func sourceOutput(of id: String) -> EventOutput {
                var members: [ComponentDefinition] = []
                while let next = definition.components.first(where: {
                    inSource[$0.id] == id && $0.inputs == [members.last?.id ?? id]
                }) {
                    members.append(next)
                }
                guard let last = members.last else { return output(of: id) }
                let chain = SourceChain(
                    source: metricsByID[id]!,
                    members: members.map { member in
                        guard case .transform(let make) = member.blueprint.maker else {
                            preconditionFailure("Only transforms run in a source's sending.")
                        }
                        let context = TransformContext(id: member.id, log: log)
                        return SourceChain.Member(make: { make(context) }, metrics: metricsByID[member.id]!)
                    })
                let edge = EventOutput(
                    targets: definition.consumers(of: last.id).map { buffers[$0]! }, through: chain)
                for member in members {
                    metricsByID[member.id]!.provideDetails { ["runs_in": .string(id)] }
                    running[member.id] = Running(
                        kind: .transform, input: nil, outputs: member.id == last.id ? ["": edge] : [:], stop: nil,
                        runsIn: id)
                }
                sourceChains[id] = (members.map(\.id), edge, chain)
                return edge
            }
            for component in definition.components where !runsElsewhere(component.id) {
                let metrics = metricsByID[component.id]!
                switch component.blueprint.maker {
                case .source:
                    let stop = sourceStop()
                    let outputs = ["": sourceOutput(of: component.id)]
                    let body = live.locked { state in
                        task(
                            for: component, metrics: metrics, input: nil, outputs: outputs, stop: stop, held: nil,
                            in: definition, &state)
                    }
                    running[component.id] = Running(
                        kind: .source, input: nil, outputs: outputs, stop: stop, runsIn: nil)
                    tasks.append {
                        await body()
                        self.ended(metrics)
                        // The transforms still in its sending end with it (a split gave the others tasks).
                        let fused = self.live.locked { $0.sourceChains.removeValue(forKey: component.id) }
                        for member in fused?.chain.members ?? [] { self.ended(member.metrics) }
                    }
                case .transform:
                    // This transform and those fused after it, in order.
                    var stages: [TransformStage] = []
                    var member: ComponentDefinition? = component
                    var last = component
                    while let current = member, case .transform(let makeTransform) = current.blueprint.maker {
                        let read = definition.readOutputs(of: current)
                        let transform = makeTransform(TransformContext(id: current.id, log: log, readOutputs: read))
                        stages.append(
                            TransformStage(
                                id: current.id, transform: transform,
                                metrics: metricsByID[current.id]!))
                        if current.id != component.id {
                            metricsByID[current.id]!.provideDetails { ["runs_in": .string(component.id)] }
                        }
                        last = current
                        member = definition.components.first { fused[$0.id] == current.id }
                    }
                    let input = buffers[component.id]!
                    let chainOutput = outputs(of: last)
                    let held = marks[component.id]!
                    for stage in stages {
                        let own: [String: EventOutput]
                        switch (stage.id == last.id, chainOutput) {
                        case (false, _): own = [:]
                        case (true, .single(let edge)): own = ["": edge]
                        case (true, .named(let edges)):
                            own = Dictionary(uniqueKeysWithValues: zip(last.blueprint.outputs, edges).map { ($0, $1) })
                        }
                        running[stage.id] = Running(
                            kind: .transform, input: stage.id == component.id ? input : nil, outputs: own, stop: nil,
                            runsIn: stage.id == component.id ? nil : component.id)
                    }
                    tasks.append { [stages] in
                        for counters in await self.runTransforms(stages, input, chainOutput, held) {
                            self.ended(counters)
                        }
                    }
                case .sink:
                    let input = buffers[component.id]!
                    let body = live.locked { state in
                        task(
                            for: component, metrics: metrics, input: input, outputs: [:], stop: nil,
                            held: marks[component.id]!, in: definition, &state)
                    }
                    running[component.id] = Running(kind: .sink, input: input, outputs: [:], stop: nil, runsIn: nil)
                    tasks.append {
                        await body()
                        self.ended(metrics)
                    }
                }
            }
        }
        live.locked { [running, sourceChains] in
            $0.running = running
            $0.sourceChains = sourceChains
            $0.started = true
        }
        await withTaskGroup(of: Void.self) { group in
            for task in tasks { group.addTask(operation: task) }
        }
        // What reloads added runs on until it drained too (a reload may add more while this waits).
        while let next = live.locked({ $0.added.popLast() }) { await next.value }
        for source in live.locked({ $0.sourceInstances }) { await source.pipelineEnded() }
        periodic.cancel()
        await periodic.value
        if let reporter { await reporter.writeFinal(reporter.makeReport(final: true)) }
        return RunOutcome(failures: failures.locked { $0 }, outputClosed: outputClosed.locked { $0 })
    }

    /// Runs a source until its input ends or `componentStop` fires. A reload that gave it new options stops the
    /// running instance, which leaves its place (``SourceHandOver``); the next one, made from the new options,
    /// goes on from there into the same output with the same counters.
    private func runSource(_ first: any Source, _ context: SourceContext, stoppedBy componentStop: StopSignal) async {
        var source = first
        var context = context
        while true {
            do {
                try await source.run(context)
            } catch {
                fail("source '\(context.id)': \(error)")
                break
            }
            let next = live.locked { state -> (any Source, SourceContext)? in
                // A stopped source takes no replacement (`ended` drops one left waiting); the id may be another
                // kind's by now.
                guard !componentStop.isStopped, let replacement = state.pending[context.id],
                    case .source(let make) = replacement.maker
                else { return nil }
                state.pending[context.id] = nil
                pendingReplacements.subtract(1, ordering: .releasing)
                context.metrics.retype(replacement.typeName)
                let instance = sourceInstance(
                    context.id, make: make, stoppedBy: componentStop, after: context.handOver, &state)
                return (instance.source, context.next(stop: instance.stop, handOver: instance.handOver))
            }
            guard let next else { break }
            (source, context) = next
        }
        context.output.finish()
    }

    /// The transforms that run in their input's task, each mapped to that input's id, and those that run in a
    /// source's sending, each mapped to the source's id (see the type's notes).
    private func fusedTransforms() -> (inTask: [String: String], inSource: [String: String]) {
        let components = Dictionary(uniqueKeysWithValues: definition.components.map { ($0.id, $0) })
        var fused: [String: String] = [:]
        for component in definition.components where component.kind == .transform {
            guard component.buffer == nil || component.buffer == .default, component.inputs.count == 1,
                let input = component.inputs.first, components[input]?.kind == .transform,
                definition.allConsumers(of: input) == [component.id]
            else { continue }
            fused[component.id] = input
        }
        // Stateless transforms right after a source that feeds nothing else, and the stateless ones fused after
        // them, up to the first stateful one, which runs in a task of its own. No limit on their number: they run on
        // every thread that makes the source's batches, so a long chain already shares the cores there.
        var inSource: [String: String] = [:]
        for source in definition.components where source.kind == .source {
            guard
                (source.blueprint.config as? any RunsFollowingStatelessTransforms)?.runsFollowingStatelessTransforms
                    == true,
                let first = components[definition.allConsumers(of: source.id).first ?? ""],
                definition.allConsumers(of: source.id) == [first.id], first.inputs == [source.id],
                first.buffer == nil || first.buffer == .default, Self.isStateless(first)
            else { continue }
            var member = first
            while true {
                inSource[member.id] = source.id
                fused[member.id] = nil
                guard let next = components.values.first(where: { fused[$0.id] == member.id }) else { break }
                guard Self.isStateless(next) else {
                    fused[next.id] = nil
                    break
                }
                member = next
            }
        }
        // Cut long chains into tasks of at most `maxFusedStages`, so that both cores can share their work.
        func position(_ id: String) -> Int { fused[id].map { position($0) + 1 } ?? 0 }
        let positions = fused.keys.map { ($0, position($0)) }
        for (id, position) in positions where position % Self.maxFusedStages == 0 { fused[id] = nil }
        return (fused, inSource)
    }

    /// True for a transform that may run in a source's sending (``TransformConfig/isStateless``).
    private static func isStateless(_ component: ComponentDefinition) -> Bool {
        component.kind == .transform && (component.blueprint.config as? any TransformConfig)?.isStateless == true
            && component.blueprint.outputs.isEmpty
    }

    /// The most transforms one task runs: fusing saves a hop per stage, but a task runs on one core.
    static let maxFusedStages = 4

    /// A transform split off its chain: its input buffer, where it sends, and what it holds.
    private struct SplitPart: Sendable {
        let id: String
        let input: EventBuffer
        let output: ChainOutput
        let held: HeldMark
    }

    /// One transform of a task that runs a chain of them, with its counters.
    private struct TransformStage: Sendable {
        let id: String
        var transform: any Transform
        let metrics: ComponentMetrics
    }

    /// Where the last transform of a chain sends: one edge, or one per named output.
    private enum ChainOutput: Sendable {
        case single(EventOutput)
        case named([EventOutput])

        func finish() {
            switch self {
            case .single(let output): output.finish()
            case .named(let outputs): for output in outputs { output.finish() }
            }
        }
    }

    /// What a stage does first in a pass: process a batch, release what time has closed, or finish.
    private enum Step {
        case process
        case advance
        case finish(stopping: Bool)
    }

    /// Runs a chain of transforms (one, unless fused) on `input`; returns the counters of those it ran to the end
    /// (a split sends the others on in tasks of their own).
    @discardableResult
    private func runTransforms(
        _ stages: [TransformStage], _ input: EventBuffer, _ output: ChainOutput, _ held: HeldMark
    ) async -> [ComponentMetrics] {
        var stages = stages
        var output = output
        while true {
            // What the stages keep is held here from now on; the buffer lets go of the last batch at `next`.
            held.set(stages.lazy.map(\.transform.oldestHeldIngestNanos).min() ?? .max)
            let deadline = stages.lazy.compactMap(\.transform.deadline).min()
            let read = await input.next(deadlineMillis: deadline)
            split(&stages, &output)
            await applyReplacements(&stages, &output)
            // Consumed, so that the batch is the array's only owner: a transform that changes it in place would
            // otherwise copy it first.
            switch consume read {
            case .events(var batch):
                await flow(&batch, through: &stages, from: 0, .process, output)
            case .timedOut:
                let now = WallClock.nowMillis()
                for index in stages.indices where stages[index].transform.deadline.map({ $0 <= now }) ?? false {
                    var released: [Event] = []
                    await flow(&released, through: &stages, from: index, .advance, output)
                }
            case .finished:
                // Each stage emits what it holds, in order, so that what one emits still passes those after it.
                let stopping = stopSignal.isStopped
                for index in stages.indices {
                    var held: [Event] = []
                    await flow(&held, through: &stages, from: index, .finish(stopping: stopping), output)
                }
                output.finish()
                held.clear()
                return stages.map(\.metrics)
            }
        }
    }

    /// Splits the chain when a reload asked to: the first stage goes on here, sending into the second's new buffer;
    /// every other stage goes on in a task of its own, with its state.
    private func split(_ stages: inout [TransformStage], _ output: inout ChainOutput) {
        guard pendingReplacements.load(ordering: .acquiring) > 0, stages.count > 1 else { return }
        guard
            let split = live.locked({ state -> (output: EventOutput, parts: [SplitPart])? in
                guard let split = state.splits.removeValue(forKey: stages[0].id) else { return nil }
                pendingReplacements.subtract(1, ordering: .releasing)
                return split
            })
        else { return }
        for part in split.parts {
            guard let stage = stages.first(where: { $0.id == part.id }) else { continue }
            let task = Task { [self] in
                await runTransforms([stage], part.input, part.output, part.held)
                ended(stage.metrics)
            }
            live.locked { $0.added.append(task) }
        }
        stages.removeSubrange(1...)
        output = .single(split.output)
    }

    /// Replaces the stages a reload changed, upstream first, each after it emitted what it holds through the
    /// stages after it (an open window is cut short, so it is marked partial): the events before this point were
    /// handled by the old transform, those after by the new.
    private func applyReplacements(_ stages: inout [TransformStage], _ output: inout ChainOutput) async {
        for index in stages.indices {
            guard let replacement = takeReplacement(stages[index].id, .transform),
                case .transform(let make) = replacement.maker
            else { continue }
            var held: [Event] = []
            await flow(&held, through: &stages, from: index, .finish(stopping: true), output)
            stages[index].metrics.retype(replacement.typeName)
            stages[index].transform = make(
                TransformContext(id: stages[index].id, log: log, readOutputs: replacement.readOutputs))
            // Named outputs change only on the last stage of a task: nothing runs fused after a named output.
            if let next = replacement.output, index == stages.count - 1 {
                output = next
                for old in replacement.retired { old.finish() }
            }
        }
    }

    /// Runs `step` on stage `start`, then processes what it leaves through the stages after it, and sends the
    /// result on. The first stage's input buffer counts what it receives, the output what the last one sends.
    private func flow(
        _ batch: inout [Event], through stages: inout [TransformStage], from start: Int, _ step: Step,
        _ output: ChainOutput
    ) async {
        let now = WallClock.nowMillis()
        var routed: TransformPass?
        for index in start..<stages.count {
            if index > start { stages[index].metrics.recordReceived(batch.count) }
            let current = index == start ? step : .process
            if case .process = current, let limit = stages[index].transform.maxEventsPerPass, batch.count > limit {
                // In parts, each through the rest of the chain and sent before the next is processed.
                let whole = exchange(&batch, with: [])
                for partStart in stride(from: 0, to: whole.count, by: limit) {
                    var part = Array(whole[partStart..<min(partStart + limit, whole.count)])
                    await flow(&part, through: &stages, from: index, .process, output)
                }
                return
            }
            var pass = TransformPass(nowMillis: now)
            switch current {
            case .process: stages[index].transform.process(&batch, &pass)
            case .advance: stages[index].transform.advance(&batch, &pass)
            case .finish(let stopping): stages[index].transform.finish(&batch, &pass, stopping: stopping)
            }
            stages[index].metrics.record(pass, state: stages[index].transform.state)
            if index < stages.count - 1 {
                stages[index].metrics.recordSent(batch.count)
                stages[index].metrics.tap.offer(batch)
            } else {
                routed = pass
            }
        }
        // Each batch goes with its ownership, so that its consumer holds the array's only reference.
        switch output {
        case .single(let edge):
            await edge.send(exchange(&batch, with: []))
        case .named(let edges):
            // Moved out of the pass, whose copy would share the outputs (and their consumers copy each batch).
            guard var pass = routed.take() else { return }
            stages[stages.count - 1].metrics.recordSent(pass.routedEvents)
            for index in edges.indices where index < pass.routed.count {
                await edges[index].send(exchange(&pass.routed[index], with: []))
            }
        }
    }

    private func runSink(_ sink: any Sink, _ input: EventBuffer, _ context: SinkContext) async {
        do {
            var sink = sink
            try await sink.run(input, context)
            // A reload handed the input over: the replacement goes on from the next batch.
            while let replacement = takeReplacement(context.id, .sink), case .sink(let make) = replacement.maker {
                context.metrics.retype(replacement.typeName)
                sink = make()
                try await sink.run(input, context)
            }
        } catch OutputError.closedByReader {
            // `sluice run p.yaml | head -1`: the reader has what it wanted; stop quietly.
            outputClosed.locked { $0 = true }
            input.close()
            stopSignal.stop()
            return
        } catch {
            fail("sink '\(context.id)': \(error)")
        }
        input.close()
    }

    /// Records a failure, reports it, and stops the pipeline: a run with a failed component ends with exit 1.
    private func fail(_ message: String) {
        failures.locked { $0.append(message) }
        log.error(message)
        stopSignal.stop()
    }
}
