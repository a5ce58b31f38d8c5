import SluiceCore
import Testing

@testable import SluiceTransforms

/// An aggregate's groups: with tumbling and hopping windows a group whose last state closed stays known until the
/// next window closes, and is forgotten then unless it opened a state in between; with sessions it is forgotten at
/// once.
struct GroupsTests {
    static func key(_ number: UInt64) -> KeyFingerprint {
        KeyFingerprint(hash: number &* 0x9E37_79B9_7F4A_7C15, check: number)
    }

    @Test func anIdleGroupIsKeptThroughOneClosingAndForgottenAfterTheNextUnlessUsed() {
        var groups = Groups(width: 1, keepsIdle: true)
        let a = groups.add(Self.key(1), ["a"])
        let b = groups.add(Self.key(2), ["b"])
        groups.opened(in: a)
        groups.opened(in: b)
        // The first window closes: both go idle and stay known.
        groups.closed(10, in: a)
        groups.closed(11, in: b)
        groups.endRound()
        #expect(groups.number(of: Self.key(1)) == a)
        #expect(groups.number(of: Self.key(2)) == b)
        // Only `a` has an event in the next window; when it closes, `b` is forgotten and `a` is idle again.
        groups.opened(in: a)
        groups.closed(12, in: a)
        groups.endRound()
        #expect(groups.number(of: Self.key(1)) == a)
        #expect(groups.number(of: Self.key(2)) == nil)
        // `b`'s number is reused for the next new group, with that group's values.
        let c = groups.add(Self.key(3), ["c"])
        #expect(c == b)
        #expect(Array(groups.values(of: c)) == ["c"])
        groups.endRound()
        #expect(groups.number(of: Self.key(1)) == nil, "idle through a whole round")
        #expect(groups.number(of: Self.key(3)) == c, "added in the round, not idle")
    }

    @Test func withoutKeepingIdleGroupsAGroupGoesWithItsLastState() {
        var groups = Groups(width: 1, keepsIdle: false)
        let a = groups.add(Self.key(1), ["a"])
        groups.opened(in: a)
        groups.opened(in: a)
        groups.closed(1, in: a)
        #expect(groups.number(of: Self.key(1)) == a, "one state still open")
        groups.closed(2, in: a)
        #expect(groups.number(of: Self.key(1)) == nil)
    }
}
