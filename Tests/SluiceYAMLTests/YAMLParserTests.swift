import SluiceYAML
import Testing

struct YAMLParserTests {
    @Test func nodesKeepTheirLineAndColumn() throws {
        let root = try #require(try YAMLParser.parse("sources:\n  in:\n    type: stdin\n"))
        guard case .mapping(let top) = root.content, case .mapping(let sources) = top[0].value.content,
            case .mapping(let component) = sources[0].value.content
        else {
            Issue.record("expected nested mappings")
            return
        }
        #expect(top[0].key.mark == YAMLMark(line: 1, column: 1))
        #expect(sources[0].key.mark == YAMLMark(line: 2, column: 3))
        #expect(component[0].value.mark == YAMLMark(line: 3, column: 11))
        guard case .scalar(let scalar) = component[0].value.content else {
            Issue.record("expected a scalar")
            return
        }
        #expect(scalar == YAMLScalar("stdin", style: .plain))
    }

    @Test func quotedScalarsAreNotPlain() throws {
        let root = try #require(try YAMLParser.parse("a: '1'\nb: 1\n"))
        guard case .mapping(let pairs) = root.content, case .scalar(let quoted) = pairs[0].value.content,
            case .scalar(let plain) = pairs[1].value.content
        else {
            Issue.record("expected scalars")
            return
        }
        #expect(quoted.style == .singleQuoted)
        #expect(plain.isPlain)
    }

    @Test func duplicateKeysAreKeptForTheReaderToReport() throws {
        let root = try #require(try YAMLParser.parse("a: 1\na: 2\n"))
        guard case .mapping(let pairs) = root.content else {
            Issue.record("expected a mapping")
            return
        }
        #expect(pairs.count == 2)
        #expect(pairs[1].key.mark.line == 2)
    }

    @Test func aliasesExpandToTheAnchoredNode() throws {
        let root = try #require(try YAMLParser.parse("base: &b {max_events: 5}\ncopy: *b\n"))
        guard case .mapping(let pairs) = root.content, case .mapping(let copy) = pairs[1].value.content else {
            Issue.record("expected mappings")
            return
        }
        #expect(copy.count == 1)
        #expect(pairs[1].value.mark.line == 2)
    }

    /// Nine lines of aliases of aliases would be a billion nodes: past a million aliased nodes the parse fails at
    /// the alias that crosses it, and just under it the document is read whole.
    @Test func aliasesOfAliasesAreBounded() throws {
        func document(levels: Int) -> String {
            var text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
            for level in 1..<levels {
                let items = Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
                text += "l\(level): &l\(level) [\(items)]\n"
            }
            return text
        }
        // Level n holds 1 + 10 + ... + 10^(n+1) nodes, all but level 0's through aliases: five levels alias
        // 123,440 nodes, six 1,234,550.
        let fits = try #require(try YAMLParser.parse(document(levels: 5)))
        guard case .mapping(let pairs) = fits.content, case .sequence(let top) = pairs[4].value.content,
            case .sequence(let below) = top[9].content
        else {
            Issue.record("expected lists")
            return
        }
        #expect(pairs.count == 5 && top.count == 10 && below.count == 10)
        #expect(throws: YAMLError.self) { try YAMLParser.parse(document(levels: 6)) }
        do {
            _ = try YAMLParser.parse(document(levels: 9))
            Issue.record("a billion nodes were accepted")
        } catch {
            #expect(error.message.contains("aliases expand to more than 1000000 nodes"), "\(error)")
            #expect(error.mark.line == 6, "the line of the alias that crossed the bound, \(error.mark)")
        }
    }

    @Test func jsonIsYAML() throws {
        let root = try #require(try YAMLParser.parse(#"{"sources": {"in": {"type": "stdin"}}}"#))
        guard case .mapping(let pairs) = root.content else {
            Issue.record("expected a mapping")
            return
        }
        #expect(pairs.count == 1)
    }

    @Test func syntaxErrorsCarryLibyamlsPosition() {
        #expect(
            throws: YAMLError(
                message: "mapping values are not allowed in this context", mark: YAMLMark(line: 1, column: 5))
        ) { try YAMLParser.parse("a: b: c: d\n") }
    }

    @Test func aSecondDocumentIsRejected() {
        #expect(throws: YAMLError.self) { try YAMLParser.parse("a: 1\n---\nb: 2\n") }
    }

    @Test func emptyTextHasNoDocument() throws {
        #expect(try YAMLParser.parse("") == nil)
        #expect(try YAMLParser.parse("# only a comment\n") == nil)
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: YAMLError.self) { try YAMLParser.parse(text) }
    }
}
