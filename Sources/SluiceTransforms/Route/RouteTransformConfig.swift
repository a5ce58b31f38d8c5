public import SluiceCore

/// Options of the `route` transform.
public struct RouteTransformConfig: TransformConfig {
    public static let typeName = "route"
    public static let summary = "Sends each event to every route whose condition is true (read as <id>.<route>)."

    /// The output every event that matches no route goes to.
    public static let unmatched = "_unmatched"

    /// The routes, in the order written.
    let routes: [(name: String, condition: Expression)]

    public var outputs: [String] { routes.map(\.name) + [Self.unmatched] }

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        var routes: [(name: String, condition: Expression)] = []
        if let mapping = options.required("routes", note: "for example 'routes: {errors: .level == \"error\"}'")?
            .mapping()
        {
            for (name, keyMark, value) in mapping.allEntries(naming: { "route '\($0)'" }) {
                let valid =
                    !name.isEmpty && !name.hasPrefix("_")
                    && name.unicodeScalars.allSatisfy {
                        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
                    }
                if !valid {
                    options.log.error(
                        "invalid route name '\(name)'", at: keyMark,
                        notes: ["route names use letters, digits, '_' and '-', and do not start with '_'"])
                }
                if let condition = value.expression(), valid { routes.append((name, condition)) }
            }
            if mapping.keys.isEmpty {
                options.log.error("'routes' is empty", at: mapping.mark, notes: ["give at least one route"])
            }
        }
        try options.validated()
        self.routes = routes
    }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        RouteTransform(
            routes: routes, unmatchedIsRead: context.readOutputs.contains(Self.unmatched),
            errors: EvaluationErrorLog(componentID: context.id, log: context.log))
    }
}
