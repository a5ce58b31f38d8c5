#if canImport(Glibc)
    internal import Glibc
#endif

// One executable for every fuzz target: `SluiceFuzz <target> [libFuzzer options and corpus directories]`.
// libFuzzer's own `main` is not used (SwiftPM gives executables a Swift entry point), so this entry point picks
// the target and hands the remaining arguments to libFuzzer's driver.

typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>, Int) -> CInt

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ target: FuzzTarget
) -> CInt

let targets: [String: FuzzTarget] = [
    "json": fuzzJSON, "config": fuzzConfig, "expression": fuzzExpression, "stream": fuzzStream,
]

let arguments = CommandLine.arguments
guard arguments.count >= 2, let target = targets[arguments[1]] else {
    print("usage: SluiceFuzz <\(targets.keys.sorted().joined(separator: "|"))> [libFuzzer arguments]")
    exit(64)
}
// libFuzzer reads argv[0] as the program and the rest as its options; drop the target name.
var argv = [CommandLine.unsafeArgv[0]] + (2..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0] }
argv.append(nil)
var argc = CInt(argv.count - 1)
let status = argv.withUnsafeMutableBufferPointer { buffer in
    var base = buffer.baseAddress!
    return runFuzzerDriver(&argc, &base, target)
}
exit(status)
