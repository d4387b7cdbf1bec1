"""Lists through redis-py (RESP2 and RESP3): pushes and pops at both ends, ranges, edits, LPOS,
LMOVE / RPOPLPUSH / LMPOP, WRONGTYPE, keyspace events, a key deleted with its last element, long
lists of many packed nodes edited in the middle and compared with a Python list, a graceful
restart and strict mode's SIGKILL."""

import random

import unittest

import redis

from harness import AcrossRestarts, SharedServer, wait_for
from test_pubsub import messages


class Lists(SharedServer):
    def test_push_pop_range(self):
        r = self.r
        self.assertEqual(r.lpush("l", "b", "a"), 2)
        self.assertEqual(r.rpush("l", "c", "d"), 4)
        self.assertEqual(r.lpushx("missing", "x"), 0)
        self.assertEqual(r.exists("missing"), 0)
        self.assertEqual(r.lrange("l", 0, -1), ["a", "b", "c", "d"])
        self.assertEqual(r.lrange("l", -2, 100), ["c", "d"])
        self.assertEqual((r.llen("l"), r.lindex("l", -1), r.lindex("l", 9)), (4, "d", None))
        self.assertEqual(r.lpop("l"), "a")
        self.assertEqual(r.rpop("l", 2), ["d", "c"])
        self.assertEqual(r.lpop("l", 5), ["b"])
        self.assertEqual(r.exists("l"), 0)
        self.assertIsNone(r.lpop("l"))
        self.assertIsNone(r.lpop("l", 2))
        self.assertEqual(r.type("l"), "none")

    def test_edits(self):
        r = self.r
        r.rpush("l", "a", "b", "a", "c", "a")
        self.assertTrue(r.lset("l", -1, "z"))
        with self.assertRaisesRegex(redis.ResponseError, "^index out of range$"):
            r.lset("l", 99, "z")
        with self.assertRaisesRegex(redis.ResponseError, "^no such key$"):
            r.lset("missing", 0, "z")
        self.assertEqual(r.linsert("l", "BEFORE", "b", "x"), 6)
        self.assertEqual(r.linsert("l", "AFTER", "nope", "x"), -1)
        self.assertEqual(r.lrem("l", 0, "a"), 2)
        self.assertEqual(r.lrange("l", 0, -1), ["x", "b", "c", "z"])
        self.assertTrue(r.ltrim("l", 1, 2))
        self.assertEqual(r.lrange("l", 0, -1), ["b", "c"])
        self.assertTrue(r.ltrim("l", 5, 9))
        self.assertEqual(r.exists("l"), 0)

    def test_lpos(self):
        r = self.r
        r.rpush("l", "a", "b", "a", "c", "a")
        self.assertEqual(r.lpos("l", "a"), 0)
        self.assertEqual(r.lpos("l", "a", rank=-1), 4)
        self.assertEqual(r.lpos("l", "a", count=0), [0, 2, 4])
        self.assertEqual(r.lpos("l", "a", count=2, rank=2), [2, 4])
        self.assertEqual(r.lpos("l", "a", count=0, maxlen=2), [0])
        self.assertIsNone(r.lpos("l", "zz"))
        with self.assertRaisesRegex(redis.ResponseError, "RANK can't be zero"):
            r.lpos("l", "a", rank=0)

    def test_moves(self):
        r = self.r
        r.rpush("a", 1, 2, 3)
        self.assertEqual(r.lmove("a", "b", "LEFT", "RIGHT"), "1")
        self.assertEqual(r.rpoplpush("a", "b"), "3")
        self.assertEqual(r.lrange("b", 0, -1), ["3", "1"])
        self.assertEqual(r.rpoplpush("b", "b"), "1")
        self.assertEqual(r.lrange("b", 0, -1), ["1", "3"])
        self.assertIsNone(r.lmove("missing", "b"))
        self.assertEqual(r.lmpop(2, "missing", "b", direction="RIGHT", count=5), ["b", ["3", "1"]])
        self.assertIsNone(r.lmpop(1, "missing", direction="LEFT"))
        self.assertEqual(r.exists("b"), 0)

    def test_long_lists_across_nodes(self):
        r, rng = self.r, random.Random(28)
        model = [f"e{i:05}" for i in range(5000)]
        for i in range(0, len(model), 500):
            r.rpush("long", *model[i:i + 500])
        front = [f"f{i}" for i in range(3000)]
        r.lpush("long", *front)
        model = front[::-1] + model
        big = "B" * 20000
        edits = [
            ("lset", 4000, big), ("lset", -1, "last"), ("linsert", "BEFORE", "e02500", big),
            ("linsert", "AFTER", big, "after-big"), ("lset", 100, "e00007"),
        ]
        for op, *a in edits:
            if op == "lset":
                r.lset("long", a[0], a[1])
                model[a[0]] = a[1]
            else:
                r.linsert("long", a[0], a[1], a[2])
                at = model.index(a[1])
                model.insert(at if a[0] == "BEFORE" else at + 1, a[2])
        self.assertEqual(r.lrange("long", 0, -1), model)
        self.assertEqual(r.lrem("long", -1, "e00007"), 1)
        del model[len(model) - 1 - model[::-1].index("e00007")]
        self.assertEqual(r.lrem("long", 0, big), 2)
        model = [e for e in model if e != big]
        for _ in range(50):
            a, b = sorted(rng.randrange(-len(model), len(model)) for _ in range(2))
            want = model[a % len(model):b % len(model) + 1] if a % len(model) <= b % len(model) else []
            self.assertEqual(r.lrange("long", a, b), want, (a, b))
            i = rng.randrange(-len(model), len(model))
            self.assertEqual(r.lindex("long", i), model[i])
        self.assertEqual(r.lpos("long", "e04998", rank=-1), len(model) - 2)
        self.assertEqual(r.lpos("long", "f2999"), 0)
        payload = r.dump("long")
        r.restore("copy", 0, payload)
        self.assertEqual(r.lrange("copy", 0, -1), model)
        r.ltrim("long", 1000, -1000)
        model = model[1000:-999]
        self.assertEqual((r.llen("long"), r.lrange("long", 0, -1)), (len(model), model))
        self.assertEqual(r.lpop("long", 3000), model[:3000])
        self.assertEqual(r.rpop("long", 10_000), model[3000:][::-1])
        self.assertEqual(r.exists("long"), 0)

    def test_wrongtype(self):
        r = self.r
        r.set("s", "v")
        r.rpush("l", "x")
        for call in (lambda: r.lpush("s", "x"), lambda: r.lrange("s", 0, 1), lambda: r.lpop("s"),
                     lambda: r.lmove("l", "s"), lambda: r.get("l"), lambda: r.sadd("l", "x")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE"):
                call()
        self.assertEqual(r.object("encoding", "l"), "quicklist")

    def test_keyspace_events(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyevent@0__:*")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            r.rpush("a", "x", "y")
            r.lset("a", 0, "z")
            r.lmove("a", "b", "LEFT", "LEFT")
            r.rpop("a")
            got = [(m["channel"].split(":", 1)[1], m["data"]) for m in messages(sub, 6)]
            self.assertEqual(got, [("rpush", "a"), ("lset", "a"), ("lpush", "b"), ("lpop", "a"),
                                   ("rpop", "a"), ("del", "a")])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")


class ListsResp2(Lists, unittest.TestCase):
    PROTOCOL = 2


class ListsResp3(Lists, unittest.TestCase):
    PROTOCOL = 3


class ListsAcrossRestarts(AcrossRestarts, unittest.TestCase):
    def fill(self, r):
        r.rpush("q", *range(100))
        r.lpop("q", 10)
        r.rpoplpush("q", "other")
        r.rpush("gone", "x")
        r.lpop("gone")
        r.lset("q", 0, "first")
        # Many packed nodes, one element longer than a node, edited in the middle.
        r.rpush("long", *(f"m{i}" for i in range(20000)))
        r.lpush("long", "L" * 10000)
        r.linsert("long", "AFTER", "m10000", "inserted")
        r.lrem("long", 0, "m5000")
        return {k: r.lrange(k, 0, -1) for k in ("q", "other", "long")}

    def check(self, r, before):
        self.assertEqual({k: r.lrange(k, 0, -1) for k in before}, before)
        self.assertEqual(r.llen("q"), 89)
        self.assertEqual(r.exists("gone"), 0)


if __name__ == "__main__":
    unittest.main()
