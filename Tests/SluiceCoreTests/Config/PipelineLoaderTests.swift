import SluiceCore
import SluiceTesting
import Testing

/// Pins the exact text of configuration errors: what users see is part of the interface.
struct PipelineLoaderTests {
    func render(_ text: String, environment: [String: String] = [:]) -> String {
        let result = PipelineLoader(catalog: TestCatalog.catalog, environment: environment).load(text)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return result.diagnostics.map { $0.rendered(path: "p.yaml", sourceLines: lines) }.joined(separator: "\n")
    }

    /// The definition `text` loads to, failing the test when it has errors.
    func loaded(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> PipelineDefinition {
        try #require(
            PipelineLoader(catalog: TestCatalog.catalog, environment: [:]).load(text).definition,
            sourceLocation: sourceLocation)
    }

    static let cases: [(name: String, yaml: String, expected: String)] = [
        (
            "unknown source type with suggestion",
            "sources:\n  in:\n    type: countr\nsinks:\n  out: {type: collect, inputs: [in]}\n",
            """
            p.yaml:3:11: error: unknown source type 'countr'
                type: countr
                      ^
            note: expected one of: counter, list; did you mean 'counter'?
            """
        ),
        (
            "unknown key with suggestion, at the key",
            "sources:\n  in: {type: counter, cont: 3}\nsinks:\n  out: {type: collect, inputs: [in]}\n",
            """
            p.yaml:2:23: error: unknown key 'cont' in source 'in'
              in: {type: counter, cont: 3}
                                  ^
            note: expected one of: count, record_finished, runs_stateless_transforms, type; did you mean 'count'?
            """
        ),
        (
            "a merge key is an error of its own, not a silent merge",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {<<: {type: collect}, inputs: [in]}\n",
            """
            p.yaml:4:9: error: merge keys ('<<') are not supported
              out: {<<: {type: collect}, inputs: [in]}
                    ^
            note: YAML 1.2 has no merge key; write the keys out, or alias whole values ('buffer: *name')
            p.yaml:4:8: error: sink 'out' has no 'type'
              out: {<<: {type: collect}, inputs: [in]}
                   ^
            note: expected one of: collect
            """
        ),
        (
            "an invalid transform is reported once, and its neighbours are still connected",
            "sources:\n  in: {type: counter}\ntransforms:\n  t: {type: pass, inputs: [in], drop_every: -1}\n"
                + "sinks:\n  out: {type: collect, inputs: [t]}\n",
            """
            p.yaml:4:45: error: 'drop_every' must be between 0 and 1000000, found -1
              t: {type: pass, inputs: [in], drop_every: -1}
                                                        ^
            """
        ),
        (
            "a latest_per_key buffer without its key",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: [in], buffer: {when_full: latest_per_key}}\n",
            """
            p.yaml:4:46: error: a latest_per_key buffer needs a 'key'
              out: {type: collect, inputs: [in], buffer: {when_full: latest_per_key}}
                                                         ^
            note: for example 'buffer: {max_events: 1000, when_full: latest_per_key, key: .device}'
            """
        ),
        (
            "a key for another policy",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: [in], buffer: {key: .x}}\n",
            """
            p.yaml:4:52: error: 'key' is only for 'when_full: latest_per_key'
              out: {type: collect, inputs: [in], buffer: {key: .x}}
                                                               ^
            """
        ),
        (
            "wrong type",
            "sources:\n  in: {type: counter, count: lots}\nsinks:\n  out: {type: collect, inputs: [in]}\n",
            """
            p.yaml:2:30: error: expected an integer for 'count', found 'lots'
              in: {type: counter, count: lots}
                                         ^
            note: 'count' is a whole number from 0 to 1000000000
            """
        ),
        (
            "out of range",
            "sources:\n  in: {type: counter}\nsinks:\n  out:\n    type: collect\n    inputs: [in]\n    buffer: {max_events: 0}\n",
            """
            p.yaml:7:26: error: 'max_events' must be between 1 and 100000000, found 0
                buffer: {max_events: 0}
                                     ^
            """
        ),
        (
            "unknown policy",
            "sources:\n  in: {type: counter}\nsinks:\n  out:\n    type: collect\n    inputs: [in]\n    buffer: {when_full: drop_olds}\n",
            """
            p.yaml:7:25: error: unknown value 'drop_olds' for 'when_full'
                buffer: {when_full: drop_olds}
                                    ^
            note: expected one of: block, drop_newest, drop_oldest, latest_per_key; did you mean 'drop_oldest'?
            """
        ),
        (
            "unknown input",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: [inn]}\n",
            """
            p.yaml:4:33: error: unknown input 'inn' for sink 'out'
              out: {type: collect, inputs: [inn]}
                                            ^
            note: expected one of: in; did you mean 'in'?
            p.yaml:2:3: error: source 'in' is not an input of any transform or sink
              in: {type: counter}
              ^
            note: its events would go nowhere; name it in some component's 'inputs'
            """
        ),
        (
            "duplicate key",
            "sources:\n  in: {type: counter}\nsinks:\n  out:\n    type: collect\n    type: collect\n    inputs: [in]\n",
            """
            p.yaml:6:5: error: duplicate key 'type' in sink 'out'
                type: collect
                ^
            note: 'type' was first written at line 5
            """
        ),
        (
            "duplicate id across sections",
            "sources:\n  x: {type: counter}\nsinks:\n  x: {type: collect, inputs: [x]}\n",
            """
            p.yaml:4:3: error: duplicate component id 'x'
              x: {type: collect, inputs: [x]}
              ^
            note: 'x' is already a source at line 2; ids must be unique across sources, transforms and sinks
            p.yaml:1:1: error: the pipeline has no sinks
            sources:
            ^
            note: add a 'sinks' section, for example 'sinks: {out: {type: stdout, inputs: [in]}}'
            p.yaml:2:3: error: source 'x' is not an input of any transform or sink
              x: {type: counter}
              ^
            note: its events would go nowhere; name it in some component's 'inputs'
            """
        ),
        (
            "cycle",
            "sources:\n  in: {type: counter}\ntransforms:\n  a: {type: pass, inputs: [in, b]}\n  b: {type: pass, inputs: [a]}\nsinks:\n  out: {type: collect, inputs: [b]}\n",
            """
            p.yaml:4:3: error: transforms 'a' -> 'b' -> 'a' form a cycle
              a: {type: pass, inputs: [in, b]}
              ^
            note: events would circle forever; a pipeline must flow from sources to sinks
            """
        ),
        (
            "no sources",
            "sinks:\n  out: {type: collect, inputs: [in]}\n",
            """
            p.yaml:2:33: error: unknown input 'in' for sink 'out'
              out: {type: collect, inputs: [in]}
                                            ^
            note: the pipeline has no sources or transforms to read from
            p.yaml:1:1: error: the pipeline has no sources
            sinks:
            ^
            note: add a 'sources' section, for example 'sources: {in: {type: stdin}}'
            """
        ),
        (
            "sink as an input",
            "sources:\n  in: {type: counter}\nsinks:\n  a: {type: collect, inputs: [in]}\n  b: {type: collect, inputs: [a]}\n",
            """
            p.yaml:5:31: error: 'a' is a sink and cannot be an input
              b: {type: collect, inputs: [a]}
                                          ^
            note: inputs name sources or transforms: in
            """
        ),
        (
            "missing inputs",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect}\n",
            """
            p.yaml:4:8: error: sink 'out' has no 'inputs'
              out: {type: collect}
                   ^
            note: add 'inputs: [ID, ...]' naming the sources or transforms it reads from
            p.yaml:2:3: error: source 'in' is not an input of any transform or sink
              in: {type: counter}
              ^
            note: its events would go nowhere; name it in some component's 'inputs'
            """
        ),
        (
            "YAML syntax",
            "sources:\n  in: {type: counter\nsinks: {}\n",
            """
            p.yaml:3:6: error: invalid YAML: did not find expected ',' or '}'
            sinks: {}
                 ^
            note: while parsing a flow mapping
            """
        ),
        (
            "unknown top-level key",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: [in]}\nmetric: {}\n",
            """
            p.yaml:5:1: error: unknown key 'metric' in the pipeline
            metric: {}
            ^
            note: expected one of: api, metrics, sinks, sources, tests, transforms; did you mean 'metrics'?
            """
        ),
        (
            "unset environment variable",
            "sources:\n  in: {type: counter, count: '${COUNT}'}\nsinks:\n  out: {type: collect, inputs: [in]}\n",
            """
            p.yaml:2:30: error: environment variable 'COUNT' is not set
              in: {type: counter, count: '${COUNT}'}
                                         ^
            note: set it, or give a default with ${COUNT:-value}
            """
        ),
        (
            "metrics format",
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: [in]}\nmetrics: {format: jsn}\n",
            """
            p.yaml:5:19: error: unknown value 'jsn' for 'format'
            metrics: {format: jsn}
                              ^
            note: expected one of: text, json, prometheus; did you mean 'json'?
            """
        ),
    ]

    @Test(arguments: cases.indices)
    func errorText(_ index: Int) {
        let testCase = Self.cases[index]
        #expect(render(testCase.yaml) == testCase.expected, "\(testCase.name)")
    }

    @Test func aValidFileLoadsWithDefaults() throws {
        let result = PipelineLoader(catalog: TestCatalog.catalog, environment: ["N": "7"]).load(
            """
            sources:
              in: {type: counter, count: "${N}"}
            transforms:
              t: {type: pass, inputs: [in], buffer: unbounded}
            sinks:
              out: {type: collect, inputs: [t, in], buffer: {max_events: 5, when_full: drop_oldest}}
            metrics: {interval_secs: 0.5, to: stderr, format: json}
            """)
        #expect(result.diagnostics.isEmpty)
        let definition = try #require(result.definition)
        #expect(definition.components.map(\.id) == ["in", "t", "out"])
        #expect(definition.components[1].buffer == .unbounded)
        #expect(definition.components[2].buffer == .dropOldest(maxEvents: 5))
        #expect(definition.components[2].inputs == ["t", "in"])
        #expect(definition.consumers(of: "in") == ["t", "out"])
        #expect(definition.metrics == MetricsSettings(intervalSecs: 0.5, destination: .stderr, format: .json))
        #expect((definition.components[0].blueprint.config as? CounterSourceConfig)?.count == 7)
    }

    @Test func environmentDefaultsAndEscapes() throws {
        let text =
            "sources:\n  in: {type: counter, count: '${MISSING:-3}'}\nsinks:\n  out: {type: collect, inputs: [in]}\n"
        let definition = try loaded(text)
        #expect((definition.components[0].blueprint.config as? CounterSourceConfig)?.count == 3)
    }

    @Test func valuesFromTheEnvironmentAreNeverRepeatedInMessages() {
        let text = """
            sources:
              in: {type: counter, count: "${SECRET}"}
            sinks:
              out: {type: collect, inputs: [in], buffer: {max_events: 5, when_full: "${POLICY}"}}
            """
        let rendered = render(text, environment: ["SECRET": "hunter2-token", "POLICY": "s3cr3t-policy"])
        #expect(rendered.contains("error: expected an integer for 'count', found a value from the environment"))
        #expect(rendered.contains("error: the value from the environment is not valid for 'when_full'"))
        #expect(!rendered.contains("hunter2-token"))
        #expect(!rendered.contains("s3cr3t-policy"))
    }

    /// Found by `scripts/fuzz config`: a `${...}` inside an unknown type name was repeated in the error, and so
    /// would any message quoting a value built from one. Every message now blanks such values out.
    @Test func valuesFromTheEnvironmentAreBlankedOutOfEveryMessage() {
        let text = """
            sources:
              feed: {type: 'websock${SECRET}"}'}
              in: {type: counter, count: 3, extra: "x-${SECRET}"}
            sinks:
              out: {type: collect, inputs: [in, "in-${SECRET}"]}
            """
        let rendered = render(text, environment: ["SECRET": "fuzz-env-secret-7f3a"])
        #expect(rendered.contains("error: unknown source type a value from the environment"))
        #expect(rendered.contains("[value from the environment]"), "a message quoting a composed value: \(rendered)")
        #expect(!rendered.contains("fuzz-env-secret-7f3a"))
    }

    @Test func jsonPipelineFilesAreAccepted() throws {
        let text =
            #"{"sources": {"in": {"type": "counter", "count": 3}}, "sinks": {"out": {"type": "collect", "inputs": ["in"], "buffer": "unbounded"}}}"#
        let definition = try loaded(text)
        #expect(definition.components.map(\.id) == ["in", "out"])
        #expect(definition.components[1].buffer == .unbounded)
        // Errors in JSON files point into the line too.
        #expect(
            render(
                #"{"sources": {"in": {"type": "counter", "cout": 3}}, "sinks": {"out": {"type": "collect", "inputs": ["in"]}}}"#
            )
            .hasPrefix("p.yaml:1:40: error: unknown key 'cout' in source 'in'"))
    }

    /// What `sluice graph` shows and a reload compares: each component's options as written, in their order,
    /// without `type`, `inputs` and `buffer`.
    @Test func writtenOptionsKeepTheirOrderWithoutTheWiring() throws {
        let text =
            "sources:\n  in: {record_finished: true, type: counter, count: 3}\n"
            + "sinks:\n  out: {type: collect, inputs: [in], buffer: unbounded}\n"
        let definition = try loaded(text)
        let options = definition.components[0].writtenOptions.fields
        #expect(options.map(\.key) == ["record_finished", "count"])
        #expect(options.map(\.value) == [.string("true"), .string("3")])
        #expect(definition.components[1].writtenOptions.fields.isEmpty)
    }

    @Test func theDefaultBufferIsBlockOf8000AndAPolicyWithoutACapacityGetsTheSame() throws {
        let text =
            "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: in}\n"
            + "  last: {type: collect, inputs: in, buffer: {when_full: drop_oldest}}\n"
        let definition = try loaded(text)
        #expect(definition.components[1].buffer == .block(maxEvents: 8000))
        #expect(definition.components[2].buffer == .dropOldest(maxEvents: 8000))
        #expect(definition.components[0].buffer == nil)
    }

    @Test func theAPISectionBindsLoopbackForABarePortAndChecksItsToken() throws {
        let base = "sources:\n  in: {type: counter}\nsinks:\n  out: {type: collect, inputs: [in]}\n"
        func load(_ api: String, _ environment: [String: String] = [:]) -> PipelineLoader.Result {
            PipelineLoader(catalog: TestCatalog.catalog, environment: environment).load(base + api)
        }
        #expect(load("").definition?.api == nil)
        #expect(load("api: {listen: 9000}").definition?.api == APISettings(host: "127.0.0.1", port: 9000))
        #expect(
            load("api: {listen: '[::1]:0', token: '${T}'}", ["T": "abc"]).definition?.api
                == APISettings(host: "::1", port: 0, token: "abc"))
        #expect(load("api: {}").definition?.api == APISettings())
        #expect(
            render(base + "api: {listen: 'nowhere'}")
                == """
                p.yaml:5:15: error: 'nowhere' is not a listen address
                api: {listen: 'nowhere'}
                              ^
                note: write HOST:PORT ([IPV6]:PORT for an IPv6 address, *:PORT for every interface), or a bare PORT to bind 127.0.0.1 only
                """)
        #expect(render(base + "api: {token: ''}").hasPrefix("p.yaml:5:14: error: the api token is empty"))
        #expect(render(base + "api: {tokn: x}").hasPrefix("p.yaml:5:7: error: unknown key 'tokn'"))
        let open = load("api: {listen: '*:8686'}")
        #expect(open.definition?.api?.host == "*")
        #expect(open.diagnostics.map(\.message) == ["the api listens on all interfaces without a token"])
    }
}
