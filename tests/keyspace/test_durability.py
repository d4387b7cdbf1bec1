"""Memory bounds and what survives: eviction, a graceful restart, SIGKILL in strict mode, and
the change feed (an NSQ topic) across a consumer's disconnect and a restart of nsqrd."""

import json
import time
import unittest

import redis

from harness import NsqConsumer, Server, wait_for
from test_pubsub import messages


class Eviction(unittest.TestCase):
    def test_allkeys_lru_evicts_and_announces(self):
        srv = Server("--kv-maxmemory=1mb", "--kv-maxmemory-policy=allkeys-lru",
                     "--kv-notify-keyspace-events=Ee")
        try:
            r = srv.client(decode_responses=True)
            sub = srv.client(decode_responses=True).pubsub()
            sub.subscribe("__keyevent@0__:evicted")
            self.assertTrue(wait_for(lambda: r.pubsub_numsub("__keyevent@0__:evicted")[0][1] == 1))
            p = r.pipeline(transaction=False)
            for i in range(5000):
                p.set(f"key:{i}", "x" * 1000)
            self.assertTrue(all(p.execute()))
            info = r.info()
            # Checked before each write, as in Redis: the last write may go past by its size.
            self.assertLessEqual(info["used_memory"], 1024 * 1024 + 4096)
            self.assertGreater(info["evicted_keys"], 3000)
            self.assertLess(r.dbsize(), 2000)
            self.assertEqual(len(messages(sub, 100)), 100)
            sub.close()
        finally:
            srv.stop()

    def test_noeviction_refuses_writes_with_oom(self):
        srv = Server("--kv-maxmemory=256kb")
        try:
            r = srv.client()
            with self.assertRaises(redis.exceptions.OutOfMemoryError):
                for i in range(1000):
                    r.set(f"k{i}", "x" * 1000)
            self.assertIsNotNone(r.get("k0"))
            # volatile-ttl has nothing to evict: no key has a deadline.
            r.config_set("maxmemory-policy", "volatile-ttl")
            with self.assertRaises(redis.exceptions.OutOfMemoryError):
                r.set("more", "x")
            # Deleting is allowed over the limit.
            self.assertEqual(r.delete("k0", "k1"), 2)
        finally:
            srv.stop()


class Restart(unittest.TestCase):
    def test_graceful_restart_keeps_keys_and_deadlines(self):
        srv = Server()
        try:
            r = srv.client(decode_responses=True)
            r.mset({f"k{i}": i for i in range(1000)})
            r.set("ttl", "v", ex=300)
            r.set("brief", "v", px=200)
            r.close()
            srv.terminate()
            time.sleep(0.3)
            srv.restart()
            r = srv.client(decode_responses=True)
            self.assertEqual(r.dbsize(), 1001)
            self.assertEqual(r.get("k999"), "999")
            self.assertTrue(290 <= r.ttl("ttl") <= 300)
            self.assertIsNone(r.get("brief"))
        finally:
            srv.stop()

    def test_strict_mode_survives_sigkill(self):
        srv = Server("--durability=strict")
        try:
            r = srv.client(decode_responses=True)
            self.assertEqual(r.config_get("appendonly"), {"appendonly": "yes"})
            acked = []
            p = r.pipeline(transaction=False)
            for i in range(2000):
                p.set(f"k{i}", i)
            acked = p.execute()
            self.assertTrue(all(acked))
            self.assertEqual(r.incrby("counter", 7), 7)
            self.assertEqual(r.delete("k0"), 1)
            srv.kill()
            srv.restart()
            r = srv.client(decode_responses=True)
            self.assertEqual(r.dbsize(), 2000)
            self.assertEqual(r.get("k1999"), "1999")
            self.assertEqual(r.get("counter"), "7")
            self.assertIsNone(r.get("k0"))
        finally:
            srv.stop()


class ChangeFeed(unittest.TestCase):
    def test_no_change_lost_across_consumer_reconnects_and_a_restart(self):
        srv = Server("--kv-events-topic=changes", "--kv-events-prefix=user:", "--kv-events-value")
        try:
            r = srv.client(decode_responses=True)
            consumer = NsqConsumer(srv.tcp, "changes", "sync")
            r.set("user:1", "alice")
            r.set("cache:1", "not in the feed")
            first = json.loads(consumer.next())
            self.assertEqual((first["op"], first["key"], first["value"]), ("set", "user:1", "alice"))
            consumer.close()
            # The consumer is away: changes queue up in its channel.
            for i in range(200):
                r.set(f"user:{i}", f"v{i}")
            r.set("user:temp", "x", px=20)
            r.close()
            srv.terminate()
            srv.restart()
            r = srv.client(decode_responses=True)
            r.delete("user:5")
            consumer = NsqConsumer(srv.tcp, "changes", "sync")
            bodies = [json.loads(consumer.next()) for _ in range(203)]
            ops = [(b["op"], b["key"]) for b in bodies]
            self.assertEqual(ops[:201], [("set", f"user:{i}") for i in range(200)] + [("set", "user:temp")])
            self.assertEqual(sorted(ops[201:]), [("del", "user:5"), ("expired", "user:temp")])
            revs = [b["rev"] for b in [first] + bodies]
            self.assertEqual(revs, sorted(revs))
            self.assertEqual(len(set(revs)), len(revs))
            consumer.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
