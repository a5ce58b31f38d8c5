import SluiceKafka
import Testing

struct KafkaProducerTests {
    /// The producer's thread waits in `rd_kafka_poll` for up to 100 ms; shutting down used to wait that out, so
    /// every run that wrote to Kafka ended about 100 ms late (a run of one event took 122 ms, kcat's 12). No broker
    /// is needed (none is named, so that no connection error wakes the poll): with nothing queued, nothing is left
    /// to flush.
    @Test func shuttingDownAnIdleProducerDoesNotWaitForItsPoll() async throws {
        let events = KafkaClientEvents(log: { _ in }, error: { _, _ in })
        let producer = try KafkaProducer(
            settings: KafkaSettings(), events: events,
            onDelivery: { _, _ in }, afterDeliveries: {})
        let start = ContinuousClock.now
        await producer.shutDown(flushMillis: 30_000)
        #expect(ContinuousClock.now - start < .milliseconds(50))
    }
}
