public import SluiceCore

/// Every transform type; adding a transform is one folder and one line here.
public enum TransformCatalog {
    /// The registered transform types.
    public static let all: [ComponentType] = [
        .transform(FilterTransformConfig.self),
        .transform(MapTransformConfig.self),
        .transform(AggregateTransformConfig.self),
        .transform(DedupeTransformConfig.self),
        .transform(ThrottleTransformConfig.self),
        .transform(SampleTransformConfig.self),
        .transform(RouteTransformConfig.self),
    ]
}
