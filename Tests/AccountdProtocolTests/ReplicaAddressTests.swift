import Testing
@testable import AccountdProtocol

/// Replica base URLs: what is refused before Litestream sees it, and which spellings name one store.
@Suite struct ReplicaAddressTests {
    @Test(arguments: [
        "sftp://backup:Tr0ub4dor/x@host/acc", "sftp://backup:Tr0?ub4dor@host/acc", "sftp://backup:Tr0#ub4dor@host/acc",
        "sftp://backup:pa ss@host/acc", "no-scheme/acc", "://host/acc", "s3://bucket/acc\n",
    ])
    func aURLLitestreamWouldMisreadIsRefusedWithoutEchoingIt(url: String) throws {
        let problem = try #require(ReplicaAddress.problem(in: url))
        #expect(!problem.contains("ub4dor") && !problem.contains("pa ss"), "\(problem)")
    }

    @Test(arguments: [
        "file:///srv/replica/accounts", "s3://bucket/accounts?endpoint=http://127.0.0.1:8333&region=us-east-1", "sftp://backup:S3cret@host/accountd",
        "sftp://backup:p%2Fss@host/accountd", "sftp://backup:p@ss@host/accountd", "s3://bucket/a@b", "webdav://u:pw@127.0.0.1:1/x",
    ])
    func aURLLitestreamReadsAsMeantIsTaken(url: String) {
        #expect(ReplicaAddress.problem(in: url) == nil, "\(url)")
    }

    @Test func spellingsOfOneStoreAreTheSameStore() {
        let base = "s3://bucket/accountd/host-a?endpoint=http://127.0.0.1:8333&region=us-east-1"
        for spelling in [
            "s3://bucket/accountd/host-a/", "S3://bucket//accountd/host-a?region=eu&endpoint=http://localhost:8333/",
            "s3://k:***@bucket/accountd/./host-a?force-path-style=true&endpoint=HTTP://127.0.0.1:8333",
        ] {
            let sameEndpoint = spelling.contains("endpoint") ? spelling : spelling + "?endpoint=http://127.0.0.1:8333"
            #expect(ReplicaAddress.sameStore(base, sameEndpoint), "\(sameEndpoint): \(ReplicaAddress.storeIdentity(sameEndpoint))")
        }
        #expect(ReplicaAddress.sameStore("sftp://backup:***@localhost:22/acc", "sftp://backup:S3cret@127.0.0.1/acc/"))
        #expect(ReplicaAddress.sameStore("file:///srv/replica", "FILE:///srv//replica/"))
        #expect(!ReplicaAddress.sameStore(base, "s3://bucket/accountd/host-b?endpoint=http://127.0.0.1:8333"))
        #expect(!ReplicaAddress.sameStore(base, "s3://bucket/accountd/host-a?endpoint=http://127.0.0.1:9333"))
        #expect(!ReplicaAddress.sameStore(base, "s3://bucket/accountd/host-a"))
        #expect(!ReplicaAddress.sameStore("file:///srv/replica", "file:///srv/replica2"))
    }

    /// hostile33d #1: an endpoint without its scheme, a port with a leading zero, and a second
    /// `endpoint` (Litestream reads the first) each got a stale copy past the handoff fence.
    @Test func theEndpointIsTheServerHoweverItIsWrittenAndGivenOnce() {
        let base = "s3://accountd/host-a?endpoint=http://127.0.0.1:41333&forcePathStyle=true"
        for spelling in [
            "s3://accountd/host-a?endpoint=127.0.0.1:41333&forcePathStyle=true",
            "s3://accountd/host-a?endpoint=http://127.0.0.1:041333",
            "s3://accountd/host-a?endpoint=https://localhost:41333/",
            // hostile33e #3: every other spelling of this machine.
            "s3://accountd/host-a?endpoint=http://0.0.0.0:41333", "s3://accountd/host-a?endpoint=http://[::]:41333",
            "s3://accountd/host-a?endpoint=http://[::ffff:127.0.0.1]:41333", "s3://accountd/host-a?endpoint=http://[::ffff:7f00:1]:41333",
            "s3://accountd/host-a?endpoint=http://127.1.2.3:41333", "s3://accountd/host-a?endpoint=http://[0:0:0:0:0:0:0:1]:41333",
            "s3://accountd/host-a?endpoint=http://LOCALHOST.:41333",
            "s3://accountd/host-a?endpoint=http://\(ReplicaHost.machineName() ?? "localhost"):41333",
        ] {
            #expect(ReplicaAddress.sameStore(base, spelling), "\(spelling): \(ReplicaAddress.storeIdentity(spelling))")
        }
        #expect(!ReplicaAddress.sameStore(base, "s3://accountd/host-a?endpoint=http://127.0.0.1:41334"))
        #expect(!ReplicaAddress.sameStore(base, "s3://accountd/host-a?endpoint=http://10.0.0.1:41333"))
        // IPv6 literals are one address however they are written; another stays another.
        #expect(ReplicaAddress.sameStore("s3://b/p?endpoint=http://[2001:db8::1]:9000", "s3://b/p?endpoint=http://[2001:0DB8:0:0::0001]:9000"))
        #expect(!ReplicaAddress.sameStore("s3://b/p?endpoint=http://[2001:db8::1]:9000", "s3://b/p?endpoint=http://[2001:db8::2]:9000"))
        #expect(ReplicaAddress.sameStore("s3://b/p?endpoint=http://[::ffff:10.0.0.1]:9000", "s3://b/p?endpoint=http://10.0.0.1:9000"))
        for twice in [
            "s3://accountd/host-a?endpoint=http://127.0.0.1:41333&endpoint=", "s3://accountd/host-a?endpoint=http://127.0.0.1:41333&Endpoint=http://127.0.0.1:1",
            "s3://accountd/host-a?region=a&region=b",
        ] {
            let problem = ReplicaAddress.problem(in: twice)
            #expect(problem?.contains("more than once") == true, "\(twice): \(problem ?? "taken")")
        }
    }
}
