#if canImport(Glibc)
    internal import Glibc
#endif

/// Counts distinct values: exactly (a set of 64-bit hashes) up to ``exactLimit`` values, then with a HyperLogLog of
/// 2^14 one-byte registers (Flajolet et al. 2007), whose standard error is 1.04 / √16384 ≈ 0.8 %, with linear
/// counting for the small range. 16 KiB at most, however many values.
struct DistinctCounter: Sendable {
    /// Distinct values counted exactly.
    static let exactLimit = 1000
    static let precision = 14
    static let registerCount = 1 << precision

    private var exact: Set<UInt64> = []
    private var registers: [UInt8] = []

    /// Counts `hash`, a 64-bit hash of the value's canonical bytes.
    mutating func add(hash: UInt64) {
        if registers.isEmpty {
            exact.insert(hash)
            if exact.count > Self.exactLimit {
                registers.append(contentsOf: repeatElement(0, count: Self.registerCount))
                for hash in exact { addToRegisters(hash) }
                exact = []
            }
        } else {
            addToRegisters(hash)
        }
    }

    /// Empties it, keeping the storage of the exact set and the registers.
    mutating func reset() {
        exact.removeAll(keepingCapacity: true)
        registers.removeAll(keepingCapacity: true)
    }

    /// Counts every value the counter at `other` counted in the one at `counter` (another), reading `other` where it
    /// lies: a hopping window merges each pane into every window that holds it, and a copy of the pane's counter
    /// retained its set and its registers.
    static func merge(_ other: UnsafePointer<DistinctCounter>, into counter: UnsafeMutablePointer<DistinctCounter>) {
        precondition(UnsafePointer(counter) != other, "A counter cannot be merged into itself.")
        if other.pointee.registers.isEmpty {
            for hash in other.pointee.exact { counter.pointee.add(hash: hash) }
            return
        }
        if counter.pointee.registers.isEmpty {
            let mine = counter.pointee.exact
            counter.pointee = other.pointee
            for hash in mine { counter.pointee.add(hash: hash) }
            return
        }
        other.pointee.registers.withUnsafeBufferPointer { theirs in
            counter.pointee.registers.withUnsafeMutableBufferPointer { mine in
                for index in mine.indices { mine[index] = max(mine[index], theirs[index]) }
            }
        }
    }

    /// The number of distinct values: exact up to ``exactLimit``, estimated above.
    var estimate: Int {
        guard !registers.isEmpty else { return exact.count }
        let m = Double(Self.registerCount)
        var sum = 0.0
        var zeros = 0
        for register in registers {
            sum += 1 / Double(UInt64(1) << UInt64(register))
            if register == 0 { zeros += 1 }
        }
        let alpha = 0.7213 / (1 + 1.079 / m)
        let raw = alpha * m * m / sum
        if raw <= 2.5 * m, zeros > 0 {
            // Small range: linear counting of the empty registers is the better estimate.
            return Int((m * log(m / Double(zeros))).rounded())
        }
        return Int(raw.rounded())
    }

    private mutating func addToRegisters(_ hash: UInt64) {
        let index = Int(hash >> UInt64(64 - Self.precision))
        let rest = hash << UInt64(Self.precision)
        let rank = UInt8(min(rest.leadingZeroBitCount, 64 - Self.precision) + 1)
        if rank > registers[index] { registers[index] = rank }
    }
}
