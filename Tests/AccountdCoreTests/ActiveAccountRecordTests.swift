import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

@testable import AccountdCore

/// `state.json`, the record of the active account: two slots overwritten in turn, a torn
/// slot passed over for the record before it, a hand-written file read and replaced.
@Suite struct ActiveAccountRecordTests {
    static func name(_ text: String) -> AccountName { try! AccountName(text) }

    @Test func eachSaveIsReadBackAndTheSlotsTakeTurns() throws {
        let dir = TestDirectory()
        let path = dir.sub("state.json")
        let record = ActiveAccountRecord(path: path)
        #expect(try record.read() == nil, "no file: no active account")
        for (index, account) in ["alice", "bob", "carol", "bob"].enumerated() {
            try record.save(Self.name(account))
            #expect(try record.read() == Self.name(account))
            #expect(try ActiveAccountRecord(path: path).read() == Self.name(account), "a new reader, as after a restart")
            #expect(Files.size(path) == 2 * ActiveAccountRecord.slotSize, "save \(index + 1) rewrote nothing but a slot")
        }
        try record.save(nil)
        #expect(try record.read() == nil)
        #expect(Files.mode(path) == 0o600)
    }

    @Test func aTornSlotGivesTheRecordBeforeIt() throws {
        let dir = TestDirectory()
        let path = dir.sub("state.json")
        let record = ActiveAccountRecord(path: path)
        try record.save(Self.name("alice"))
        try record.save(Self.name("bob"))
        // Find the slot holding bob, the newest, and tear it: half its bytes from a later write.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let slot = ActiveAccountRecord.slotSize
        let newest = String(decoding: bytes[0..<slot], as: UTF8.self).contains("\"bob\"") ? 0 : slot
        let later = ActiveAccountRecord.slot(Self.name("carolina"), generation: 99)
        bytes.replaceSubrange(newest..<(newest + 40), with: later[0..<40])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("alice"))

        // A slot whose JSON is whole but whose fields do not match its check is passed over too.
        bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let other = newest == 0 ? slot : 0
        let text = String(decoding: bytes[other..<(other + slot)], as: UTF8.self).replacingOccurrences(of: "\"alice\"", with: "\"alicf\"")
        bytes.replaceSubrange(other..<(other + slot), with: Array(text.utf8))
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: AccountdError.self) { try ActiveAccountRecord(path: path).read() }
    }

    @Test func aHandWrittenFileIsReadAndTheNextSaveReplacesIt() throws {
        let dir = TestDirectory()
        let path = dir.sub("state.json")
        try Files.write(#"{ "active" : "dave", "updatedAt" : "2026-01-01T00:00:00Z" }"# + "\n", to: path)
        let record = ActiveAccountRecord(path: path)
        #expect(try record.read() == Self.name("dave"))
        try record.save(Self.name("erin"))
        #expect(try record.read() == Self.name("erin") && Files.size(path) == 2 * ActiveAccountRecord.slotSize)

        try Files.write(#"{"active":"../etc"}"#, to: path)
        #expect(throws: AccountdError.self) { try ActiveAccountRecord(path: path).read() }
        try Files.write("garbage", to: path)
        #expect(throws: AccountdError.self) { try ActiveAccountRecord(path: path).read() }
    }

    /// Issue 29, finding 8: the older slot named a purged account. `forget` overwrites it
    /// with the current record, and the slots still take turns afterwards.
    @Test func aForgottenAccountLeavesNoByteInEitherSlot() throws {
        let dir = TestDirectory()
        let path = dir.sub("state.json")
        let record = ActiveAccountRecord(path: path)
        try record.save(Self.name("mallory.secret@example.com"))
        try record.save(Self.name("alice"))
        #expect(String(decoding: try #require(Files.bytes(path)), as: UTF8.self).contains("mallory"))
        try record.forget(Self.name("mallory.secret@example.com"))
        #expect(!String(decoding: try #require(Files.bytes(path)), as: UTF8.self).contains("mallory"))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("alice"))
        #expect(Files.size(path) == 2 * ActiveAccountRecord.slotSize)
        try record.save(Self.name("bob"))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("bob"))
        try record.forget(Self.name("alice"))
        #expect(!String(decoding: try #require(Files.bytes(path)), as: UTF8.self).contains("alice"))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("bob"))
    }

    /// Issue 29, finding 9: a save after `state.json` was removed or renamed over wrote
    /// into the file held open, which nobody reads any more.
    @Test func aSaveAfterTheFileWasReplacedWritesAFreshOne() throws {
        let dir = TestDirectory()
        let path = dir.sub("state.json")
        let record = ActiveAccountRecord(path: path)
        try record.save(Self.name("alice"))
        #expect(unlink(path) == 0)
        try record.save(Self.name("bob"))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("bob"))
        try Files.write(#"{"active":"carol"}"#, to: path + ".new")
        #expect(rename(path + ".new", path) == 0)
        try record.save(Self.name("dave"))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("dave"))
        try record.save(Self.name("erin"))
        #expect(try ActiveAccountRecord(path: path).read() == Self.name("erin"))
    }

    /// SPEC section 12: one entry per uid, each kept when another uid switches; an older
    /// file's one `"active"` account is the owner's (the daemon's own uid).
    @Test func eachUidKeepsItsOwnEntryAndAnOlderRecordIsTheOwners() throws {
        let dir = TestDirectory()
        let path = dir.sub("state.json")
        // A record written by an older accountd: two slots of {"active": ...}.
        func olderSlot(_ account: String, generation: Int64) -> [UInt8] {
            let active = JSONValue.string(account)
            let updatedAt = JSONValue.string("2026-01-01T00:00:00.000Z")
            let check = ActiveAccountRecord.check(active: active, updatedAt: updatedAt, generation: generation)
            let line = JSONValue.object([("active", active), ("updatedAt", updatedAt), ("generation", .int(generation)), ("check", .string(check))])
                .serialized()
            return Array(line.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: ActiveAccountRecord.slotSize - 1 - line.utf8.count) + [10]
        }
        try Data(olderSlot("dave", generation: 2) + olderSlot("carol", generation: 1)).write(to: URL(fileURLWithPath: path))
        let record = ActiveAccountRecord(path: path, owner: 998)
        #expect(try record.readAll() == [998: Self.name("dave")])
        #expect(try ActiveAccountRecord(path: path, owner: 0).readAll() == [0: Self.name("dave")])

        try record.save([998: Self.name("dave"), 65534: Self.name("nobody"), 1000: Self.name("alice")])
        try record.save([998: Self.name("dave"), 65534: Self.name("nobody"), 1000: Self.name("bob")])
        let again = ActiveAccountRecord(path: path, owner: 998)
        #expect(try again.readAll() == [998: Self.name("dave"), 65534: Self.name("nobody"), 1000: Self.name("bob")])
        #expect(try again.read() == Self.name("dave"))
        #expect(Files.size(path) == 2 * ActiveAccountRecord.slotSize)

        // Many uids: the slots grow (the file rewritten whole), and every entry is read back.
        var many: [UInt32: AccountName] = [:]
        for uid in UInt32(2000)..<2100 { many[uid] = Self.name("account-of-\(uid)-with-a-longish-name") }
        try record.save(many)
        #expect(try ActiveAccountRecord(path: path).readAll() == many)
        #expect(Files.size(path) > 2 * ActiveAccountRecord.slotSize && Files.size(path) % (2 * ActiveAccountRecord.slotSize) == 0)
        many[2000] = Self.name("mallory")
        try record.save(many)
        many[2000] = Self.name("erin")
        try record.save(many)
        try record.forget(Self.name("mallory"))
        #expect(!String(decoding: try #require(Files.bytes(path)), as: UTF8.self).contains("mallory"))
        #expect(try ActiveAccountRecord(path: path).readAll() == many)
    }
}
