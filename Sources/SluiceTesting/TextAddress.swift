public import SluiceCore

/// Where `event`'s text is stored, `nil` for an event that holds a parsed value: two events with one address
/// share their text, and a buffer reused from the pool keeps its address.
package func textAddress(of event: Event) -> UnsafeRawPointer? {
    event.withText { text, _, _ in text.baseAddress.map(UnsafeRawPointer.init) }
}
