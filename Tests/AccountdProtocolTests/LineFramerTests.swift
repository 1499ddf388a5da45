import Testing
@testable import AccountdProtocol

@Suite("LineFramer: splitting a byte stream into lines")
struct LineFramerTests {
    /// Feeds `input` in pieces of `chunkSize` bytes, draining complete lines after every
    /// piece, as a server reading a socket does.
    static func lines(of input: [UInt8], chunkSize: Int, limit: Int = 1024) throws -> (lines: [[UInt8]], framer: LineFramer) {
        var framer = LineFramer(maximumLineLength: limit)
        var lines: [[UInt8]] = []
        var start = 0
        while start < input.count {
            let end = min(start + chunkSize, input.count)
            framer.append(input[start..<end])
            while let line = try framer.nextLine().map(Array.init) { lines.append(line) }
            start = end
        }
        return (lines, framer)
    }

    @Test func oneLineInOneRead() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("switch alice\n"))
        #expect(try framer.nextLine().map(Array.init) == bytes("switch alice"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        #expect(framer.bufferedCount == 0)
        #expect(framer.remainder.isEmpty)
    }

    @Test("A line split across reads is joined", arguments: [1, 2, 3, 5, 7, 13, 64, 4096])
    func lineSplitAcrossReads(chunkSize: Int) throws {
        let input = bytes("{\"method\":\"io.accountd.Status\"}\nstatus alice\r\nexport alice sql\n")
        let (lines, framer) = try Self.lines(of: input, chunkSize: chunkSize)
        #expect(lines.map(text) == ["{\"method\":\"io.accountd.Status\"}", "status alice", "export alice sql"])
        #expect(framer.remainder.isEmpty)
    }

    @Test func linesHandedOutStayIntactWhileMoreArrive() throws {
        // Lines share the framer's buffer; a reader that holds them (the client library
        // passes a whole read's rows on) must see them unchanged after later reads.
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("first\nsecond\nthi"))
        let first = try #require(try framer.nextLine())
        let second = try #require(try framer.nextLine())
        #expect(try framer.nextLine() == nil)
        var kept: [ArraySlice<UInt8>] = [first, second]
        for round in 0..<50 {
            framer.append(bytes("rd \(round)\nthi"))
            kept.append(try #require(try framer.nextLine()))
        }
        #expect(text(Array(first)) == "first")
        #expect(text(Array(second)) == "second")
        #expect(kept.dropFirst(2).enumerated().allSatisfy { round, line in text(Array(line)) == "third \(round)" })
        #expect(framer.bufferedCount == 3)
    }

    @Test func oneBytePerAppendYieldsNothingUntilTheNewline() throws {
        var framer = LineFramer(maximumLineLength: 64)
        for (index, byte) in bytes("ping").enumerated() {
            framer.append([byte])
            #expect(try framer.nextLine().map(Array.init) == nil)
            #expect(framer.bufferedCount == index + 1)
        }
        framer.append([0x0A])
        #expect(try framer.nextLine().map(Array.init) == bytes("ping"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        #expect(framer.bufferedCount == 0)
    }

    @Test func severalLinesInOneRead() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("a\nbb\nccc\ndddd"))
        #expect(try framer.nextLine().map(Array.init) == bytes("a"))
        #expect(try framer.nextLine().map(Array.init) == bytes("bb"))
        #expect(try framer.nextLine().map(Array.init) == bytes("ccc"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        #expect(framer.remainder == bytes("dddd"))
        framer.append(bytes("\n"))
        #expect(try framer.nextLine().map(Array.init) == bytes("dddd"))
    }

    @Test func crlfEndingsAreStripped() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("status\r\nping\r\n"))
        #expect(try framer.nextLine().map(Array.init) == bytes("status"))
        #expect(try framer.nextLine().map(Array.init) == bytes("ping"))
        #expect(try framer.nextLine().map(Array.init) == nil)
    }

    @Test func crlfSplitBetweenTwoReads() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("status\r"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        framer.append(bytes("\n"))
        #expect(try framer.nextLine().map(Array.init) == bytes("status"))
    }

    @Test("A carriage return not right before the newline is kept", arguments: [
        ("a\rb\n", [0x61, 0x0D, 0x62] as [UInt8]),
        ("\rab\n", [0x0D, 0x61, 0x62]),
        ("a\r\r\n", [0x61, 0x0D]),
        ("a\rb\r\n", [0x61, 0x0D, 0x62]),
    ])
    func loneCarriageReturnIsKept(input: String, expected: [UInt8]) throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes(input))
        #expect(try framer.nextLine().map(Array.init) == expected)
    }

    @Test func emptyLines() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("\n\r\n\nx\n\n"))
        #expect(try framer.nextLine().map(Array.init) == [])
        #expect(try framer.nextLine().map(Array.init) == [])
        #expect(try framer.nextLine().map(Array.init) == [])
        #expect(try framer.nextLine().map(Array.init) == bytes("x"))
        #expect(try framer.nextLine().map(Array.init) == [])
        #expect(try framer.nextLine().map(Array.init) == nil)
    }

    @Test("A line of exactly the limit is accepted", arguments: ["\n", "\r\n"])
    func exactlyAtLimitIsAccepted(ending: String) throws {
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("12345678" + ending))
        #expect(try framer.nextLine().map(Array.init) == bytes("12345678"))
    }

    @Test("A line of the limit plus one is refused", arguments: ["\n", "\r\n"])
    func limitPlusOneIsRefused(ending: String) {
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("123456789" + ending))
        #expect(throws: LineFramer.LineTooLong(limit: 8)) { try framer.nextLine().map(Array.init) }
    }

    @Test func linesUnderTheLimitBeforeAnOversizedOneStillArrive() throws {
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("ok\n12345678\n" + String(repeating: "x", count: 20)))
        #expect(try framer.nextLine().map(Array.init) == bytes("ok"))
        #expect(try framer.nextLine().map(Array.init) == bytes("12345678"))
        #expect(throws: LineFramer.LineTooLong(limit: 8)) { try framer.nextLine().map(Array.init) }
    }

    @Test func oversizedUnfinishedLineIsRefusedWithoutWaitingForTheNewline() {
        let limit = 1 << 20
        var framer = LineFramer(maximumLineLength: limit)
        framer.append([UInt8](repeating: UInt8(ascii: "x"), count: limit + 10))
        #expect(throws: LineFramer.LineTooLong(limit: limit)) { try framer.nextLine().map(Array.init) }
    }

    @Test func unfinishedLineAtTheLimitIsNotRefused() throws {
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("12345678"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        framer.append(bytes("\n"))
        #expect(try framer.nextLine().map(Array.init) == bytes("12345678"))
    }

    @Test func unfinishedLineAtTheLimitFollowedByCarriageReturnWaitsForTheNewline() throws {
        // "12345678\r" may yet become "12345678\r\n", a line of exactly the limit.
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("12345678\r"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        framer.append(bytes("\n"))
        #expect(try framer.nextLine().map(Array.init) == bytes("12345678"))
    }

    @Test func unfinishedLineTwoOverTheLimitIsRefused() {
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("1234567890"))
        #expect(throws: LineFramer.LineTooLong(limit: 8)) { try framer.nextLine().map(Array.init) }
    }

    @Test
    func unfinishedLineOneOverTheLimitIsRefusedAsSoonAsKnown() {
        // Nine bytes without a newline, the last not '\r': no ending can make this a line of
        // at most 8 bytes, so (as the type's documentation promises) it is refused now.
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(bytes("123456789"))
        #expect(throws: LineFramer.LineTooLong(limit: 8)) { try framer.nextLine().map(Array.init) }
    }

    @Test func oversizedLineFedOneByteAtATimeIsRefusedBeforeItsEnd() {
        // Feeding 1 byte per read, the refusal must come long before the 100th byte.
        var framer = LineFramer(maximumLineLength: 8)
        var refusedAfter: Int?
        for count in 1...100 {
            framer.append([UInt8(ascii: "x")])
            do {
                _ = try framer.nextLine().map(Array.init)
            } catch {
                #expect(error == LineFramer.LineTooLong(limit: 8))
                refusedAfter = count
                break
            }
        }
        #expect(refusedAfter != nil)
        #expect((refusedAfter ?? 100) <= 10)
    }

    @Test func remainderAtEndOfInput() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("status\nswitch bo"))
        #expect(try framer.nextLine().map(Array.init) == bytes("status"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        #expect(framer.remainder == bytes("switch bo"))
        #expect(framer.bufferedCount == 9)
    }

    @Test func remainderIsEmptyWhenInputEndsWithANewline() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("a\nb\n"))
        while try framer.nextLine().map(Array.init) != nil {}
        #expect(framer.remainder.isEmpty)
        #expect(framer.bufferedCount == 0)
    }

    @Test func remainderWithoutAnyNewline() throws {
        var framer = LineFramer(maximumLineLength: 64)
        framer.append(bytes("no newline"))
        #expect(try framer.nextLine().map(Array.init) == nil)
        #expect(framer.remainder == bytes("no newline"))
    }

    @Test("Many lines survive buffer compaction", arguments: [1, 3, 100, 10_000])
    func manyLinesAcrossCompaction(chunkSize: Int) throws {
        // Well over 4096 consumed bytes, so the framer compacts its buffer several times.
        let expected = (0..<3000).map { "line \($0) " + String(repeating: "z", count: $0 % 17) }
        let input = bytes(expected.joined(separator: "\n") + "\ntail")
        let (lines, framer) = try Self.lines(of: input, chunkSize: chunkSize, limit: 64)
        #expect(lines.map(text) == expected)
        #expect(framer.remainder == bytes("tail"))
    }
}
