"""Calls every method of io.accountd through the reference varlink client.

Usage: python3 varlink_calls.py unix:/path/to/io.accountd

The client builds its proxies from the interface description the daemon serves, so
each call checks that the description parses and that the replies fit it. Prints one
JSON object: each call's outcome under its name, for the Swift test to check.
"""
import json
import sys
import threading
import time

import varlink


def watch(client, accountd):
    """Watches on a connection of its own while this one sets a preference.

    The Set is repeated until the watcher has seen it (the Watch may begin after the
    first Set), within a deadline; returns the first `changed` event for that key and
    the switch event for the Switch made after it.
    """
    seen = {}
    changed = threading.Event()
    switched = threading.Event()

    def run():
        with client.open("io.accountd") as watcher:
            for event in watcher.Watch(_more=True):
                if event["event"] == "changed" and event.get("key") == "watched" and "changed" not in seen:
                    seen["changed"] = event
                    changed.set()
                elif event["event"] == "switched" and "changed" in seen:
                    seen["switched"] = event
                    switched.set()
                    return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    value = 0
    while not changed.is_set() and time.monotonic() < deadline:
        value += 1
        accountd.Set(namespace="user", key="watched", value=value, account="bob")
        changed.wait(0.1)
    if changed.is_set():
        accountd.Switch(account="carol")
        switched.wait(max(0, deadline - time.monotonic()))
    return seen


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

        # An account's own tables: a write, then a read of it, by position and by name.
        out["execute"] = accountd.Execute(account="bob", statements=[
            {"sql": "INSERT INTO user_info(user_name, age) VALUES (?, ?)", "parameters": ["ann", 9223372036854775807]},
            {"sql": "INSERT INTO user_info(user_name, age) VALUES (:name, :age)", "parameters": {"name": "ben", "age": -1}},
        ])
        out["query"] = accountd.Query(account="bob", sql="SELECT user_name, age FROM user_info WHERE age <> ? ORDER BY user_id", parameters=[0])
        out["queryMore"] = list(accountd.Query(account="bob", sql="SELECT user_name FROM user_info ORDER BY user_id", _more=True))
        error_of("statementNotAllowed", lambda: accountd.Execute(account="bob", statements=[{"sql": "DROP TABLE user_info"}]))
        error_of("sqlError", lambda: accountd.Query(account="bob", sql="SELECT nope FROM user_info"))
        error_of("accountNotFound", lambda: accountd.Verify(account="nobody"))
        error_of("invalidAccountName", lambda: accountd.Status(account="../x"))
        error_of("expectedMore", lambda: accountd.List())
        error_of("keyNotFound", lambda: accountd.Get(namespace="user", key="nope", account="bob"))
        error_of("namespaceNotFound", lambda: accountd.Keys(namespace="nope"))
        error_of("accountActive", lambda: accountd.Remove(account="bob"))
        error_of("pullWithoutReplication", lambda: accountd.Pull(account="carol"))
        out["watch"] = watch(client, accountd)  # last: it switches away from bob
    out["errors"] = errors
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
