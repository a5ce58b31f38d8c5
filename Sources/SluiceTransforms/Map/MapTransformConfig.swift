public import SluiceCore

/// Options of the `map` transform: `rename`, then `merge`, then `set` (in order), then `remove`, then `keep`.
public struct MapTransformConfig: TransformConfig {
    public static let typeName = "map"
    public static let summary = "Renames, merges, sets (from expressions), removes and keeps fields of each event."

    /// Fields renamed, old path to new path, in order.
    public private(set) var rename: [(from: EventPath, to: EventPath)] = []
    /// An expression whose object is merged into the event's top level (`merge: parse_logfmt(.message)`); null
    /// merges nothing, anything else is an evaluation error.
    public private(set) var merge: Expression?
    /// Fields set from expressions, in order; later entries see earlier ones.
    public private(set) var set: [(target: EventPath, value: Expression)] = []
    /// Fields removed.
    public private(set) var remove: [EventPath] = []
    /// When not empty, only these fields remain.
    public private(set) var keep: [EventPath] = []

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        func path(_ text: String, at mark: FilePosition) -> EventPath? {
            guard let path = EventPath(text) else {
                options.log.error(
                    "invalid field path '\(text)'", at: mark,
                    notes: ["write a field name or a dotted path such as location.lat"])
                return nil
            }
            return path
        }
        if let mapping = options.value("rename")?.mapping() {
            for (key, keyMark, value) in mapping.allEntries(naming: { "the new name of '\($0)'" }) {
                if let from = path(key, at: keyMark), let text = value.string(), let to = path(text, at: value.mark) {
                    rename.append((from, to))
                }
            }
        }
        merge = options.value("merge")?.expression()
        if let mapping = options.value("set")?.mapping() {
            for (key, keyMark, value) in mapping.allEntries(naming: { "'\($0)'" }) {
                if let target = path(key, at: keyMark), let expression = value.expression() {
                    set.append((target, expression))
                }
            }
        }
        for (field, listName) in [(\MapTransformConfig.remove, "remove"), (\MapTransformConfig.keep, "keep")] {
            for (text, mark) in options.value(listName)?.stringList() ?? [] {
                if let parsed = path(text, at: mark) { self[keyPath: field].append(parsed) }
            }
        }
        if rename.isEmpty, merge == nil, set.isEmpty, remove.isEmpty, keep.isEmpty, !options.log.hasErrors {
            options.log.warning(
                "\(options.name) changes nothing", at: options.mark,
                notes: ["give it rename, merge, set, remove or keep"])
        }
        try options.validated()
    }

    /// True when the map only sets fields, so it can work on events that still hold their text.
    var onlySets: Bool { rename.isEmpty && merge == nil && remove.isEmpty && keep.isEmpty }

    /// Expressions per event: nothing kept between events but where fields were.
    public var isStateless: Bool { true }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        MapTransform(
            config: self, errors: EvaluationErrorLog(componentID: context.id, log: context.log),
            states: set.map { $0.value.makeState() }, mergeState: merge?.makeState(),
            targets: set.map { $0.target.keys.count == 1 ? FieldLocator($0.target.keys[0]) : nil },
            numericCodes: set.map { $0.value.numericCode })
    }
}
