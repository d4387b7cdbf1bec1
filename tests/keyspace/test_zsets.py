"""Sorted sets through redis-py (RESP2 and RESP3): ZADD's flags, the range commands by rank,
score and member with REV and LIMIT, ranks, pops and blocking pops (first blocked first
served, woken only when a transaction ends), the algebra with weights and aggregates and its
STORE forms, ZRANDMEMBER, ZSCAN over a large sorted set, scores written as Redis writes them,
WRONGTYPE, OBJECT ENCODING, keyspace events, hostile input, a graceful restart and strict
mode's SIGKILL."""

import threading
import unittest

import redis

from harness import AcrossRestarts, NO_RETRY, SharedServer, wait_for
from test_pubsub import messages


def scored(reply):
    """Members with scores as (member, float) pairs, whatever shape the protocol gave."""
    if reply and not isinstance(reply[0], (list, tuple)):
        reply = list(zip(reply[::2], reply[1::2]))
    return [(m, float(s)) for m, s in reply]


class Zsets(SharedServer):
    def test_zadd_flags_and_scores(self):
        r = self.r
        self.assertEqual(r.zadd("z", {"a": 1, "b": 2, "c": 3}), 3)
        self.assertEqual(r.zadd("z", {"a": 5, "d": 4}, ch=True), 2)
        self.assertEqual(r.zadd("z", {"a": 0, "new": 1}, xx=True), 0)
        self.assertEqual(r.zadd("z", {"a": 0, "new": 1}, nx=True), 1)
        self.assertEqual(r.zadd("z", {"a": 9, "b": 0}, gt=True, ch=True), 1)
        self.assertEqual(r.zscore("z", "a"), 9.0)
        self.assertEqual(r.zadd("z", {"a": 1.5}, incr=True), 10.5)
        self.assertIsNone(r.zadd("z", {"a": 1}, nx=True, incr=True))
        self.assertEqual(r.zincrby("z", -0.5, "a"), 10.0)
        self.assertEqual(r.zmscore("z", ["a", "zz", "b"]), [10.0, None, 2.0])
        self.assertEqual((r.zcard("z"), r.zcard("missing")), (5, 0))
        self.assertEqual((r.zrank("z", "b"), r.zrevrank("z", "b"), r.zrank("z", "zz")), (1, 3, None))
        self.assertEqual(r.zrem("z", "new", "zz"), 1)
        self.assertEqual(r.type("z"), "zset")
        with self.assertRaisesRegex(redis.ResponseError, "not compatible"):
            r.execute_command("ZADD", "z", "NX", "XX", 1, "a")
        for bad in ("nan", "1e400", "1e-400", " 1", ""):
            with self.assertRaisesRegex(redis.ResponseError, "not a valid float"):
                r.execute_command("ZADD", "z", bad, "a")
        self.assertEqual(r.execute_command("ZADD", "hx", "0x10", "hex"), 1)
        self.assertEqual((r.zcount("hx", "", "(16"), r.zcount("hx", "", 16)), (0, 1))
        r.zadd("inf", {"x": "inf"})
        with self.assertRaisesRegex(redis.ResponseError, "NaN"):
            r.zincrby("inf", "-inf", "x")

    def test_scores_are_written_as_redis_writes_them(self):
        r = self.r
        r.zadd("z", {"a": 0.1, "b": 1e20, "c": "inf", "d": "-inf", "e": 3, "f": "-0"})
        sock = self.srv.raw()
        self.addCleanup(sock.close)
        if self.PROTOCOL == 3:
            sock.sendall(b"HELLO 3\r\n")
            wait_for(lambda: sock.recv(65536).endswith(b"\r\n"))
        sock.sendall(b"ZRANGE z 0 -1 WITHSCORES\r\n")
        want = [b"d", b"-inf", b"f", b"0", b"a", b"0.10000000000000001", b"e", b"3", b"b", b"1e+20",
                b"c", b"inf"]
        if self.PROTOCOL == 2:
            expected = b"*12\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in want)
        else:
            expected = b"*6\r\n" + b"".join(b"*2\r\n$%d\r\n%s\r\n,%s\r\n" % (len(m), m, s)
                                             for m, s in zip(want[::2], want[1::2]))
        got = b""
        while len(got) < len(expected):
            got += sock.recv(65536)
        self.assertEqual(got, expected)

    def test_ranges(self):
        r = self.r
        r.zadd("z", {m: i for i, m in enumerate("abcdef")})
        self.assertEqual(r.zrange("z", 0, 1), ["a", "b"])
        self.assertEqual(scored(r.zrange("z", -2, -1, withscores=True)), [("e", 4.0), ("f", 5.0)])
        self.assertEqual(r.zrange("z", 0, 1, desc=True), ["f", "e"])
        self.assertEqual(r.zrange("z", "(1", 4, byscore=True, offset=1, num=2), ["d", "e"])
        self.assertEqual(r.zrange("z", 4, "(1", byscore=True, desc=True, offset=1, num=2), ["d", "c"])
        self.assertEqual(scored(r.zrevrange("z", 0, 0, withscores=True)), [("f", 5.0)])
        self.assertEqual(r.zrangebyscore("z", "-inf", "+inf", start=4, num=10), ["e", "f"])
        self.assertEqual(r.zrevrangebyscore("z", 3, 2), ["d", "c"])
        self.assertEqual((r.zcount("z", 1, 3), r.zcount("z", "(1", "+inf")), (3, 4))
        with self.assertRaisesRegex(redis.ResponseError, "min or max is not a float"):
            r.zrangebyscore("z", "x", 1)
        with self.assertRaisesRegex(redis.ResponseError, "LIMIT is only supported"):
            r.execute_command("ZRANGE", "z", 0, -1, "LIMIT", 0, 1)
        r.zadd("lex", {m: 0 for m in "abcde"})
        self.assertEqual(r.zrangebylex("lex", "(a", "[c"), ["b", "c"])
        self.assertEqual(r.zrevrangebylex("lex", "+", "-", start=1, num=2), ["d", "c"])
        self.assertEqual(r.zlexcount("lex", "[b", "+"), 4)
        with self.assertRaisesRegex(redis.ResponseError, "not valid string range item"):
            r.zrangebylex("lex", "a", "b")
        self.assertEqual(r.zrangestore("dst", "z", 0, 2, byscore=True, desc=False), 3)
        self.assertEqual(scored(r.zrange("dst", 0, -1, withscores=True)), [("a", 0.0), ("b", 1.0), ("c", 2.0)])
        self.assertEqual(r.zremrangebyrank("z", 0, 0), 1)
        self.assertEqual(r.zremrangebyscore("z", "(4", "+inf"), 1)
        self.assertEqual(r.zremrangebylex("lex", "[d", "+"), 2)
        self.assertEqual(r.zrange("z", 0, -1), ["b", "c", "d", "e"])
        self.assertEqual(r.zrange("lex", 0, -1), ["a", "b", "c"])

    def test_pops(self):
        r = self.r
        r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
        self.assertEqual(scored(r.zpopmin("z")), [("a", 1.0)])
        self.assertEqual(scored(r.zpopmax("z", 2)), [("d", 4.0), ("c", 3.0)])
        key, popped = r.zmpop(2, ["missing", "z"], min=True, count=5)
        self.assertEqual((key, scored(popped)), ("z", [("b", 2.0)]))
        self.assertEqual(r.exists("z"), 0)
        self.assertIsNone(r.zmpop(1, ["z"], max=True))
        self.assertEqual(r.zpopmin("z"), [])
        with self.assertRaisesRegex(redis.ResponseError, "must be positive"):
            r.zpopmin("z", -1)

    def test_algebra_and_store(self):
        r = self.r
        r.zadd("a", {"x": 1, "y": 2})
        r.zadd("b", {"y": 10, "z": 20})
        r.sadd("s", "y", "w")
        self.assertEqual(scored(r.zunion(["a", "b"], withscores=True)), [("x", 1.0), ("y", 12.0), ("z", 20.0)])
        self.assertEqual(scored(r.zinter({"a": 2, "b": 1, "s": 3}, aggregate="MAX", withscores=True)),
                         [("y", 10.0)])
        self.assertEqual(scored(r.zdiff(["a", "s"], withscores=True)), [("x", 1.0)])
        self.assertEqual(r.zintercard(2, ["a", "b"]), 1)
        r.set("d", "a string, replaced")
        r.expire("d", 100)
        self.assertEqual(r.zunionstore("d", {"a": 1, "s": 2}, aggregate="MIN"), 3)
        self.assertEqual((r.type("d"), r.ttl("d")), ("zset", -1))
        self.assertEqual(scored(r.zrange("d", 0, -1, withscores=True)), [("x", 1.0), ("w", 2.0), ("y", 2.0)])
        self.assertEqual(r.zinterstore("d", ["a", "missing"]), 0)
        self.assertEqual(r.exists("d"), 0)
        self.assertEqual(r.zdiffstore("d", ["b", "a"]), 1)
        with self.assertRaisesRegex(redis.ResponseError, "weight value is not a float"):
            r.execute_command("ZUNION", 1, "a", "WEIGHTS", "x")

    def test_random_and_scan(self):
        r = self.r
        r.zadd("z", {f"m{i}": i for i in range(10)})
        self.assertIn(r.zrandmember("z"), {f"m{i}" for i in range(10)})
        self.assertEqual(len(set(r.zrandmember("z", 4))), 4)
        self.assertEqual(len(r.zrandmember("z", -30)), 30)
        picks = r.zrandmember("z", 3, withscores=True)
        self.assertEqual(len(scored(picks)), 3)
        r.zadd("big", {f"m{i}": i for i in range(2000)})
        self.assertEqual(r.object("encoding", "big"), "skiplist")
        self.assertEqual(r.object("encoding", "z"), "listpack")
        got = dict(r.zscan_iter("big", count=100))
        self.assertEqual(got, {f"m{i}": float(i) for i in range(2000)})
        self.assertEqual(r.zrank("big", "m1500"), 1500)

    def test_wrongtype(self):
        r = self.r
        r.set("str", "v")
        r.zadd("z", {"a": 1})
        for call in (lambda: r.zadd("str", {"x": 1}), lambda: r.zrange("str", 0, -1),
                     lambda: r.zunion(["z", "str"]), lambda: r.zpopmin("str"),
                     lambda: r.bzpopmin("str", 1), lambda: r.get("z"), lambda: r.sadd("z", "x")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE"):
                call()

    def test_hostile_input(self):
        r = self.r
        r.zadd("z", {"a": 1})
        for args in (["ZRANGE", "z", "-9223372036854775808", "9223372036854775807"],
                     ["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "9223372036854775807", "-1"],
                     ["ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "0", "9223372036854775807"]):
            self.assertIsInstance(r.execute_command(*args), list)
        with self.assertRaisesRegex(redis.ResponseError, "out of range"):
            r.execute_command("ZRANDMEMBER", "z", "-9223372036854775808")
        with self.assertRaisesRegex(redis.ResponseError, "at least 1 input key"):
            r.execute_command("ZUNION", 0, "z")
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("ZUNION", 9223372036854775807, "z")
        self.assertTrue(r.ping())

    def test_keyspace_events(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyevent@0__:*")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            r.zadd("a", {"x": 1, "y": 2})
            r.zincrby("a", 1, "x")
            r.zrem("a", "x")
            r.zunionstore("u", ["a"])
            r.zpopmin("a")
            got = [(m["channel"].split(":", 1)[1], m["data"]) for m in messages(sub, 6)]
            self.assertEqual(got, [("zadd", "a"), ("zincr", "a"), ("zrem", "a"), ("zunionstore", "u"),
                                   ("zpopmin", "a"), ("del", "a")])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")


class ZsetsResp2(Zsets, unittest.TestCase):
    PROTOCOL = 2


class ZsetsResp3(Zsets, unittest.TestCase):
    PROTOCOL = 3


class BlockingPops(SharedServer, unittest.TestCase):
    PROTOCOL = 2

    def blocked(self, *args):
        """Runs a blocking command on a client of its own until CLIENT LIST shows it blocked;
        returns its thread and result."""
        out = {}
        client = self.srv.client(decode_responses=True, retry=NO_RETRY)
        self.addCleanup(client.close)
        cid = client.client_id()

        def run():
            out["reply"] = client.execute_command(*args)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.assertTrue(wait_for(lambda: any(
            int(c["id"]) == cid and c["cmd"] == args[0].lower() for c in self.r.client_list())))
        return t, out

    def test_first_blocked_first_served(self):
        first, one = self.blocked("BZPOPMIN", "q", 30)
        second, two = self.blocked("BZMPOP", 30, 1, "q", "MAX", "COUNT", 5)
        self.r.zadd("q", {"a": 1})
        first.join(30)
        self.assertEqual(one["reply"], ("q", "a", 1.0))
        self.r.zadd("q", {"b": 2, "c": 3})
        second.join(30)
        key, popped = two["reply"]
        self.assertEqual((key, scored(popped)), ("q", [("c", 3.0), ("b", 2.0)]))

    def test_timeout_and_transaction(self):
        self.assertIsNone(self.r.bzpopmax("none", 0.05))
        # A timeout too small for a double is still a timeout, not "forever".
        self.assertIsNone(self.r.execute_command("BZPOPMIN", "none", "1e-400"))
        t, out = self.blocked("BZPOPMAX", "q", 30)
        p = self.r.pipeline(transaction=True)
        p.zadd("q", {"x": 1}).zrem("q", "x").zadd("q", {"y": 2})
        p.execute()
        t.join(30)
        self.assertEqual(out["reply"], ("q", "y", 2.0))
        # Inside a transaction a blocking pop answers at once.
        p = self.r.pipeline(transaction=True)
        p.bzpopmin("none", 0)
        self.assertEqual(p.execute(), [None])


class ZsetsAcrossRestarts(AcrossRestarts, unittest.TestCase):
    def fill(self, r):
        r.zadd("z", {f"m{i}": i / 3 for i in range(300)})
        r.zrem("z", "m0")
        r.zincrby("z", 1000, "m1")
        r.zpopmax("z", 2)
        r.zadd("gone", {"x": 1})
        r.zrem("gone", "x")
        r.zadd("inf", {"a": "inf", "b": "-inf"})
        r.zunionstore("u", ["z", "inf"])
        r.zremrangebyrank("u", 0, 9)
        return {k: r.zrange(k, 0, -1, withscores=True) for k in ("z", "inf", "u")}

    def check(self, r, before):
        self.assertEqual({k: r.zrange(k, 0, -1, withscores=True) for k in before}, before)
        self.assertEqual(r.zcard("z"), 297)
        self.assertEqual(r.exists("gone"), 0)
        self.assertEqual(r.type("z"), "zset")


if __name__ == "__main__":
    unittest.main()
