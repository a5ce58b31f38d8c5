import Foundation
import SluiceKafka
import Testing

@Suite(
    .disabled(
        if: ProcessInfo.processInfo.environment["SLUICE_SANITIZER"] == "thread",
        """
        librdkafka starts its threads with C11 thrd_create, which ThreadSanitizer does not intercept, and TSan's \
        allocator then crashes in them (SIGSEGV in calloc on rdk:main), as the Kafka end-to-end tests say
        """))
struct KafkaProducerTests {
    /// The producer's thread waits in `rd_kafka_poll` (100 ms at a time in a run); shutting down used to wait that
    /// out, so every run that wrote to Kafka ended up to 100 ms late (one event took 122 ms, kcat 12). Here the
    /// poll waits ten minutes, so that a stop that waited for it could not pass on a loaded machine (the bound is loose:
    /// the CI machine once held two tests of this target up for 37 s). No broker is
    /// needed (none is named, so that no connection error wakes the poll): with nothing queued, nothing is left to
    /// flush.
    @Test func shuttingDownAnIdleProducerDoesNotWaitForItsPoll() async throws {
        let events = KafkaClientEvents(log: { _ in }, error: { _, _ in })
        let producer = try KafkaProducer(
            settings: KafkaSettings(), events: events, onDeliveries: { _ in },
            pollMillis: 600_000)
        let start = ContinuousClock.now
        await producer.shutDown(flushMillis: 30_000)
        #expect(ContinuousClock.now - start < .seconds(300))
    }
}
