internal import CLibWebSockets

/// Reassembles a WebSocket message from the fragments lws delivers, and enforces the size limit.
struct MessageAssembler {
    /// What one receive callback completed.
    enum Outcome {
        /// Nothing complete yet.
        case incomplete
        /// A whole message.
        case message(WebSocketMessage)
        /// The message is over the limit (its size as far as known); the rest of it will be skipped.
        case oversize(Int)
    }

    let maxMessageBytes: Int
    private var partial: [UInt8] = []
    private var discarding = false

    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Takes the payload of one receive callback on `wsi`.
    mutating func receive(_ wsi: OpaquePointer?, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Outcome {
        let first = lws_is_first_fragment(wsi) != 0
        let final = lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0
        let bytes = UnsafeBufferPointer(
            start: input?.assumingMemoryBound(to: UInt8.self), count: input == nil ? 0 : length)
        if first {
            partial.removeAll(keepingCapacity: partial.capacity <= 1 << 20)
            discarding = false
        }
        if discarding { return .incomplete }
        // The frame header announces the rest of this frame: a message that will not fit is refused now, not after
        // buffering up to the limit (a peer announcing 2 GiB and trickling it costs nothing).
        let announced = partial.count + bytes.count + Int(lws_remaining_packet_payload(wsi))
        if announced > maxMessageBytes {
            discarding = true
            partial.removeAll()
            return .oversize(announced)
        }
        let binary = lws_frame_is_binary(wsi) != 0
        // Fast path: a message in one callback is copied once, straight from lws' buffer.
        if first, final { return .message(WebSocketMessage(bytes: Array(bytes), isBinary: binary)) }
        partial.append(contentsOf: bytes)
        guard final else { return .incomplete }
        defer { partial.removeAll(keepingCapacity: partial.capacity <= 1 << 20) }
        return .message(WebSocketMessage(bytes: partial, isBinary: binary))
    }

    /// Forgets any partial message (the connection changed).
    mutating func reset() {
        partial.removeAll()
        discarding = false
    }
}

/// Writes one message with the `LWS_PRE` bytes lws needs in front; the copy also protects the caller's bytes from
/// a client's in-place masking. Returns false when lws did not take it all.
func writeMessage(_ wsi: OpaquePointer?, _ bytes: [UInt8], binary: Bool = false) -> Bool {
    let pre = sluice_lws_pre()
    var scratch = [UInt8](repeating: 0, count: pre + bytes.count)
    scratch.replaceSubrange(pre..., with: bytes)
    let written = scratch.withUnsafeMutableBufferPointer { buffer in
        lws_write(wsi, buffer.baseAddress! + pre, bytes.count, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT)
    }
    return written >= bytes.count
}
