public import SluiceCore

/// Options of the `filter` transform.
public struct FilterTransformConfig: TransformConfig {
    public static let typeName = "filter"
    public static let summary = "Keeps events whose condition is true; false and null are discarded as filtered."

    /// The condition, compiled at load.
    public let condition: Expression

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        let condition = options.required("condition", note: "for example 'condition: .temperature > 30'")?.expression()
        self.condition = try options.validated(condition)
    }

    /// A condition per event: nothing kept between events but where fields were.
    public var isStateless: Bool { true }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        FilterTransform(
            condition: condition, errors: EvaluationErrorLog(componentID: context.id, log: context.log),
            state: condition.makeState(), numericCode: condition.numericCode)
    }
}
