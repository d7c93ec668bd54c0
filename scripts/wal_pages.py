#!/usr/bin/env python3
"""Which B-trees a SQLite WAL's frames belong to: the page-level cost of each table and index.

    scripts/wal_pages.py DB [--tail FRACTION]

Reads DB-wal (copy it aside first if the server is still running), counts its
frames by page number, and maps each page to its table or index with SQLite's
dbstat (the page's owner in the newest state). With --tail 0.2 only the last
fifth of the WAL is counted (the late, long-session phase of a sustained run).
Per run figures divide by the assistant messages in the database. A diagnostic:
the WAL only holds every frame when nothing checkpointed it meanwhile (a server
whose checkpointer was off: docs/streaming.md, "Bytes written per run").
"""
import collections
import os
import sqlite3
import struct
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    db_path = sys.argv[1]
    tail = float(sys.argv[sys.argv.index("--tail") + 1]) if "--tail" in sys.argv else 1.0
    wal = db_path + "-wal"
    size = os.path.getsize(wal)
    with open(wal, "rb") as f:
        page_size = struct.unpack(">I", f.read(32)[8:12])[0]
        frames = (size - 32) // (24 + page_size)
        first = int(frames * (1 - tail))
        f.seek(32 + first * (24 + page_size))
        pages = collections.Counter()
        commits = 0
        for _ in range(first, frames):
            page, commit_size = struct.unpack(">II", f.read(8))
            f.seek(16 + page_size, 1)
            pages[page] += 1
            commits += commit_size != 0
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    runs = db.execute("SELECT count(*) FROM messages WHERE role = 'assistant'").fetchone()[0]
    owner = dict((page, name) for name, page in db.execute("SELECT name, pageno FROM dbstat"))
    by_tree = collections.Counter()
    for page, n in pages.items():
        by_tree[owner.get(page, "(freed)")] += n
    counted = frames - first
    print(f"frames {counted} of {frames}, commits {commits}, runs {runs}, WAL KiB per run (whole) {size / 1024 / max(runs, 1):.1f}")
    for name, n in by_tree.most_common():
        print(f"  {name:36s} {n:9d} {100 * n / counted:5.1f} %")


if __name__ == "__main__":
    main()
