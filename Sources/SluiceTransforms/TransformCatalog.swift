public import SluiceCore

/// Every transform type; adding a transform is one folder and one line here.
public enum TransformCatalog {
    /// The registered transform types (map and filter arrive with the expression language).
    public static let all: [any TransformConfig.Type] = []
}
