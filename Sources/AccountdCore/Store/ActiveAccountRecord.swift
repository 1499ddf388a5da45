import AccountdProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The durable record of the active account: `state.json` in the data root.
///
/// The file is two slots of ``slotSize`` bytes, each one line of JSON padded with spaces:
///
/// ```
/// {"active":"alice","updatedAt":"2026-11-23T02:30:00.000Z","generation":8,"check":"5f0c..."}
/// {"active":"bob","updatedAt":"2026-11-23T02:29:58.120Z","generation":7,"check":"91aa..."}
/// ```
///
/// The record is the valid slot with the higher `generation`. A switch overwrites the
/// other slot in place and syncs the file once (`fdatasync`): no temporary file, no
/// rename, no sync of the folder, which is what made a switch cost two flushes. Each slot
/// is one sector, so a power loss during the write can tear only the slot being written;
/// its `check` then fails and the other slot, the record before it, is read — the right
/// answer, as the switch was not acknowledged before the sync returned. A file of one JSON
/// object with `active` (as an operator may write by hand) is read too, and the next
/// switch rewrites it in the two-slot form (atomically: temporary file, rename).
///
/// The file is kept open between saves. Before each write, the open file is compared with
/// what is at the path now (`st_dev`, `st_ino`, not following a link): when `state.json` was
/// removed or replaced (by an editor's save-by-rename, say), the record is written afresh at
/// the path, durably, rather than into a file nobody will read.
public final class ActiveAccountRecord: Sendable {
    /// The size of a slot: one disk sector.
    public static let slotSize = 512

    public let path: String
    private let file = Mutex<OpenFile?>(nil)

    /// The file kept open for writes, and the generation of the record in it.
    private struct OpenFile {
        var descriptor: Int32
        var generation: Int64
    }

    public init(path: String) {
        self.path = path
    }

    deinit {
        file.withLock { if let open = $0 { close(open.descriptor) } }
    }

    /// The saved active account, or nil when none is saved.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file exists but holds no valid
    ///   record, or names an invalid account.
    public func read() throws -> AccountName? {
        try Self.read(path)?.account
    }

    /// Saves `account` as the active one, durably, before returning.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file cannot be written or synced.
    public func save(_ account: AccountName?) throws {
        try file.withLock { file in
            guard var open = file, Self.isAtPath(open.descriptor, path) else {
                // None open yet, or the open file is no longer state.json (removed or replaced).
                if let open = file { close(open.descriptor) }
                file = nil
                file = try create(account)
                return
            }
            open.generation += 1
            let slot = Self.slot(account, generation: open.generation)
            let offset = off_t(open.generation % 2) * off_t(Self.slotSize)
            let written = slot.withUnsafeBytes { pwrite(open.descriptor, $0.baseAddress, $0.count, offset) }
            guard written == slot.count, fdatasync(open.descriptor) == 0 else {
                let failure = errno
                // The file's state is unknown now: the next save starts it over, atomically.
                close(open.descriptor)
                file = nil
                throw AccountdError.storage("writing the active account to", path: path, errno: failure)
            }
            file = open
        }
    }

    /// Erases every mention of `account` from the file, after a purge: the slot holding the
    /// record before the current one may name it, and no byte of a purged account may stay
    /// under the data root. That slot is overwritten in place with the current record (a
    /// torn write there leaves the current slot to be read), and synced; a file not in the
    /// two-slot form, or not the one held open, is rewritten whole, atomically.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file cannot be written or synced.
    public func forget(_ account: AccountName) throws {
        try file.withLock { file in
            guard let data = (try? Self.contents(path)) ?? nil, Self.mentions(account, in: data) else { return }
            let current = ((try? Self.read(path)) ?? nil)?.account
            if let open = file, data.count == 2 * Self.slotSize, Self.isAtPath(open.descriptor, path) {
                let slot = Self.slot(current, generation: open.generation)
                let older = off_t((open.generation + 1) % 2) * off_t(Self.slotSize)
                let written = slot.withUnsafeBytes { pwrite(open.descriptor, $0.baseAddress, $0.count, older) }
                guard written == slot.count, fdatasync(open.descriptor) == 0 else {
                    let failure = errno
                    close(open.descriptor)
                    file = nil
                    throw AccountdError.storage("erasing account \(account) from", path: path, errno: failure)
                }
                return
            }
            if let open = file { close(open.descriptor) }
            file = nil
            file = try create(current)
        }
    }

    /// The bytes of the file at `path` (at most 64 KiB: a record is 1 KiB), read without
    /// following a link; nil when there is no file.
    ///
    /// - Throws: `storage` when it is a link or cannot be read.
    private static func contents(_ path: String) throws -> [UInt8]? {
        switch FileSystem.entry(at: path) {
        case .missing:
            return nil
        case .symlink:
            throw AccountdError(
                .storage, "\(path) is a symbolic link, which accountd does not follow; the next switch writes the file afresh in its place",
                file: path)
        default:
            let file = try ReadOnlyFile(path)
            defer { file.close() }
            return try file.prefix(count: 1 << 16)
        }
    }

    /// Whether `bytes` hold `account`'s name as a JSON string.
    private static func mentions(_ account: AccountName, in bytes: [UInt8]) -> Bool {
        let needle = Array("\"\(account.rawValue)\"".utf8)
        guard bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains { start in bytes[start..<(start + needle.count)].elementsEqual(needle) }
    }

    /// Whether `descriptor` is the file at `path` now, the path not followed if it is a link.
    private static func isAtPath(_ descriptor: Int32, _ path: String) -> Bool {
        var held = stat()
        var named = stat()
        guard fstat(descriptor, &held) == 0, fstatat(AT_FDCWD, path, &named, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        return held.st_dev == named.st_dev && held.st_ino == named.st_ino
    }

    /// Writes a new two-slot file holding `account` in both slots, atomically, and opens it.
    private func create(_ account: AccountName?) throws -> OpenFile {
        let generation = ((try? Self.read(path))??.generation ?? 0) + 1
        // Both slots hold the record: the next save overwrites the one its generation picks.
        let slot = Self.slot(account, generation: generation)
        try FileSystem.atomicWrite(Data(slot + slot), to: path)
        let descriptor = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw AccountdError.storage("opening", path: path, errno: errno) }
        return OpenFile(descriptor: descriptor, generation: generation)
    }

    /// A record read from a file: the account and its generation.
    struct Saved {
        var account: AccountName?
        var generation: Int64
    }

    /// The record in the file at `path`, nil when there is no file.
    static func read(_ path: String) throws -> Saved? {
        guard let bytes = try contents(path) else { return nil }
        var found: (value: JSONValue, generation: Int64)?
        if bytes.count == 2 * slotSize {
            for half in [bytes[0..<slotSize], bytes[slotSize...]] {
                guard let value = try? JSONParser.parse(half), let generation = value["generation"]?.intValue,
                    value["check"]?.stringValue == check(active: value["active"], updatedAt: value["updatedAt"], generation: generation)
                else { continue }
                if found == nil || generation > found!.generation { found = (value, generation) }
            }
        } else if let value = try? JSONParser.parse(bytes), value.objectValue != nil {
            found = (value, 0)  // one JSON object, as written by hand
        }
        guard let found else {
            throw AccountdError(
                .storage, "\(path) holds no valid record of the active account; starting with no active account", file: path)
        }
        switch found.value["active"] {
        case nil, .null?:
            return Saved(account: nil, generation: found.generation)
        case .string(let name)?:
            do {
                return Saved(account: try AccountName(name), generation: found.generation)
            } catch {
                throw AccountdError(.storage, "\(path) names an invalid account: \(error)", file: path)
            }
        case let other?:
            throw AccountdError(.storage, "\(path) names no account: \"active\" is \(other.typeName), not a string", file: path)
        }
    }

    /// One slot: the record as a line of JSON, padded with spaces to ``slotSize`` bytes.
    static func slot(_ account: AccountName?, generation: Int64) -> [UInt8] {
        // Account names need no JSON escaping (their characters are A-Z a-z 0-9 @ . _ + -).
        let active: JSONValue = account.map { .string($0.rawValue) } ?? .null
        let updatedAt = JSONValue.string(Timestamp.now())
        let check = check(active: active, updatedAt: updatedAt, generation: generation)
        let line = JSONValue.object([
            ("active", active), ("updatedAt", updatedAt), ("generation", .int(generation)), ("check", .string(check)),
        ]).serialized()
        var bytes = Array(line.utf8)
        precondition(bytes.count < slotSize, "a record of the active account fits in one slot")
        bytes += [UInt8](repeating: UInt8(ascii: " "), count: slotSize - 1 - bytes.count)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The check of a slot: FNV-1a (64 bits) of its fields, in hex.
    static func check(active: JSONValue?, updatedAt: JSONValue?, generation: Int64) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\((active ?? .null).serialized())|\((updatedAt ?? .null).serialized())|\(generation)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
