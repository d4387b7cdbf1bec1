"""HyperLogLog through redis-py (RESP2 and RESP3): PFADD, PFCOUNT, PFMERGE and PFDEBUG on string
values holding Redis's own HLL format (the expected bytes and counts below are redis-server
7.0.15's for the same commands), the HLL errors, the cached count, keyspace events, WATCH, a
graceful restart and strict mode's SIGKILL."""

import unittest

import redis

from harness import AcrossRestarts, SharedServer, wait_for
from test_pubsub import messages

# GET of `PFADD h a b c` on redis-server 7.0.15, before and after a PFCOUNT cached the count.
ABC = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ"
ABC_COUNTED = b"HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00`\xf3\x80P\xb1\x84K\xfb\x80BZ"


def elements(n):
    return [f"elem:{i}" for i in range(n)]


class Hll(SharedServer):
    def test_bytes_and_counts_are_redis_own(self):
        r = self.r
        raw = self.srv.client(protocol=self.PROTOCOL)
        self.assertEqual(r.pfadd("h", "a", "b", "c"), 1)
        self.assertEqual(r.pfadd("h", "a"), 0)
        self.assertEqual(raw.get("h"), ABC)
        self.assertEqual(r.pfcount("h"), 3)
        self.assertEqual(raw.get("h"), ABC_COUNTED)
        self.assertEqual(r.type("h"), "string")
        r.pfadd("k", *elements(1000))
        self.assertEqual((r.pfcount("k"), r.strlen("k")), (1005, 1913))
        self.assertEqual(r.execute_command("PFDEBUG", "ENCODING", "k"), "sparse")
        r.pfadd("d", *elements(5000))
        self.assertEqual((r.pfcount("d"), r.strlen("d")), (4973, 12304))
        self.assertEqual(r.execute_command("PFDEBUG", "ENCODING", "d"), "dense")
        self.assertEqual(r.pfcount("k", "d", "h"), 4975)
        self.assertEqual(r.pfcount("missing"), 0)

    def test_merge(self):
        r = self.r
        r.pfadd("a", *elements(100))
        r.pfadd("b", *[f"elem:{i}" for i in range(50, 150)])
        self.assertTrue(r.pfmerge("m", "a", "b", "missing"))
        self.assertEqual(r.pfcount("m"), r.pfcount("a", "b"))
        self.assertTrue(r.pfmerge("only"))
        self.assertEqual(r.pfcount("only"), 0)
        self.assertEqual(r.exists("only"), 1)

    def test_errors(self):
        r = self.r
        r.set("s", "not an hll")
        r.sadd("set", "x")
        for call in (lambda: r.pfadd("s", "x"), lambda: r.pfcount("s"), lambda: r.pfcount("h", "s"),
                     lambda: r.pfmerge("d", "s")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE Key is not a valid HyperLogLog string value\\.$"):
                call()
        with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE Operation against a key holding the wrong kind"):
            r.pfadd("set", "x")
        # A sparse value that covers too many registers, its cache stale.
        r.set("bad", b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x00")
        for call in (lambda: r.pfcount("bad"), lambda: r.pfcount("bad", "x"), lambda: r.pfmerge("d", "bad")):
            with self.assertRaisesRegex(redis.ResponseError, "Corrupted HLL object detected"):
                call()
        self.assertEqual(r.exists("d"), 0)
        with self.assertRaisesRegex(redis.ResponseError, "wrong number of arguments"):
            r.execute_command("PFADD")
        with self.assertRaisesRegex(redis.ResponseError, "The specified key does not exist"):
            r.execute_command("PFDEBUG", "NOPE", "missing")
        r.pfadd("h", "a")
        with self.assertRaisesRegex(redis.ResponseError, "Unknown PFDEBUG subcommand 'NOPE'"):
            r.execute_command("PFDEBUG", "NOPE", "h")
        # Appending to an HLL makes it something else, as in Redis.
        r.pfadd("dense", *elements(5000))
        r.append("dense", "x")
        with self.assertRaisesRegex(redis.ResponseError, "not a valid HyperLogLog"):
            r.pfcount("dense")

    def test_debug(self):
        r = self.r
        r.pfadd("h", "a", "b")
        self.assertEqual(r.execute_command("PFDEBUG", "DECODE", "h").count("v:"), 2)
        self.assertEqual(r.execute_command("PFDEBUG", "TODENSE", "h"), 1)
        self.assertEqual(r.execute_command("PFDEBUG", "TODENSE", "h"), 0)
        registers = r.execute_command("PFDEBUG", "GETREG", "h")
        self.assertEqual((len(registers), sum(1 for x in registers if x)), (16384, 2))
        self.assertEqual(r.pfcount("h"), 2)

    def test_keyspace_events_and_watch(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyevent@0__:*")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            r.pfadd("h", "a")
            r.pfadd("h", "a")  # nothing changed: no event
            r.pfcount("h")  # the cache is refreshed: no event
            r.pfmerge("m", "h")
            r.set("end", "1")
            got = [(m["channel"].split(":", 1)[1], m["data"]) for m in messages(sub, 3)]
            self.assertEqual(got, [("pfadd", "h"), ("pfadd", "m"), ("set", "end")])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")
        # Refreshing the cached count is a change WATCH sees, as in Redis.
        r.pfadd("w", "x")
        p = r.pipeline()
        p.watch("w")
        r.pfcount("w")
        p.multi()
        p.set("after", 1)
        with self.assertRaises(redis.WatchError):
            p.execute()


class HllResp2(Hll, unittest.TestCase):
    PROTOCOL = 2


class HllResp3(Hll, unittest.TestCase):
    PROTOCOL = 3


class HllAcrossRestarts(AcrossRestarts, unittest.TestCase):
    DECODE = False

    def fill(self, r):
        r.pfadd("sparse", "a", "b", "c")
        r.pfcount("sparse")
        r.pfadd("dense", *elements(5000))
        r.pfmerge("merged", "sparse", "dense")
        r.pfadd("ttl", "x")
        r.expire("ttl", 1000)
        before = {k: r.get(k) for k in ("sparse", "dense", "merged", "ttl")}
        self.assertEqual(before["sparse"], ABC_COUNTED)
        return before

    def check(self, r, before):
        self.assertEqual({k: r.get(k) for k in before}, before)
        self.assertEqual(r.pfcount("merged"), 4975)
        self.assertGreater(r.ttl("ttl"), 900)


if __name__ == "__main__":
    unittest.main()
