"""Streams through redis-py (RESP2 and RESP3): XADD with trimming and every id form, ranges,
XDEL / XTRIM, XREAD with BLOCK (woken by XADD, `$` resolved when blocking, timeouts, never
blocking in a transaction), consumer groups (XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM),
XINFO, XSETID, WRONGTYPE, keyspace events, expiry, RENAME / COPY / DUMP / RESTORE, a graceful
restart and strict mode's SIGKILL keeping entries and groups."""

import threading
import time
import unittest

import redis

from harness import AcrossRestarts, SharedServer, wait_for
from test_pubsub import messages


class Streams(SharedServer):
    def test_add_range_len_del_trim(self):
        r = self.r
        self.assertEqual(r.xadd("s", {"f": "v"}, id="1-1"), "1-1")
        self.assertEqual(r.xadd("s", {"a": "1", "b": "2"}, id="1-*"), "1-2")
        self.assertEqual(r.xadd("s", {"f": "v"}, id="5"), "5-0")
        with self.assertRaisesRegex(redis.ResponseError, "equal or smaller than the target"):
            r.xadd("s", {"f": "v"}, id="5-0")
        with self.assertRaisesRegex(redis.ResponseError, "must be greater than 0-0"):
            r.xadd("s", {"f": "v"}, id="0-0")
        self.assertIsNone(r.xadd("missing", {"f": "v"}, nomkstream=True))
        self.assertEqual(r.exists("missing"), 0)
        self.assertEqual(r.xlen("s"), 3)
        self.assertEqual(r.xrange("s", "-", "+", count=2),
                         [("1-1", {"f": "v"}), ("1-2", {"a": "1", "b": "2"})])
        self.assertEqual([e[0] for e in r.xrevrange("s", "+", "(1-1")], ["5-0", "1-2"])
        self.assertEqual(r.xdel("s", "1-2", "9-9"), 1)
        self.assertEqual(r.xtrim("s", maxlen=1, approximate=False), 1)
        self.assertEqual(r.xrange("s"), [("5-0", {"f": "v"})])
        # Emptied, the stream stays a key.
        self.assertEqual(r.xtrim("s", maxlen=0, approximate=False), 1)
        self.assertEqual((r.exists("s"), r.type("s"), r.object("encoding", "s")),
                         (1, "stream", "stream"))
        for i in range(250):
            r.xadd("big", {"i": i}, maxlen=100, approximate=True)
        # Approximate trimming removes whole nodes of 100 entries only.
        self.assertGreaterEqual(r.xlen("big"), 100)
        self.assertLess(r.xlen("big"), 200)
        r.xadd("big", {"i": "last"}, maxlen=10, approximate=False)
        self.assertEqual(r.xlen("big"), 10)

    def test_nodes_as_redis_keeps_them(self):
        # Entries packed 100 a node, keyed by their first id; the figures are redis-server
        # 7.0's for the same commands.
        r = self.r
        for i in range(1, 251):
            r.xadd("n", {"f": f"v{i}"}, id=f"{i}-0")
        tree = lambda: (r.xinfo_stream("n")["radix-tree-keys"],
                        r.xinfo_stream("n")["radix-tree-nodes"])
        self.assertEqual(tree(), (3, 8))
        self.assertEqual(r.xtrim("n", maxlen=200, approximate=True), 0)
        self.assertEqual(r.xtrim("n", maxlen=100, approximate=True), 100)
        self.assertEqual(tree(), (2, 6))
        self.assertEqual(r.xdel("n", "150-0", "151-0", "999-0"), 2)
        self.assertEqual(r.xtrim("n", minid="240", approximate=True), 98)
        self.assertEqual(r.xtrim("n", minid="240", approximate=False), 39)
        self.assertEqual(tree(), (1, 2))
        self.assertEqual([e[0] for e in r.xrevrange("n", "(250-0", "(241-0")],
                         [f"{i}-0" for i in range(249, 241, -1)])
        self.assertEqual(r.xtrim("n", maxlen=0, approximate=True, limit=5), 0)
        # A node whose every entry is deleted goes.
        for i in range(1, 206):
            r.xadd("w", {"f": "v"}, id=f"{i}-1")
        for i in range(1, 206):
            r.xdel("w", f"{i}-1")
        self.assertEqual((r.xinfo_stream("w")["radix-tree-keys"], r.xlen("w")), (0, 0))
        # Entries whose field names differ from their node's first entry's keep their own.
        r.xadd("m", {"a": "1", "b": "x"}, id="1")
        r.xadd("m", {"b": "1", "a": "1"}, id="2")
        r.xadd("m", {"a": "2", "b": "y"}, id="3")
        self.assertEqual(r.xrange("m"), [("1-0", {"a": "1", "b": "x"}),
                                         ("2-0", {"b": "1", "a": "1"}),
                                         ("3-0", {"a": "2", "b": "y"})])
        self.assertEqual(list(r.xrange("m")[1][1]), ["b", "a"])

    def test_read_and_block(self):
        r = self.r
        r.xadd("s", {"f": "1"}, id="1-0")
        self.assertEqual(r.xread({"s": 0}), [["s", [("1-0", {"f": "1"})]]]
                         if self.PROTOCOL == 2 else {"s": [[("1-0", {"f": "1"})]]})
        self.assertEqual(r.xread({"s": "$"}), [] if self.PROTOCOL == 2 else {})
        # A blocked XREAD with `$` gets the next entry, even when woken after more came.
        got = []
        other = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
        t = threading.Thread(target=lambda: got.append(other.xread({"s": "$"}, block=10_000)))
        t.start()
        self.assertTrue(wait_for(lambda: any(c.get("cmd") == "xread" for c in r.client_list())))
        r.xadd("s", {"f": "2"}, id="2-0")
        t.join(10)
        self.assertFalse(t.is_alive())
        entries = got[0][0][1] if self.PROTOCOL == 2 else got[0]["s"][0]
        self.assertEqual(entries, [("2-0", {"f": "2"})])
        # A timeout answers nil; inside MULTI it never blocks.
        self.assertIn(r.xread({"s": "$"}, block=50), (None, [], {}))
        p = r.pipeline()
        p.xread({"s": "$"}, block=0)
        self.assertIn(p.execute()[0], (None, [], {}))
        other.close()

    def test_groups(self):
        r = self.r
        for i in range(1, 5):
            r.xadd("s", {"n": i}, id=f"{i}-0")
        self.assertTrue(r.xgroup_create("s", "g", id="0"))
        with self.assertRaisesRegex(redis.ResponseError, "^BUSYGROUP"):
            r.xgroup_create("s", "g", id="0")
        with self.assertRaisesRegex(redis.ResponseError, "requires the key to exist"):
            r.xgroup_create("nokey", "g")
        self.assertTrue(r.xgroup_create("made", "g", mkstream=True))
        got = r.xreadgroup("g", "alice", {"s": ">"}, count=2)
        first = got[0][1] if self.PROTOCOL == 2 else got["s"][0]
        self.assertEqual([e[0] for e in first], ["1-0", "2-0"])
        self.assertEqual(r.xpending("s", "g")["pending"], 2)
        self.assertEqual(r.xack("s", "g", "1-0", "9-0"), 1)
        claimed = r.xclaim("s", "g", "bob", 0, ["2-0"], justid=True)
        self.assertEqual(claimed, ["2-0"])
        rows = r.xpending_range("s", "g", "-", "+", 10)
        self.assertEqual([(x["message_id"], x["consumer"]) for x in rows], [("2-0", "bob")])
        r.xreadgroup("g", "alice", {"s": ">"})
        r.xdel("s", "3-0")
        nxt, items, deleted = r.xautoclaim("s", "g", "carol", 0, "0-0", count=10)
        self.assertEqual((nxt, deleted), ("0-0", ["3-0"]))
        self.assertEqual([e[0] for e in items], ["2-0", "4-0"])
        groups = r.xinfo_groups("s")
        self.assertEqual((groups[0]["name"], groups[0]["pending"], groups[0]["consumers"]),
                         ("g", 2, 3))
        self.assertEqual(r.xgroup_delconsumer("s", "g", "carol"), 2)
        self.assertEqual(r.xinfo_stream("s")["groups"], 1)
        self.assertEqual(r.xgroup_destroy("s", "g"), 1)
        with self.assertRaisesRegex(redis.ResponseError, "^NOGROUP"):
            r.xreadgroup("g", "alice", {"s": ">"})

    def test_blocked_group_readers_share_new_entries(self):
        r = self.r
        r.xgroup_create("s", "g", id="$", mkstream=True)
        got = []

        def read(name):
            c = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
            got.append(c.xreadgroup("g", name, {"s": ">"}, count=1, block=10_000))
            c.close()

        threads = [threading.Thread(target=read, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        self.assertTrue(wait_for(
            lambda: sum(c.get("cmd") == "xreadgroup" for c in r.client_list()) == 2))
        r.xadd("s", {"f": "1"}, id="1-0")
        r.xadd("s", {"f": "2"}, id="2-0")
        for t in threads:
            t.join(10)
        self.assertEqual(len(got), 2)
        ids = sorted((g[0][1] if self.PROTOCOL == 2 else g["s"][0])[0][0] for g in got)
        self.assertEqual(ids, ["1-0", "2-0"])

    def test_setid_wrongtype_copy_dump_expiry(self):
        r = self.r
        r.xadd("s", {"f": "v"}, id="5-0")
        with self.assertRaisesRegex(redis.ResponseError, "smaller than the target stream top"):
            r.execute_command("XSETID", "s", "1-0")
        self.assertTrue(r.execute_command("XSETID", "s", "9-0", "ENTRIESADDED", 7,
                                          "MAXDELETEDID", "2-0"))
        info = r.xinfo_stream("s")
        self.assertEqual((info["last-generated-id"], info["entries-added"],
                          info["max-deleted-entry-id"]), ("9-0", 7, "2-0"))
        r.set("str", "x")
        for call in (lambda: r.xadd("str", {"f": "v"}), lambda: r.xrange("str"),
                     lambda: r.get("s"), lambda: r.xgroup_create("str", "g")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE"):
                call()
        r.xgroup_create("s", "g", id="0")
        self.assertTrue(r.copy("s", "c"))
        self.assertEqual(r.xinfo_groups("c")[0]["name"], "g")
        dumped = r.dump("s")
        r.restore("restored", 0, dumped)
        self.assertEqual(r.xrange("restored"), r.xrange("s"))
        r.rename("s", "t")
        self.assertEqual(r.type("t"), "stream")
        r.pexpire("t", 50)
        self.assertTrue(wait_for(lambda: r.exists("t") == 0))

    def test_hostile_counts_and_counters(self):
        r = self.r
        big = 2**63 - 1
        r.xadd("s", {"f": "v"}, id="1-0")
        r.xgroup_create("s", "g", id="0")
        r.execute_command("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", big)
        r.xadd("s", {"f": "v"}, id="2-0")
        got = r.xreadgroup("g", "c", {"s": ">"})
        self.assertEqual(len(got[0][1] if self.PROTOCOL == 2 else got["s"][0]), 2)
        self.assertEqual(r.xinfo_groups("s")[0]["entries-read"], big)
        r.xclaim("s", "g", "c", 0, ["1-0"], retrycount=big)
        r.xreadgroup("g", "c", {"s": "0"})
        self.assertEqual(len(r.xautoclaim("s", "g", "d", 0, "0-0", count=big // 16)[1]), 2)
        with self.assertRaisesRegex(redis.ResponseError, "COUNT must be > 0"):
            r.xautoclaim("s", "g", "d", 0, "0-0", count=big)
        self.assertEqual(len(r.xrange("s", count=big)), 2)
        self.assertEqual(len(r.xread({"s": 0}, count=big, block=big)[0][1]
                             if self.PROTOCOL == 2 else r.xread({"s": 0}, count=big)["s"][0]), 2)
        r.execute_command("XSETID", "s", "18446744073709551615-18446744073709551615",
                          "ENTRIESADDED", big)
        with self.assertRaisesRegex(redis.ResponseError, "exhausted the last possible ID"):
            r.xadd("s", {"f": "v"})
        self.assertTrue(r.ping())

    def test_keyspace_events(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyevent@0__:*")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            r.xadd("s", {"f": "v"}, id="1-0")
            r.xadd("s", {"f": "v"}, id="2-0", maxlen=1, approximate=False)
            r.xdel("s", "2-0")
            r.xgroup_create("s", "g")
            r.xgroup_createconsumer("s", "g", "c")
            r.execute_command("XSETID", "s", "5-0")
            got = [(m["channel"].split(":", 1)[1], m["data"]) for m in messages(sub, 7)]
            self.assertEqual(got, [("xadd", "s"), ("xadd", "s"), ("xtrim", "s"), ("xdel", "s"),
                                   ("xgroup-create", "s"), ("xgroup-createconsumer", "s"),
                                   ("xsetid", "s")])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")


class StreamsResp2(Streams, unittest.TestCase):
    PROTOCOL = 2


class StreamsResp3(Streams, unittest.TestCase):
    PROTOCOL = 3


class StreamsAcrossRestarts(AcrossRestarts, unittest.TestCase):
    @staticmethod
    def read(r):
        return (r.xrange("s"), r.xinfo_stream("s"), r.xpending_range("s", "g", "-", "+", 10))

    def fill(self, r):
        for i in range(1, 201):
            r.xadd("s", {"i": i}, id=f"{i}-0")
        r.xdel("s", "7-0")
        r.xtrim("s", minid="3-0", approximate=False)
        r.xgroup_create("s", "g", id="0")
        r.xreadgroup("g", "alice", {"s": ">"}, count=5)
        r.xack("s", "g", "3-0")
        r.xclaim("s", "g", "bob", 0, ["4-0"])
        r.xadd("gone", {"f": "v"})
        r.delete("gone")
        return self.read(r)

    def check(self, r, before):
        after = self.read(r)
        self.assertEqual(after[0], before[0])
        self.assertEqual(after[1], before[1])
        strip = lambda rows: [(x["message_id"], x["consumer"], x["times_delivered"])
                              for x in rows]
        self.assertEqual(strip(after[2]), strip(before[2]))
        self.assertEqual(r.exists("gone"), 0)
        self.assertEqual(r.xinfo_groups("s")[0]["last-delivered-id"], "8-0")


if __name__ == "__main__":
    unittest.main()
