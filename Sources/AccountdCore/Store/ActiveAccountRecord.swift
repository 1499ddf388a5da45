import AccountdProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The durable record of the active accounts, one per uid: `state.json` in the data root.
///
/// The file is two slots of equal size (``slotSize`` bytes, or a multiple of it when many
/// uids have an active account), each one line of JSON padded with spaces:
///
/// ```
/// {"accounts":{"0":"alice","1000":"bob"},"updatedAt":"2026-11-23T02:30:00.000Z","generation":8,"check":"5f0c..."}
/// {"accounts":{"0":"alice"},"updatedAt":"2026-11-23T02:29:58.120Z","generation":7,"check":"91aa..."}
/// ```
///
/// `accounts` maps each caller's uid (as text) to its active account. The record is the
/// valid slot with the higher `generation`. A switch overwrites the other slot in place and
/// syncs the file once (`fdatasync`): no temporary file, no rename, no sync of the folder,
/// which is what made a switch cost two flushes. A power loss during the write can tear
/// only the slot being written; its `check` then fails and the other slot, the record
/// before it, is read — the right answer, as the switch was not acknowledged before the
/// sync returned. When the record outgrows its slot, the file is rewritten whole with
/// larger slots (atomically: temporary file, rename).
///
/// Older files name one active account (`"active"`, in a slot or in one JSON object, as an
/// operator may write by hand): that account is read as the entry of ``owner``, the
/// daemon's own uid (whoever ran it before, its switches were the daemon's one active
/// account; the daemon's uid is an admin, and the liveness check and systemd's status
/// line describe it). The next switch rewrites the file in the current form.
///
/// The file is kept open between saves. Before each write, the open file is compared with
/// what is at the path now (`st_dev`, `st_ino`, not following a link): when `state.json` was
/// removed or replaced (by an editor's save-by-rename, say), the record is written afresh at
/// the path, durably, rather than into a file nobody will read.
///
/// Writes (``save(_:)-([UInt32:AccountName])``, ``forget(_:)``) never overlap: the caller
/// makes them one at a time (the daemon's switch commits pass one gate). The open file is
/// taken out of its `Mutex` for a write and put back after it, so the lock is never held
/// across I/O; a write that found it taken out (callers that broke that rule) rewrites the
/// file whole, atomically, and loses nothing.
public final class ActiveAccountRecord: Sendable {
    /// The size of a slot for a few uids: one disk sector. A record of more uids takes a
    /// multiple of it.
    public static let slotSize = 512

    /// The most bytes read from the file: two slots of 2 MiB (about 14,000 uids).
    static let maximumFileBytes = 1 << 22

    public let path: String
    /// The uid an older record's single `"active"` account belongs to (the daemon's own),
    /// and the one ``read()`` and ``save(_:)-(AccountName?)`` read and write.
    public let owner: UInt32
    private let file = Mutex<OpenFile?>(nil)

    /// The file kept open for writes, the generation of the record in it, and its slot size.
    private struct OpenFile {
        var descriptor: Int32
        var generation: Int64
        var slotSize: Int
    }

    public init(path: String, owner: UInt32 = getuid()) {
        self.path = path
        self.owner = owner
    }

    deinit {
        file.withLock { if let open = $0 { close(open.descriptor) } }
    }

    /// The saved active account of ``owner``, or nil when it has none.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file exists but holds no valid
    ///   record, or names an invalid account.
    public func read() throws -> AccountName? {
        try readAll()[owner]
    }

    /// Every saved active account, by uid; empty when none is saved.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file exists but holds no valid
    ///   record, or names an invalid account or uid.
    public func readAll() throws -> [UInt32: AccountName] {
        try Self.read(path, owner: owner)?.accounts ?? [:]
    }

    /// Saves `account` as ``owner``'s active account, keeping the other uids' entries.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file cannot be read, written or synced.
    public func save(_ account: AccountName?) throws {
        var accounts = try readAll()
        accounts[owner] = account
        try save(accounts)
    }

    /// Saves `accounts` (every uid's active account) as the record, durably, before returning.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file cannot be written or synced.
    public func save(_ accounts: [UInt32: AccountName]) throws {
        // Taken out for this write: nobody else writes through it meanwhile.
        let held = file.withLock { $0.take() }
        // Made once: a record longer than the slots comes back longer than `slotSize`.
        let slot = held.map { Self.slot(accounts, generation: $0.generation + 1, size: $0.slotSize) }
        guard var open = held, let slot, slot.count <= open.slotSize, Self.isAtPath(open.descriptor, path) else {
            // None open yet, the record outgrew its slots, or the open file is no longer
            // state.json (removed or replaced).
            if let held { close(held.descriptor) }
            putBack(try create(accounts))
            return
        }
        open.generation += 1
        let offset = off_t(open.generation % 2) * off_t(open.slotSize)
        let written = slot.withUnsafeBytes { pwrite(open.descriptor, $0.baseAddress, $0.count, offset) }
        guard written == slot.count, fdatasync(open.descriptor) == 0 else {
            let failure = errno
            // The file's state is unknown now: the next save starts it over, atomically.
            close(open.descriptor)
            throw AccountdError.storage("writing the active account to", path: path, errno: failure)
        }
        putBack(open)
    }

    /// Puts `open` back as the file to write through, closing the one a write that broke the
    /// one-at-a-time rule left there meanwhile.
    private func putBack(_ open: OpenFile?) {
        let replaced = file.withLock { file -> OpenFile? in
            defer { file = open }
            return file
        }
        if let replaced { close(replaced.descriptor) }
    }

    /// Erases every mention of `account` from the file, after a purge: the slot holding the
    /// record before the current one may name it, and no byte of a purged account may stay
    /// under the data root. That slot is overwritten in place with the current record (a
    /// torn write there leaves the current slot to be read), and synced; a file not in the
    /// two-slot form, or not the one held open, is rewritten whole, atomically.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when the file cannot be written or synced.
    public func forget(_ account: AccountName) throws {
        guard let data = (try? Self.contents(path)) ?? nil, Self.mentions(account, in: data) else { return }
        let current = ((try? Self.read(path, owner: owner)) ?? nil)?.accounts ?? [:]
        // Taken out for this write: nobody else writes through it meanwhile.
        let held = file.withLock { $0.take() }
        if let open = held, data.count == 2 * open.slotSize, Self.isAtPath(open.descriptor, path),
            Self.slot(current, generation: open.generation).count <= open.slotSize
        {
            let slot = Self.slot(current, generation: open.generation, size: open.slotSize)
            let older = off_t((open.generation + 1) % 2) * off_t(open.slotSize)
            let written = slot.withUnsafeBytes { pwrite(open.descriptor, $0.baseAddress, $0.count, older) }
            guard written == slot.count, fdatasync(open.descriptor) == 0 else {
                let failure = errno
                close(open.descriptor)
                throw AccountdError.storage("erasing account \(account) from", path: path, errno: failure)
            }
            putBack(open)
            return
        }
        if let held { close(held.descriptor) }
        putBack(try create(current))
    }

    /// The bytes of the file at `path` (at most ``maximumFileBytes``), read without
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
            return try file.prefix(count: maximumFileBytes)
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

    /// Writes a new two-slot file holding `accounts` in both slots, atomically, and opens it.
    private func create(_ accounts: [UInt32: AccountName]) throws -> OpenFile {
        let generation = ((try? Self.read(path, owner: owner))??.generation ?? 0) + 1
        // Both slots hold the record: the next save overwrites the one its generation picks.
        let slot = Self.slot(accounts, generation: generation)
        try FileSystem.atomicWrite(Data(slot + slot), to: path)
        let descriptor = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw AccountdError.storage("opening", path: path, errno: errno) }
        return OpenFile(descriptor: descriptor, generation: generation, slotSize: slot.count)
    }

    /// A record read from a file: the accounts by uid, and its generation.
    struct Saved {
        var accounts: [UInt32: AccountName]
        var generation: Int64
    }

    /// The record in the file at `path`, nil when there is no file; an older record's one
    /// `"active"` account is `owner`'s.
    static func read(_ path: String, owner: UInt32) throws -> Saved? {
        guard let bytes = try contents(path) else { return nil }
        var found: (value: JSONValue, generation: Int64)?
        if !bytes.isEmpty, bytes.count % (2 * slotSize) == 0 {
            let half = bytes.count / 2
            for slot in [bytes[0..<half], bytes[half...]] {
                guard let value = try? JSONParser.parse(slot), let generation = value["generation"]?.intValue,
                    value["check"]?.stringValue
                        == check(active: value["accounts"] ?? value["active"], updatedAt: value["updatedAt"], generation: generation)
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
        func name(_ text: String) throws -> AccountName {
            do {
                return try AccountName(text)
            } catch {
                throw AccountdError(.storage, "\(path) names an invalid account: \(error)", file: path)
            }
        }
        if let entries = found.value["accounts"] {
            guard let pairs = entries.objectValue else {
                throw AccountdError(.storage, "\(path) names no accounts: \"accounts\" is \(entries.typeName), not an object", file: path)
            }
            var accounts: [UInt32: AccountName] = [:]
            for (key, value) in pairs {
                guard let uid = UInt32(key), let text = value.stringValue else {
                    throw AccountdError(
                        .storage, "\(path): the entry '\(key.prefix(32))' is not a uid naming an account; remove it or the file", file: path)
                }
                accounts[uid] = try name(text)
            }
            return Saved(accounts: accounts, generation: found.generation)
        }
        switch found.value["active"] {
        case nil, .null?:
            return Saved(accounts: [:], generation: found.generation)
        case .string(let text)?:
            return Saved(accounts: [owner: try name(text)], generation: found.generation)
        case let other?:
            throw AccountdError(.storage, "\(path) names no account: \"active\" is \(other.typeName), not a string", file: path)
        }
    }

    /// One slot holding `account` as `uid`'s only entry (`uid` defaults to the process's own).
    static func slot(_ account: AccountName?, generation: Int64, uid: UInt32 = getuid()) -> [UInt8] {
        slot(account.map { [uid: $0] } ?? [:], generation: generation)
    }

    /// One slot: the record as a line of JSON, padded with spaces to `size` bytes, or to
    /// the smallest multiple of ``slotSize`` that holds it.
    static func slot(_ accounts: [UInt32: AccountName], generation: Int64, size: Int? = nil) -> [UInt8] {
        // Account names need no JSON escaping (their characters are A-Z a-z 0-9 @ . _ + -).
        let entries = JSONValue.object(accounts.sorted { $0.key < $1.key }.map { (String($0.key), .string($0.value.rawValue)) })
        let updatedAt = JSONValue.string(Timestamp.now())
        let check = check(active: entries, updatedAt: updatedAt, generation: generation)
        let line = JSONValue.object([
            ("accounts", entries), ("updatedAt", updatedAt), ("generation", .int(generation)), ("check", .string(check)),
        ]).serialized()
        var bytes = Array(line.utf8)
        let size = size ?? (bytes.count / slotSize + 1) * slotSize
        guard bytes.count < size else { return bytes + [UInt8(ascii: "\n")] }  // too long for `size`: the caller checks the count
        bytes += [UInt8](repeating: UInt8(ascii: " "), count: size - 1 - bytes.count)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The check of a slot: FNV-1a (64 bits) of its fields (`active` being the `accounts`
    /// object, or an older slot's `active`), in hex.
    static func check(active: JSONValue?, updatedAt: JSONValue?, generation: Int64) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\((active ?? .null).serialized())|\((updatedAt ?? .null).serialized())|\(generation)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
