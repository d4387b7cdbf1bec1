"""Hashes through redis-py (RESP2 and RESP3): every hash command, WRONGTYPE both ways, TYPE,
OBJECT ENCODING and SCAN TYPE, a key deleted with its last field, HSCAN over a large hash,
keyspace events, WATCH, expiry, eviction, a graceful restart and strict mode's SIGKILL."""

import time
import unittest

import redis

from harness import AcrossRestarts, Server, SharedServer, wait_for
from test_pubsub import messages


class Hashes(SharedServer):
    def test_set_get_and_friends(self):
        r = self.r
        self.assertEqual(r.hset("h", mapping={"a": "1", "b": "2"}), 2)
        self.assertEqual(r.hset("h", "a", "3"), 0)
        self.assertTrue(r.execute_command("HMSET", "h", "c", "4"))
        self.assertFalse(r.hsetnx("h", "a", "x"))
        self.assertTrue(r.hsetnx("h", "d", "x"))
        self.assertEqual(r.hget("h", "a"), "3")
        self.assertIsNone(r.hget("h", "nope"))
        self.assertEqual(r.hmget("h", ["a", "nope", "b"]), ["3", None, "2"])
        self.assertEqual(r.hmget("missing", ["a"]), [None])
        self.assertEqual(r.hlen("h"), 4)
        self.assertEqual(r.hstrlen("h", "d"), 1)
        self.assertTrue(r.hexists("h", "a"))
        self.assertFalse(r.hexists("h", "z"))
        self.assertEqual(r.hgetall("h"), {"a": "3", "b": "2", "c": "4", "d": "x"})
        self.assertEqual(sorted(r.hkeys("h")), ["a", "b", "c", "d"])
        self.assertEqual(sorted(r.hvals("h")), ["2", "3", "4", "x"])
        self.assertEqual(r.hgetall("missing"), {})

    def test_increments(self):
        r = self.r
        self.assertEqual(r.hincrby("h", "n", 5), 5)
        self.assertEqual(r.hincrby("h", "n", -7), -2)
        self.assertEqual(r.hincrbyfloat("h", "f", 10.5), 10.5)
        r.hset("h", "s", "abc")
        with self.assertRaisesRegex(redis.ResponseError, "^hash value is not an integer$"):
            r.hincrby("h", "s", 1)
        with self.assertRaisesRegex(redis.ResponseError, "^hash value is not a float$"):
            r.hincrbyfloat("h", "s", 1)
        with self.assertRaisesRegex(redis.ResponseError, "overflow"):
            r.hincrby("h", "n", -(2**63))

    def test_the_last_field_deletes_the_key(self):
        r = self.r
        r.hset("h", mapping={"a": "1", "b": "2"})
        self.assertEqual(r.hdel("h", "a", "zz"), 1)
        self.assertEqual(r.hdel("h", "b"), 1)
        self.assertEqual(r.exists("h"), 0)
        self.assertEqual(r.hdel("h", "b"), 0)

    def test_types_and_wrongtype(self):
        r = self.r
        r.hset("h", "f", "v")
        r.set("s", "v")
        self.assertEqual(r.type("h"), "hash")
        self.assertEqual(r.type("s"), "string")
        self.assertEqual(r.object("encoding", "h"), "listpack")
        r.hset("h", "long", "x" * 65)
        self.assertEqual(r.object("encoding", "h"), "hashtable")
        for call in (lambda: r.get("h"), lambda: r.incr("h"), lambda: r.append("h", "x"),
                     lambda: r.hget("s", "f"), lambda: r.hset("s", "f", "v"), lambda: r.hgetall("s")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE Operation against a key holding the wrong kind of value$"):
                call()
        self.assertEqual(r.mget("h", "s"), [None, "v"])
        self.assertEqual(sorted(r.scan(0, _type="hash")[1]), ["h"])
        self.assertEqual(sorted(r.scan(0, _type="string")[1]), ["s"])
        self.assertEqual(r.scan(0, _type="zset")[1], [])
        # SET replaces a hash.
        self.assertTrue(r.set("h", "now a string"))
        self.assertEqual(r.type("h"), "string")

    def test_rename_copy_dump_restore(self):
        r = self.r
        r.hset("h", mapping={"a": "1", "b": "2"})
        self.assertTrue(r.rename("h", "h2"))
        self.assertTrue(r.copy("h2", "h3"))
        r.hset("h3", "c", "3")
        self.assertEqual(r.hgetall("h2"), {"a": "1", "b": "2"})
        self.assertEqual(r.hlen("h3"), 3)
        payload = self.srv.client(protocol=self.PROTOCOL).dump("h3")
        self.assertTrue(r.restore("h4", 0, payload))
        self.assertEqual(r.hgetall("h4"), {"a": "1", "b": "2", "c": "3"})

    def test_a_small_hash_keeps_redis_order_and_turns_into_a_table_past_512_fields(self):
        r = self.r
        r.hset("h", mapping={f"f{i}": str(i) for i in range(5)})
        r.hdel("h", "f1")
        r.hset("h", "f3", "x" * 64)
        r.hset("h", "f9", "9")
        # Redis 7.0's listpack order: insertion order, a removal closing the gap.
        self.assertEqual(list(r.hgetall("h").items()),
                         [("f0", "0"), ("f2", "2"), ("f3", "x" * 64), ("f4", "4"), ("f9", "9")])
        self.assertEqual(r.object("encoding", "h"), "listpack")
        r.hset("h", mapping={f"g{i}": str(i) for i in range(507)})
        self.assertEqual((r.hlen("h"), r.object("encoding", "h")), (512, "listpack"))
        r.hset("h", "g0", "replaced")
        self.assertEqual(r.object("encoding", "h"), "listpack")
        r.hset("h", "one more", "v")
        self.assertEqual((r.hlen("h"), r.object("encoding", "h")), (513, "hashtable"))
        self.assertEqual((r.hget("h", "f3"), r.hget("h", "g0"), r.hget("h", "g506")),
                         ("x" * 64, "replaced", "506"))
        self.assertEqual(r.config_get("hash-max-listpack-entries"), {"hash-max-listpack-entries": "512"})

    def test_hrandfield(self):
        r = self.r
        fields = {f"f{i}": str(i) for i in range(20)}
        r.hset("h", mapping=fields)
        self.assertIn(r.hrandfield("h"), fields)
        self.assertIsNone(r.hrandfield("missing"))
        picked = r.hrandfield("h", 5)
        self.assertEqual(len(set(picked)), 5)
        self.assertEqual(sorted(r.hrandfield("h", 100)), sorted(fields))
        self.assertEqual(len(r.hrandfield("h", -50)), 50)
        pairs = r.hrandfield("h", 3, withvalues=True)
        if self.PROTOCOL == 2:
            pairs = list(zip(pairs[::2], pairs[1::2]))
        self.assertEqual(len(pairs), 3)
        for f, v in pairs:
            self.assertEqual(fields[f], v)
        with self.assertRaisesRegex(redis.ResponseError, "out of range"):
            r.hrandfield("h", -(2**40))

    def test_hscan_returns_every_field_of_a_large_hash(self):
        r = self.r
        fields = {f"field:{i}": str(i) for i in range(1000)}
        r.hset("big", mapping=fields)
        self.assertEqual(dict(r.hscan_iter("big", count=50)), fields)
        self.assertEqual(dict(r.hscan_iter("big", match="field:99*")),
                         {k: v for k, v in fields.items() if k.startswith("field:99")})
        # A small hash comes back whole, cursor 0, as Redis answers it.
        r.hset("small", mapping={"a": "1", "b": "2"})
        self.assertEqual(r.hscan("small", 0, count=1), (0, {"a": "1", "b": "2"}))

    def test_keyspace_events(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyspace@0__:h")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            r.hset("h", "a", "1")
            r.hincrby("h", "n", 1)
            r.hincrbyfloat("h", "n", 1.5)
            r.hdel("h", "a", "n")
            got = [m["data"] for m in messages(sub, 5)]
            self.assertEqual(got, ["hset", "hincrby", "hincrbyfloat", "hdel", "del"])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")

    def test_watch_sees_a_field_change(self):
        with self.r.pipeline() as p:
            p.watch("h")
            self.srv.client().hset("h", "f", "v")
            p.multi()
            p.hset("h", "g", "w")
            with self.assertRaises(redis.WatchError):
                p.execute()
        self.assertEqual(self.r.hgetall("h"), {"f": "v"})

    def test_a_volatile_hash_expires_on_time(self):
        r = self.r
        r.hset("h", "f", "v")
        r.pexpire("h", 100)
        self.assertTrue(wait_for(lambda: r.dbsize() == 0))
        self.assertIsNone(r.hget("h", "f"))


class HashesResp2(Hashes, unittest.TestCase):
    PROTOCOL = 2


class HashesResp3(Hashes, unittest.TestCase):
    PROTOCOL = 3


class HashesAcrossRestarts(AcrossRestarts, unittest.TestCase):
    def fill(self, r):
        r.hset("h", mapping={f"f{i}": str(i) for i in range(600)})
        r.hset("small", mapping={f"s{i}": str(i) for i in range(10)})
        r.hdel("small", "s3")
        r.hincrby("small", "s5", 100)
        r.hincrby("h", "counter", 7)
        r.hdel("h", "f0")
        r.hset("gone", "x", "1")
        r.hdel("gone", "x")
        r.hset("vol", "f", "v")
        r.expire("vol", 300)

    def check(self, r, _before):
        h = r.hgetall("h")
        self.assertEqual(len(h), 600)
        self.assertEqual((h["counter"], h["f599"], h.get("f0")), ("7", "599", None))
        self.assertEqual(r.object("encoding", "h"), "hashtable")
        want = [(f"s{i}", str(i + 100 * (i == 5))) for i in range(10) if i != 3]
        self.assertEqual(list(r.hgetall("small").items()), want)
        self.assertEqual(r.object("encoding", "small"), "listpack")
        self.assertEqual(r.exists("gone"), 0)
        self.assertTrue(290 <= r.ttl("vol") <= 300)

    def test_eviction_counts_a_growing_hash(self):
        srv = Server("--kv-maxmemory=1mb", "--kv-maxmemory-policy=allkeys-lru")
        try:
            r = srv.client(decode_responses=True)
            for k in range(20):
                p = r.pipeline(transaction=False)
                for i in range(100):
                    p.hset(f"h{k}", f"field{i}", "x" * 1000)
                p.execute()
            info = r.info()
            self.assertLessEqual(info["used_memory"], 1024 * 1024 + 4096)
            self.assertGreater(info["evicted_keys"], 5)
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
