import Configuration
import Foundation

/// Reads typed settings from the resolved sources, each checked against its range, with a
/// ``SettingsLoader/Failure`` that names the setting and says what it must be.
struct SettingsReader {
    let reader: ConfigReader

    /// The text of `key`.
    func string(_ key: ConfigKey) throws -> String {
        do { return try reader.requiredString(forKey: key) } catch {
            throw SettingsLoader.Failure(description: "setting \(key) is not valid text: \(error)")
        }
    }

    /// The text of `key`, or nil when no source gives it.
    func optionalString(_ key: ConfigKey) -> String? {
        reader.string(forKey: key)
    }

    /// A whole number within `range`.
    func int(_ key: ConfigKey, _ range: ClosedRange<Int>) throws -> Int {
        let value: Int
        do { value = try reader.requiredInt(forKey: key) } catch {
            // 2.5 or 1e300 (a YAML float), or text: named with the range, like a number beyond it.
            let given = reader.double(forKey: key).map(Self.text) ?? reader.string(forKey: key).map { "'\($0)'" } ?? "not a number"
            throw SettingsLoader.Failure(
                description: "setting \(key) is \(given); it must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        guard range.contains(value) else {
            throw SettingsLoader.Failure(
                description: "setting \(key) is \(value); it must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A number of seconds: finite and within `range` (NaN, infinities and values beyond it refused).
    func seconds(_ key: ConfigKey, _ range: ClosedRange<Double>) throws -> Double {
        let value: Double
        do { value = try reader.requiredDouble(forKey: key) } catch {
            throw SettingsLoader.Failure(description: "setting \(key) must be a number of seconds: \(error)")
        }
        guard value.isFinite, range.contains(value) else {
            throw SettingsLoader.Failure(
                description:
                    "setting \(key) is \(Self.text(value)); it must be a number of seconds from \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))"
            )
        }
        return value
    }

    /// True or false.
    func bool(_ key: ConfigKey) throws -> Bool {
        do { return try reader.requiredBool(forKey: key) } catch {
            throw SettingsLoader.Failure(description: "setting \(key) must be true or false: \(error)")
        }
    }

    /// A list of user or group names or numeric ids, each name looked up with `lookup`.
    func ids(_ key: ConfigKey, lookup: (String) -> UInt32?) throws -> [UInt32] {
        let names: [String]
        do { names = try reader.requiredStringArray(forKey: key) } catch {
            throw SettingsLoader.Failure(description: "setting \(key) must be a list of names or numeric ids, quoted in YAML: \(error)")
        }
        // An empty list, or an empty item ("a,,b" in the environment), names no one.
        return try names.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { name in
            let found: UInt32?
            do { found = try NameOrID.resolve(name, kind: "user or group", lookup: lookup) } catch {
                throw SettingsLoader.Failure(description: "setting \(key): \((error as? NameOrID.Ambiguous)?.message ?? "\(error)")")
            }
            guard let id = found else { throw SettingsLoader.Failure(description: "setting \(key): no such user or group '\(name)'") }
            return id
        }
    }

    /// An optional number of hours within `range`; nil when no source gives it.
    func hours(_ key: ConfigKey, _ range: ClosedRange<Double>) throws -> Double? {
        guard reader.string(forKey: key) != nil || reader.double(forKey: key) != nil else { return nil }
        guard let value = reader.double(forKey: key), value.isFinite, range.contains(value) else {
            let given = reader.double(forKey: key).map(Self.text) ?? reader.string(forKey: key).map { "'\($0.prefix(40))'" } ?? "not a number"
            throw SettingsLoader.Failure(
                description: "setting \(key) is \(given); it must be a number of hours from 0.0167 (a minute) to \(Self.text(range.upperBound))")
        }
        return value
    }

    /// `30` for 30.0, `0.5` for 0.5, `1e+300`, `inf`: a number as a person writes it.
    static func text(_ value: Double) -> String {
        value.isFinite && abs(value) < 1e15 && value == value.rounded() ? String(Int(value)) : String(value)
    }
}
