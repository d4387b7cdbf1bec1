"""Sets through redis-py (RESP2 and RESP3): every set command, the algebra and its STORE forms,
WRONGTYPE, OBJECT ENCODING, SSCAN over a large set, keyspace events, a key deleted with its
last member, a graceful restart and strict mode's SIGKILL."""

import unittest

import redis

from harness import AcrossRestarts, SharedServer, wait_for
from test_pubsub import messages


class Sets(SharedServer):
    def test_members(self):
        r = self.r
        self.assertEqual(r.sadd("s", "a", "b", "c", "a"), 3)
        self.assertEqual(r.srem("s", "c", "zz"), 1)
        self.assertTrue(r.sismember("s", "a"))
        self.assertFalse(r.sismember("s", "zz"))
        self.assertEqual(r.smismember("s", ["a", "zz"]), [1, 0])
        self.assertEqual(r.smembers("s"), {"a", "b"})
        self.assertEqual(r.scard("s"), 2)
        self.assertEqual(r.smembers("missing"), set())
        self.assertEqual(r.type("s"), "set")

    def test_pop_and_random(self):
        r = self.r
        r.sadd("s", *range(10))
        self.assertIn(r.srandmember("s"), {str(i) for i in range(10)})
        self.assertEqual(len(set(r.srandmember("s", 4))), 4)
        self.assertEqual(len(r.srandmember("s", -30)), 30)
        popped = r.spop("s", 3)
        self.assertEqual(len(set(popped)), 3)
        self.assertEqual(r.scard("s"), 7)
        self.assertEqual(len(r.spop("s", 100)), 7)
        self.assertEqual(r.exists("s"), 0)
        self.assertIsNone(r.spop("s"))
        with self.assertRaisesRegex(redis.ResponseError, "must be positive"):
            r.spop("s", -1)

    def test_algebra_and_store(self):
        r = self.r
        r.sadd("a", 1, 2, 3)
        r.sadd("b", 2, 3, 4)
        self.assertEqual(r.sinter("a", "b"), {"2", "3"})
        self.assertEqual(r.sunion("a", "b"), {"1", "2", "3", "4"})
        self.assertEqual(r.sdiff("a", "b"), {"1"})
        self.assertEqual(r.sinter("a", "missing"), set())
        self.assertEqual(r.sintercard(2, ["a", "b"]), 2)
        self.assertEqual(r.sintercard(2, ["a", "b"], limit=1), 1)
        r.set("d", "a string, replaced")
        r.expire("d", 100)
        self.assertEqual(r.sunionstore("d", "a", "b"), 4)
        self.assertEqual((r.type("d"), r.ttl("d")), ("set", -1))
        self.assertEqual(r.sinterstore("d", "a", "missing"), 0)
        self.assertEqual(r.exists("d"), 0)
        self.assertEqual(r.sdiffstore("d", "a", "b"), 1)
        self.assertTrue(r.smove("a", "b", "1"))
        self.assertFalse(r.smove("a", "b", "nope"))
        self.assertEqual(r.smembers("b"), {"1", "2", "3", "4"})

    def test_wrongtype_and_encodings(self):
        r = self.r
        r.set("str", "v")
        r.sadd("ints", 1, 2, 3)
        self.assertEqual(r.object("encoding", "ints"), "intset")
        r.sadd("ints", "x")
        self.assertEqual(r.object("encoding", "ints"), "hashtable")
        for call in (lambda: r.sadd("str", "x"), lambda: r.smembers("str"), lambda: r.sinter("ints", "str"),
                     lambda: r.smove("ints", "str", "1"), lambda: r.get("ints"), lambda: r.hget("ints", "f")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE"):
                call()

    def test_sscan_returns_every_member_of_a_large_set(self):
        r = self.r
        r.sadd("big", *[f"m{i}" for i in range(2000)])
        self.assertEqual(set(r.sscan_iter("big", count=100)), {f"m{i}" for i in range(2000)})
        self.assertEqual(set(r.sscan_iter("big", match="m199*")),
                         {"m199"} | {f"m199{i}" for i in range(10)})

    def test_keyspace_events(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyevent@0__:*")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            r.sadd("a", "x", "y")
            r.srem("a", "x")
            r.smove("a", "b", "y")
            r.sunionstore("c", "b")
            r.spop("b")
            got = [(m["channel"].split(":", 1)[1], m["data"]) for m in messages(sub, 7)]
            self.assertEqual(got, [("sadd", "a"), ("srem", "a"), ("srem", "a"), ("del", "a"),
                                   ("sadd", "b"), ("sunionstore", "c"), ("spop", "b")])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")


class SetsResp2(Sets, unittest.TestCase):
    PROTOCOL = 2


class SetsResp3(Sets, unittest.TestCase):
    PROTOCOL = 3


class SetsAcrossRestarts(AcrossRestarts, unittest.TestCase):
    def fill(self, r):
        r.sadd("s", *range(300))
        r.srem("s", 0)
        r.spop("s", 5)
        r.sadd("gone", "x")
        r.srem("gone", "x")
        r.sadd("a", 1, 2)
        r.sunionstore("u", "a", "s")
        r.smove("a", "moved", "1")
        return {k: r.smembers(k) for k in ("s", "a", "u", "moved")}

    def check(self, r, before):
        self.assertEqual({k: r.smembers(k) for k in before}, before)
        self.assertEqual(r.scard("s"), 294)
        self.assertEqual(r.exists("gone"), 0)


if __name__ == "__main__":
    unittest.main()
