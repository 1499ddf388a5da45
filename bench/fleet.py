"""The two Python halves of bench/fleet.sh.

  python3 fleet.py make TEMPLATE ACCOUNTS_DIR COUNT
      Copies the account file TEMPLATE into ACCOUNTS_DIR as u000001.sqlite, ... and
      binds each copy to its own name (accountd_meta.account), as accountd would have
      created it: far faster than creating each account through accountd.

  python3 fleet.py migrate ACCOUNTS_DIR MIGRATION.sql...
      The loop an operator would write by hand: for every file, one transaction that
      applies the migrations and sets user_version, synchronous=FULL; prints the seconds.
"""
import os
import shutil
import sqlite3
import sys
import time


def make(template, folder, count):
    os.makedirs(folder, exist_ok=True)
    for i in range(1, count + 1):
        name = "u%06d" % i
        path = os.path.join(folder, name + ".sqlite")
        shutil.copyfile(template, path)
        os.chmod(path, 0o600)
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA synchronous = OFF")
        db.execute("UPDATE accountd_meta SET value = ? WHERE key = 'account'", (name,))
        db.close()


def migrate(folder, scripts):
    sql = [open(script).read() for script in scripts]
    version = len(scripts) + 1
    files = sorted(f for f in os.listdir(folder) if f.endswith(".sqlite"))
    started = time.monotonic()
    for file in files:
        db = sqlite3.connect(os.path.join(folder, file), isolation_level=None)
        db.execute("PRAGMA synchronous = FULL")
        db.execute("BEGIN IMMEDIATE")
        for script in sql:
            for statement in split(script):
                db.execute(statement)
        db.execute("PRAGMA user_version = %d" % version)
        db.execute("COMMIT")
        db.close()
    print("%.3f" % (time.monotonic() - started))


def split(script):
    """The statements of a migration, split the way sqlite3 itself does."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current)
            current = ""
    if current.strip():
        statements.append(current)
    return statements


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "migrate":
        migrate(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("usage: fleet.py make TEMPLATE DIR COUNT | migrate DIR MIGRATION.sql...")
