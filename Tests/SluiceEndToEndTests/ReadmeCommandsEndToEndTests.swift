import Foundation
import Testing

/// The README's first command sets up a fresh Debian machine for root (containers and CI, where there is no sudo)
/// and for a user with sudo. `scripts/install-deps` runs here against stand-ins for `id`, `sudo` and `apt-get` on a
/// PATH that holds nothing else, so that it neither needs root nor installs anything.
@Suite(.blocking)
struct ReadmeCommandsEndToEndTests {
    /// The lines of the README's first `sh` block.
    static func firstCommand() throws -> String {
        let readme = try String(
            contentsOf: SluiceProcess.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let block = try #require(readme.components(separatedBy: "```sh\n").dropFirst().first)
        return try #require(block.components(separatedBy: "\n```").first)
    }

    /// A directory of stand-ins: `id` prints `$FAKE_UID`, `apt-get` records its arguments, and `sudo` (when
    /// wanted) records its arguments and runs them as uid 0.
    struct FakeSystem {
        let directory: URL
        var log: URL { directory.appendingPathComponent("calls.log") }

        init(withSudo: Bool) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("fake-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var tools = [
                "id": "#!/bin/sh\necho \"$FAKE_UID\"\n",
                "apt-get": "#!/bin/sh\necho \"apt-get uid=$FAKE_UID $*\" >> \"$FAKE_LOG\"\n",
            ]
            if withSudo {
                tools["sudo"] = "#!/bin/sh\necho \"sudo $*\" >> \"$FAKE_LOG\"\nFAKE_UID=0 exec \"$@\"\n"
            }
            for (name, script) in tools {
                let path = directory.appendingPathComponent(name).path
                try script.write(toFile: path, atomically: true, encoding: .utf8)
                chmod(path, 0o755)
            }
            // `#!/usr/bin/env bash` looks bash up on the PATH.
            try FileManager.default.createSymbolicLink(
                atPath: directory.appendingPathComponent("bash").path, withDestinationPath: "/bin/bash")
        }

        /// Runs `command` through bash with only the stand-ins on the PATH; returns its status and the calls made.
        func run(_ command: String, uid: Int) throws -> (status: Int32, calls: [String], errors: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", command]
            process.currentDirectoryURL = SluiceProcess.repository
            process.environment = [
                "PATH": directory.path, "FAKE_UID": String(uid), "FAKE_LOG": log.path, "HOME": directory.path,
            ]
            let errors = Pipe()
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let calls = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return (process.terminationStatus, calls, errorText)
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test func theFirstCommandNeedsNoSudoAndRunsTheDemo() throws {
        let command = try Self.firstCommand()
        #expect(!command.contains("sudo"), "the first command works as root on a machine without sudo")
        let parts = command.components(separatedBy: " && ")
        #expect(parts == ["scripts/install-deps", "scripts/demo"])
        for script in parts {
            #expect(
                FileManager.default.isExecutableFile(
                    atPath: SluiceProcess.repository.appendingPathComponent(script).path))
        }
    }

    @Test func asRootWithoutSudoTheDependenciesAreInstalledDirectly() throws {
        let system = try FakeSystem(withSudo: false)
        defer { system.remove() }
        let install = try #require(try Self.firstCommand().components(separatedBy: " && ").first)
        let result = try system.run(install, uid: 0)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.calls.first == "apt-get uid=0 update")
        #expect(result.calls.contains { $0.hasPrefix("apt-get uid=0 install") && $0.contains("libwebsockets-dev") })
        #expect(!result.calls.contains { $0.hasPrefix("sudo") })
    }

    @Test func asAUserItElevatesItselfWithSudo() throws {
        let system = try FakeSystem(withSudo: true)
        defer { system.remove() }
        let result = try system.run("scripts/install-deps", uid: 1000)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.calls.first == "sudo scripts/install-deps")
        #expect(result.calls.contains { $0.hasPrefix("apt-get uid=0 install") && $0.contains("libyaml-dev") })
        #expect(!result.calls.contains { $0.hasPrefix("apt-get uid=1000") })
    }

    @Test func asAUserWithoutSudoItSaysWhatToDo() throws {
        let system = try FakeSystem(withSudo: false)
        defer { system.remove() }
        let result = try system.run("scripts/install-deps", uid: 1000)
        #expect(result.status == 1)
        #expect(result.errors == "install-deps: run this as root (there is no sudo here)\n")
        #expect(result.calls.isEmpty)
    }
}
