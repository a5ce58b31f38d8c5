import Sluice

let pipeline = try Pipeline(
    yaml: """
        sources:
          readings: {type: host}
        transforms:
          hot: {type: filter, inputs: [readings], condition: .temperature > 30}
          fahrenheit: {type: map, inputs: [hot], set: {temperature_f: .temperature * 9 / 5 + 32}}
        sinks:
          alerts: {type: host, inputs: [fahrenheit]}
        """)

let (readings, feed) = AsyncStream.makeStream(of: Event.self)
for (device, temperature) in [("d1", 25.5), ("d2", 31.0), ("d3", 40.25)] {
    feed.yield(Event(["device": .string(device), "temperature": .double(temperature)]))
}
feed.finish()

let result = try await pipeline.run(inputs: ["readings": .events(readings)]) { run in
    for await alert in run.output("alerts") {
        print(alert.jsonText)
    }
}
let hot = result.report.components.first { $0.id == "hot" }!
print("hot: received \(hot.received), sent \(hot.sent), filtered \(hot.discarded[.filtered])")
