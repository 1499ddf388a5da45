"""Calls every method of io.accountd through the reference varlink client.

Usage: python3 varlink_calls.py unix:/path/to/io.accountd

The client builds its proxies from the interface description the daemon serves, so
each call checks that the description parses and that the replies fit it. Prints one
JSON object: each call's outcome under its name, for the Swift test to check.
"""
import json
import sys

import varlink


def main(address):
    out = {}
    errors = {}

    def error_of(name, call):
        try:
            call()
            errors[name] = None
        except varlink.VarlinkError as error:
            errors[name] = {"error": error.error(), "parameters": error.parameters()}

    with varlink.Client(address=address) as client, client.open("io.accountd") as accountd:
        out["info"] = accountd.Info()
        out["ping"] = accountd.Ping()
        out["status"] = accountd.Status()
        out["switch"] = accountd.Switch(account="alice")
        out["switchMore"] = list(accountd.Switch(account="bob", create=True, _more=True))
        out["list"] = list(accountd.List(details=True, _more=True))
        out["statusAlice"] = accountd.Status(account="alice")
        out["set"] = accountd.Set(namespace="user", key="theme", value="dark", account="alice")
        out["get"] = accountd.Get(namespace="user", key="theme", account="alice")
        out["keys"] = accountd.Keys(namespace="user", account="alice")
        out["delete"] = accountd.Delete(namespace="user", key="theme", account="alice")
        out["export"] = list(accountd.Export(account="alice", format="jsonl", _more=True))
        out["exportSql"] = list(accountd.Export(account="alice", format="sql", _more=True))
        out["verify"] = accountd.Verify(account="alice")
        out["snapshot"] = accountd.Snapshot(account="alice")
        out["snapshots"] = accountd.Snapshots(account="alice")
        out["restore"] = accountd.Restore(account="alice")
        out["migrate"] = accountd.Migrate(all=True)
        out["migrateMore"] = list(accountd.Migrate(accounts=["alice", "bob"], _more=True))
        out["remove"] = accountd.Remove(account="alice")
        out["replication"] = accountd.Replication()

        # oneway: no reply; the Get after it, on the same connection, sees its effect.
        out["oneway"] = accountd.Set(namespace="user", key="oneway", value=7, account="bob", _oneway=True)
        out["afterOneway"] = accountd.Get(namespace="user", key="oneway", account="bob")

        error_of("accountNotFound", lambda: accountd.Verify(account="nobody"))
        error_of("invalidAccountName", lambda: accountd.Status(account="../x"))
        error_of("expectedMore", lambda: accountd.List())
        error_of("keyNotFound", lambda: accountd.Get(namespace="user", key="nope", account="bob"))
        error_of("namespaceNotFound", lambda: accountd.Keys(namespace="nope"))
        error_of("accountActive", lambda: accountd.Remove(account="bob"))
        error_of("pullWithoutReplication", lambda: accountd.Pull(account="carol"))
    out["errors"] = errors
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
