public import SluiceCore

/// Options of the `dedupe` transform.
public struct DedupeTransformConfig: TransformConfig {
    public static let typeName = "dedupe"
    public static let summary = "Drops events whose key (fields) was seen recently: an LRU cache with a TTL."

    /// The expressions whose values make an event's key.
    let fields: [Expression]
    /// Keys remembered at most; past it the least recently seen is forgotten.
    public let maxKeys: Int
    /// How long a key is remembered after it was last seen, in milliseconds; `nil`: until it is forgotten.
    public let ttlMillis: Int64?

    public init(reading options: ConfigMapping) throws(InvalidConfig) {
        var fields: [Expression]?
        if let list = options.required("fields", note: "for example 'fields: [.device, .seq]'")?.list(
            example: "for example 'fields: [.device, .seq]'")
        {
            fields = list.compactMap { $0.expression() }
            if list.isEmpty {
                options.log.error(
                    "'fields' is empty", at: options.value("fields")?.mark, notes: ["name at least one field"])
            }
        }
        var maxKeys = 100_000
        var ttl: Double?
        if let cache = options.value("cache")?.mapping() {
            if let value = cache.value("max_keys")?.int(in: 1...100_000_000) { maxKeys = value }
            ttl = cache.value("ttl_secs")?.double(in: 0.001...31_536_000)
            cache.finish()
        }
        self.fields = try options.validated(fields)
        self.maxKeys = maxKeys
        self.ttlMillis = ttl.map { Int64(($0 * 1000).rounded()) }
    }

    public func makeTransform(_ context: TransformContext) -> any Transform {
        DedupeTransform(config: self, errors: EvaluationErrorLog(componentID: context.id, log: context.log))
    }
}
