// Evidence for running AddressSanitizer without LeakSanitizer (`scripts/sanitize address` runs this first).
//
// A tree built by a task and held in the async main's local variable, then exit(0): nothing is lost, the memory
// is in use until the process ends. LeakSanitizer still reports every node as a direct leak, because it does not
// scan async task frames for pointers. `sluice` ends the same way (exit with its compiled pipeline still held),
// so every run would "leak" its compiled expressions. Growth over time, the leak that matters for a long-running
// stream processor, is what `scripts/soak` measures: flat RSS over 10 minutes per buffer policy.
#if canImport(Glibc)
    import Glibc
#endif

indirect enum Node {
    case leaf(Int)
    case pair(Node, Node)
}

func build(_ depth: Int) -> Node { depth == 0 ? .leaf(1) : .pair(build(depth - 1), build(depth - 1)) }

func count(_ node: Node) -> Int {
    switch node {
    case .leaf(let value): return value
    case .pair(let left, let right): return count(left) + count(right)
    }
}

let tree = await Task.detached { build(6) }.value
print(count(tree))
exit(0)
