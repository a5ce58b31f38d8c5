internal import SluiceSync
internal import Synchronization

/// Carries a source's place in its input from one instance to the next when a reload gives the source new options.
///
/// The runner marks the running instance's hand-over as wanted and stops it; the instance, seeing
/// ``isWanted``, leaves its place with ``leave(_:)`` (stdin its partly read line, a file source its positions and
/// checkpoints, a Kafka source nothing: it commits and leaves the group before it returns) instead of ending
/// what it holds as at a final stop. The next instance, made from the new options, takes the place with
/// ``take(_:)`` and goes on from there, sending into the same output with the same counters.
public final class SourceHandOver: Sendable {
    private struct State {
        var wanted = false
        var place: (any Sendable)?
    }
    private let state: Mutex<State>

    /// The hand-over of an instance that follows `previous`, whose place it carries; a first instance has none.
    init(after previous: SourceHandOver? = nil) {
        state = Mutex(State(place: previous?.state.locked { $0.place.take() }))
    }

    /// True once a reload asked this instance to stop for another with new options: it leaves its place.
    public var isWanted: Bool { state.locked { $0.wanted } }

    /// Marks the hand-over as wanted; the runner then stops the instance.
    func want() { state.locked { $0.wanted = true } }

    /// Leaves the instance's place for the next one.
    public func leave(_ place: any Sendable) { state.locked { $0.place = place } }

    /// The place the previous instance left, if it left one of this type; taken, so it is used once.
    public func take<Place: Sendable>(_ type: Place.Type) -> Place? {
        state.locked { state -> Place? in
            guard let place = state.place as? Place else { return nil }
            state.place = nil
            return place
        }
    }
}
