internal import SluiceYAML

/// Reads a pipeline file's `tests:` section, once its components are known: every test names components that
/// exist, checks only transforms and sinks its inserted events can reach, and gives events as YAML values.
struct PipelineTestReader {
    /// Every component whose id could be read: its kind, its named outputs (`nil` when its options were invalid,
    /// so that its own errors say what is wrong) and what it reads from.
    struct ComponentNode {
        let kind: ComponentKind
        let outputs: [String]?
        let inputs: [String]
    }

    let components: [String: ComponentNode]
    let log: DiagnosticLog

    func read(_ node: ConfigNode) -> [PipelineTest] {
        let example =
            "for example 'tests: [{name: warm, inputs: [{insert_at: hot, events: [{t: 31}]}], "
            + "outputs: [{extract_from: hot, conditions: [.t == 31]}]}]'"
        guard let items = node.list(example: example) else { return [] }
        var tests: [PipelineTest] = []
        var names: [String: Int] = [:]
        for item in items {
            guard let test = readTest(item) else { continue }
            if let line = names[test.name] {
                log.error(
                    "duplicate test name '\(test.name)'", at: test.mark,
                    notes: ["a test named '\(test.name)' is already at line \(line)"])
                continue
            }
            names[test.name] = test.mark.line
            tests.append(test)
        }
        return tests
    }

    private func readTest(_ node: ConfigNode) -> PipelineTest? {
        guard let test = node.mapping() else { return nil }
        let errorsBefore = log.errorCount
        let name = test.required("name", note: "give each test a name for its report")?.string()
        var inputs: [PipelineTest.Input] = []
        if let list = test.required("inputs", note: "add 'inputs: [{insert_at: ID, events: [...]}]'")?.list(
            example: "write 'inputs: [{insert_at: ID, events: [...]}]'")
        {
            if list.isEmpty { log.error("a test needs at least one input", at: test.mark) }
            inputs = list.compactMap(readInput)
        }
        let outputs =
            test.value("outputs")?.list(example: "write 'outputs: [{extract_from: ID, conditions: [...]}]'")
            .map { $0.compactMap(readOutput) } ?? []
        let silent =
            test.value("no_output_from")?.stringList()?.map { PipelineTest.Reference(text: $0, mark: $1) } ?? []
        test.finish()
        if outputs.isEmpty && silent.isEmpty {
            log.error(
                "test '\(name ?? "")' checks nothing", at: test.mark,
                notes: ["add 'outputs' (what must come out of a transform) or 'no_output_from' (what must not)"])
        }
        for reference in silent { checkReference(reference, of: "no_output_from") }
        for output in outputs { checkReference(output.extractFrom, of: "extract_from") }
        checkReachable(outputs.map(\.extractFrom) + silent, from: inputs)
        guard let name, log.errorCount == errorsBefore else { return nil }
        return PipelineTest(name: name, mark: test.mark, inputs: inputs, outputs: outputs, noOutputFrom: silent)
    }

    private func readInput(_ node: ConfigNode) -> PipelineTest.Input? {
        guard let input = node.mapping() else { return nil }
        let target = input.required(
            "insert_at",
            note: "name the transform or sink whose input receives the events, or the source that emits them")
        let id = target?.string()
        let events = input.required("events", note: "give the events as a list, for example 'events: [{t: 31}]'")?
            .list(example: "write 'events: [{t: 31}, {t: 12}]'")
        input.finish()
        if let id, let target, components[id] == nil {
            log.error(
                "insert_at '\(id)' is not a component", at: target.mark,
                notes: [Suggestion.expectedOneOf(components.keys.sorted(), given: id)])
        }
        if let events, events.isEmpty, let mark = target?.mark {
            log.error("no events to insert at '\(id ?? "")'", at: mark)
        }
        guard let id, let target, let events else { return nil }
        let values = events.compactMap(Self.eventValue)
        guard values.count == events.count else { return nil }
        return PipelineTest.Input(insertAt: id, events: values, mark: target.mark)
    }

    private func readOutput(_ node: ConfigNode) -> PipelineTest.Output? {
        guard let output = node.mapping() else { return nil }
        let from = output.required("extract_from", note: "name the transform whose output is checked, or a sink")
        let text = from?.string()
        let conditionNodes =
            output.value("conditions")?.list(example: "write 'conditions: [.t > 30, .device == \"d1\"]'") ?? []
        let conditions = conditionNodes.compactMap { node in
            node.expression().map { PipelineTest.Condition(expression: $0, mark: node.mark) }
        }
        let count = output.value("count")?.int(in: 0...1_000_000)
        output.finish()
        guard let text, let from else { return nil }
        if conditionNodes.isEmpty && count == nil {
            log.error(
                "extract_from '\(text)' checks nothing", at: from.mark,
                notes: ["add 'conditions' (met by at least one event) or 'count' (how many events)"])
        }
        return PipelineTest.Output(
            extractFrom: PipelineTest.Reference(text: text, mark: from.mark), conditions: conditions, count: count)
    }

    // MARK: - References

    /// A checked reference names a transform (and one of its named outputs when it has them) or a sink: what the
    /// sink would write.
    private func checkReference(_ reference: PipelineTest.Reference, of key: String) {
        let parsed = InputReference(reference.text)
        let checkable = components.filter { $0.value.kind != .source }.keys.sorted()
        guard let component = components[parsed.id], component.kind != .source else {
            log.error(
                "\(key) '\(reference.text)' is not a transform or sink", at: reference.mark,
                notes: [
                    checkable.isEmpty
                        ? "the pipeline has no transforms or sinks"
                        : Suggestion.expectedOneOf(checkable, given: parsed.id)
                ])
            return
        }
        guard let named = component.outputs, let problem = parsed.outputProblem(named: named, verb: "check") else {
            return
        }
        log.error(problem.message, at: reference.mark, notes: [problem.note])
    }

    /// A checked component must be one the inserted events can reach, or the check could never fail (or pass).
    private func checkReachable(_ references: [PipelineTest.Reference], from inputs: [PipelineTest.Input]) {
        // An unknown insert_at was reported already; what it would have reached is unknown too.
        guard inputs.allSatisfy({ components[$0.insertAt] != nil }) else { return }
        var reached = Set(inputs.map(\.insertAt))
        var frontier = Array(reached)
        while let id = frontier.popLast() {
            for (consumer, node) in components
            where !reached.contains(consumer) && node.inputs.contains(where: { InputReference($0).id == id }) {
                reached.insert(consumer)
                frontier.append(consumer)
            }
        }
        for reference in references {
            let id = InputReference(reference.text).id
            guard components[id] != nil, !reached.contains(id), !inputs.isEmpty else { continue }
            log.error(
                "no event inserted by this test can reach '\(id)'", at: reference.mark,
                notes: [
                    "events are inserted at " + Set(inputs.map { "'\($0.insertAt)'" }).sorted().joined(separator: ", ")
                        + "; '\(id)' does not read from them"
                ])
        }
    }

    // MARK: - Event values

    /// A YAML value as JSON, by YAML's core schema: plain `null`, `~` or nothing is null, plain `true` and `false`
    /// are booleans, a plain JSON number is a number, anything else (quoted, or tagged `!!str`) a string. Values
    /// are taken as written: `${...}` in an event is not replaced.
    static func eventValue(_ node: ConfigNode) -> JSONValue? {
        func convert(_ yaml: YAMLNode) -> JSONValue? {
            switch yaml.content {
            case .scalar(let scalar):
                guard scalar.isPlain, scalar.tag == nil else { return .string(scalar.value) }
                switch scalar.value {
                case "", "~", "null", "Null", "NULL": return .null
                case "true", "True", "TRUE": return .bool(true)
                case "false", "False", "FALSE": return .bool(false)
                default:
                    let first = scalar.value.utf8.first ?? 0
                    guard first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
                        let number = try? JSONReader.parse(scalar.value)
                    else { return .string(scalar.value) }
                    return number
                }
            case .sequence(let items):
                var values: [JSONValue] = []
                for item in items {
                    guard let value = convert(item) else { return nil }
                    values.append(value)
                }
                return .array(values)
            case .mapping(let pairs):
                // Keys checked in a set, not by looking each up in the object: that took quadratic time (six
                // seconds for an event of 40,000 keys).
                var fields: [JSONObject.Field] = []
                var keys: Set<String> = []
                for pair in pairs {
                    guard case .scalar(let key) = pair.key.content else {
                        node.log.error(
                            "expected a plain key in an event, found \(pair.key.kindDescription)",
                            at: FilePosition(pair.key.mark))
                        return nil
                    }
                    guard keys.insert(key.value).inserted else {
                        node.log.error("duplicate key '\(key.value)' in an event", at: FilePosition(pair.key.mark))
                        return nil
                    }
                    guard let value = convert(pair.value) else { return nil }
                    fields.append(JSONObject.Field(key: key.value, value: value))
                }
                return .object(JSONObject(uniqueFields: fields))
            }
        }
        return convert(node.node)
    }
}
