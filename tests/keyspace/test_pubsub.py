"""Pub/sub, keyspace notifications and expiry on time, through redis-py (RESP2 and RESP3)."""

import statistics
import time
import unittest

from harness import Server, wait_for

TIMEOUT = 20


def messages(p, n, timeout=TIMEOUT):
    """The next `n` message / pmessage entries of a redis-py PubSub."""
    out = []
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m and m["type"] in ("message", "pmessage"):
            out.append(m)
    return out


class PubSub:
    PROTOCOL = 2

    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.r = cls.srv.client(protocol=cls.PROTOCOL, decode_responses=True)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.srv.stop()

    def setUp(self):
        self.r.flushdb()
        self.r.config_set("notify-keyspace-events", "")

    def test_channels_and_patterns(self):
        sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
        sub.subscribe("news", "sport")
        sub.psubscribe("weather.*")
        self.assertTrue(wait_for(lambda: self.r.pubsub_numsub("news") == [("news", 1)]))
        self.assertEqual(self.r.publish("news", "hello"), 1)
        self.assertEqual(self.r.publish("weather.eu", "rain"), 1)
        self.assertEqual(self.r.publish("nobody", "x"), 0)
        got = messages(sub, 2)
        self.assertEqual([(m["type"], m["channel"], m["data"]) for m in got],
                         [("message", "news", "hello"), ("pmessage", "weather.eu", "rain")])
        self.assertEqual(got[1]["pattern"], "weather.*")
        self.assertEqual(sorted(self.r.pubsub_channels()), ["news", "sport"])
        self.assertEqual(self.r.pubsub_channels("s*"), ["sport"])
        self.assertEqual(self.r.pubsub_numpat(), 1)
        sub.unsubscribe("news")
        sub.punsubscribe()
        self.assertTrue(wait_for(lambda: self.r.pubsub_numsub("news") == [("news", 0)]))
        self.assertEqual(self.r.publish("sport", "goal"), 1)
        self.assertEqual([m["data"] for m in messages(sub, 1)], ["goal"])
        sub.close()
        self.assertTrue(wait_for(lambda: self.r.pubsub_channels() == []))

    def test_shard_channels_are_their_own_namespace(self):
        r = self.r
        p = r.pubsub()
        p.ssubscribe("orders")
        p.subscribe("orders")
        wait_for(lambda: r.pubsub_shardnumsub("orders") == [("orders", 1)])
        self.assertEqual(r.pubsub_shardchannels(), ["orders"])
        self.assertEqual(r.spublish("orders", "shard"), 1)
        self.assertEqual(r.publish("orders", "plain"), 1)
        got = []
        deadline = time.time() + TIMEOUT
        while len(got) < 2 and time.time() < deadline:
            m = p.get_sharded_message(timeout=0.5) or p.get_message(timeout=0.5)
            if m and m["type"] in ("smessage", "message"):
                got.append((m["type"], m["data"]))
        self.assertEqual(sorted(got), [("message", "plain"), ("smessage", "shard")])
        p.sunsubscribe("orders")
        wait_for(lambda: r.pubsub_shardnumsub("orders") == [("orders", 0)])
        self.assertEqual(r.spublish("orders", "gone"), 0)
        p.close()

    def test_keyspace_notifications(self):
        self.r.config_set("notify-keyspace-events", "KEA")
        sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
        sub.psubscribe("__keyspace@0__:*")
        self.assertTrue(wait_for(lambda: self.r.pubsub_numpat() == 1))
        self.r.set("k", "v", ex=100)
        self.r.incrby("n", 2)
        self.r.append("k", "w")
        self.r.persist("k")
        self.r.expire("k", 100)
        self.r.delete("k")
        self.r.set("brief", "v", px=20)
        got = [(m["channel"], m["data"]) for m in messages(sub, 9)]
        self.assertEqual(got, [
            ("__keyspace@0__:k", "set"),
            ("__keyspace@0__:k", "expire"),
            ("__keyspace@0__:n", "incrby"),
            ("__keyspace@0__:k", "append"),
            ("__keyspace@0__:k", "persist"),
            ("__keyspace@0__:k", "expire"),
            ("__keyspace@0__:k", "del"),
            ("__keyspace@0__:brief", "set"),
            ("__keyspace@0__:brief", "expire"),
        ])
        self.assertEqual([(m["channel"], m["data"]) for m in messages(sub, 1)],
                         [("__keyspace@0__:brief", "expired")])
        sub.close()

    def test_nubmq_model(self):
        """nubmq's `SUBSCRIBE key` is the key's keyspace channel; its `~Ex` is the keyevent
        channel of `expired`."""
        self.r.config_set("notify-keyspace-events", "KEA")
        watch = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
        watch.subscribe("__keyspace@0__:price", "__keyevent@0__:expired")
        self.assertTrue(wait_for(lambda: self.r.pubsub_numsub("__keyevent@0__:expired")[0][1] == 1))
        self.r.set("price", "10", px=30)
        got = [(m["channel"], m["data"]) for m in messages(watch, 4)]
        self.assertEqual(got, [
            ("__keyspace@0__:price", "set"),
            ("__keyspace@0__:price", "expire"),
            ("__keyspace@0__:price", "expired"),
            ("__keyevent@0__:expired", "price"),
        ])
        watch.close()


class PubSubResp2(PubSub, unittest.TestCase):
    PROTOCOL = 2


class PubSubResp3(PubSub, unittest.TestCase):
    PROTOCOL = 3


class Expiry(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--kv-notify-keyspace-events=Ex")
        cls.r = cls.srv.client(decode_responses=True)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.srv.stop()

    def test_an_expired_key_is_never_served(self):
        r = self.r
        for _ in range(20):
            r.set("k", "v", px=40)
            served_until = time.time() + 0.040
            while True:
                sent = time.time()
                v = r.get("k")
                if sent > served_until + 0.001:
                    self.assertIsNone(v, "served after its deadline")
                    break
        self.assertEqual(r.pttl("k"), -2)
        self.assertEqual(r.ttl("k"), -2)

    def test_deadlines_in_the_past(self):
        r = self.r
        r.set("a", "v", pxat=1)
        self.assertIsNone(r.get("a"))
        r.set("b", "v")
        self.assertEqual(r.getex("b", exat=1), "v")
        self.assertEqual(r.exists("b"), 0)
        r.set("c", "v")
        self.assertTrue(r.expire("c", -10))
        self.assertEqual(r.exists("c"), 0)
        self.assertFalse(r.expire("missing", 10))

    def test_shared_deadline_among_many_volatile_keys(self):
        """1,000 keys sharing one deadline among 10,000 keys with an hour left: every one of
        them announces `expired` (Redis's sampler takes seconds to minutes here)."""
        r = self.r
        sub = self.srv.client(decode_responses=True).pubsub()
        sub.subscribe("__keyevent@0__:expired")
        self.assertTrue(wait_for(lambda: r.pubsub_numsub("__keyevent@0__:expired")[0][1] == 1))
        p = r.pipeline(transaction=False)
        for i in range(10_000):
            p.set(f"long:{i}", "v", ex=3600)
        p.execute()
        deadline_ms = int(time.time() * 1000) + 500
        for i in range(1000):
            p.set(f"short:{i}", "v", pxat=deadline_ms)
        p.execute()
        got = messages(sub, 1000, timeout=30)
        arrived = time.time() * 1000
        self.assertEqual(sorted(m["data"] for m in got), sorted(f"short:{i}" for i in range(1000)))
        self.assertEqual(r.dbsize(), 10_000)
        lateness = arrived - deadline_ms
        print(f"\n    1,000 shared-deadline keys: all expired events received {lateness:.0f} ms "
              f"after the deadline (debug build, events read by redis-py)")
        sub.close()


if __name__ == "__main__":
    unittest.main()
