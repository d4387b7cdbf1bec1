"""Redis's 16 databases through redis-py (RESP2 and RESP3): SELECT per connection, keys apart
per database, SWAPDB, MOVE, COPY ... DB, FLUSHDB against FLUSHALL, DBSIZE / KEYS / SCAN /
RANDOMKEY per database, INFO keyspace, CLIENT INFO's db=, RESET, a script's SELECT, SELECT in
MULTI, WATCH per (db, key), notifications on __keyspace@<db>__, the change feed's db field,
and databases kept across a restart and a strict-mode kill -9."""

import json
import threading
import unittest

import redis

from harness import NsqConsumer, Server, SharedServer, wait_for


class Databases(SharedServer):
    def setUp(self):
        self.r.flushall()
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()

    def db(self, n):
        c = self.srv.client(protocol=self.PROTOCOL, decode_responses=True, db=n)
        self.clients.append(c)
        return c

    def test_keys_live_apart_per_database(self):
        d0, d1, d2 = self.r, self.db(1), self.db(2)
        d0.set("k", "zero")
        d1.set("k", "one")
        d1.rpush("l", "a", "b")
        d1.hset("h", "f", "v")
        self.assertEqual(d0.get("k"), "zero")
        self.assertEqual(d1.get("k"), "one")
        self.assertIsNone(d2.get("k"))
        self.assertEqual((d0.dbsize(), d1.dbsize(), d2.dbsize()), (1, 3, 0))
        self.assertEqual(sorted(d1.keys("*")), ["h", "k", "l"])
        self.assertEqual(d0.keys("*"), ["k"])
        self.assertEqual(sorted(d1.scan_iter(match="*")), ["h", "k", "l"])
        self.assertEqual(list(d1.scan_iter(_type="list")), ["l"])
        self.assertEqual(d2.randomkey(), None)
        self.assertEqual(d0.randomkey(), "k")
        self.assertEqual(d1.type("l"), "list")
        info = d0.info("keyspace")
        self.assertEqual(info["db0"]["keys"], 1)
        self.assertEqual(info["db1"]["keys"], 3)
        self.assertNotIn("db2", info)

    def test_sorted_sets_and_pops_name_the_clients_key(self):
        d1 = self.db(1)
        d1.zadd("z", {"a": 1, "b": 2})
        self.assertEqual(self.r.zcard("z"), 0)
        self.assertEqual(d1.zrange("z", 0, -1, withscores=True), [("a", 1.0), ("b", 2.0)] if self.PROTOCOL == 2 else [["a", 1.0], ["b", 2.0]])
        popped = d1.bzpopmin("z", timeout=1)
        self.assertEqual(list(popped), ["z", "a", 1.0])
        key, pairs = d1.zmpop(1, ["z"], max=True)
        self.assertEqual((key, pairs[0][0], float(pairs[0][1])), ("z", "b", 2.0))
        d1.rpush("l", "x")
        self.assertEqual(list(d1.blpop("l", timeout=1)), ["l", "x"])

    def test_sort_by_and_store_use_the_clients_database(self):
        d2 = self.db(2)
        d2.rpush("ids", "1", "2", "3")
        d2.mset({"w_1": 3, "w_2": 1, "w_3": 2, "name_1": "a", "name_2": "b", "name_3": "c"})
        self.r.mset({"w_1": 1, "w_2": 2, "w_3": 3})
        self.assertEqual(d2.sort("ids", by="w_*", get="name_*"), ["b", "c", "a"])
        self.assertEqual(d2.sort("ids", by="w_*", store="sorted"), 3)
        self.assertEqual(d2.lrange("sorted", 0, -1), ["2", "3", "1"])
        self.assertEqual(self.r.exists("sorted"), 0)

    def test_select_errors_as_redis(self):
        with self.assertRaisesRegex(redis.ResponseError, "^DB index is out of range$"):
            self.r.execute_command("SELECT", 16)
        with self.assertRaisesRegex(redis.ResponseError, "^DB index is out of range$"):
            self.r.execute_command("SELECT", -1)
        with self.assertRaisesRegex(redis.ResponseError, "^value is not an integer or out of range$"):
            self.r.execute_command("SELECT", "x")
        with self.assertRaisesRegex(redis.ResponseError, "^invalid first DB index$"):
            self.r.swapdb("x", 1)
        with self.assertRaisesRegex(redis.ResponseError, "^invalid second DB index$"):
            self.r.swapdb(0, "y")
        with self.assertRaisesRegex(redis.ResponseError, "^DB index is out of range$"):
            self.r.swapdb(0, 16)
        with self.assertRaisesRegex(redis.ResponseError, "^source and destination objects are the same$"):
            self.r.move("k", 0)
        with self.assertRaisesRegex(redis.ResponseError, "^DB index is out of range$"):
            self.r.move("k", 99)

    def test_move_keeps_the_value_and_deadline(self):
        d1 = self.db(1)
        self.r.set("m", "v", ex=100)
        self.assertTrue(self.r.move("m", 1))
        self.assertIsNone(self.r.get("m"))
        self.assertEqual(d1.get("m"), "v")
        self.assertGreater(d1.ttl("m"), 90)
        self.r.set("m", "again")
        self.assertFalse(self.r.move("m", 1))  # the destination exists
        self.assertFalse(self.r.move("missing", 1))
        self.assertEqual(self.r.get("m"), "again")

    def test_copy_to_another_database(self):
        d3 = self.db(3)
        self.r.sadd("s", "a", "b")
        self.assertTrue(self.r.copy("s", "t", destination_db=3))
        self.assertEqual(d3.smembers("t"), {"a", "b"})
        self.assertFalse(self.r.copy("s", "t", destination_db=3))
        self.r.sadd("s", "c")
        self.assertTrue(self.r.copy("s", "t", destination_db=3, replace=True))
        self.assertEqual(d3.scard("t"), 3)
        self.assertTrue(self.r.copy("s", "s", destination_db=3, replace=True))
        with self.assertRaisesRegex(redis.ResponseError, "^source and destination objects are the same$"):
            self.r.copy("s", "s", destination_db=0)

    def test_swapdb_swaps_every_key_and_wakes_a_blocked_client(self):
        d1 = self.db(1)
        self.r.set("a", "zero")
        d1.set("a", "one")
        d1.rpush("queue", "job")
        self.assertTrue(self.r.swapdb(0, 1))
        self.assertEqual(self.r.get("a"), "one")
        self.assertEqual(d1.get("a"), "zero")
        self.assertEqual(self.r.lrange("queue", 0, -1), ["job"])
        self.assertEqual(d1.dbsize(), 1)
        # A client blocked in database 2 is served when a swap brings it a list.
        d2, d3 = self.db(2), self.db(3)
        got = []
        t = threading.Thread(target=lambda: got.append(d2.blpop("q", timeout=20)))
        t.start()
        wait_for(lambda: "cmd=blpop" in self.r.execute_command("CLIENT", "LIST"))
        d3.rpush("q", "x")
        self.r.swapdb(2, 3)
        t.join(25)
        self.assertEqual(got, [["q", "x"] if self.PROTOCOL == 3 else ("q", "x")])

    def test_flushdb_is_one_database_and_flushall_every_one(self):
        d1 = self.db(1)
        self.r.set("a", 1)
        d1.set("b", 1)
        d1.flushdb()
        self.assertEqual((self.r.dbsize(), d1.dbsize()), (1, 0))
        d1.set("b", 1)
        self.r.flushdb()
        self.assertEqual((self.r.dbsize(), d1.dbsize()), (0, 1))
        self.r.set("a", 1)
        self.r.flushall()
        self.assertEqual((self.r.dbsize(), d1.dbsize()), (0, 0))

    def test_client_info_reset_script_and_transaction(self):
        c = self.db(5)
        self.assertEqual(c.client_info()["db"], 5)
        c.set("x", "five")
        # A script's SELECT holds inside the script only.
        self.assertEqual(
            c.eval("redis.call('select', 6); redis.call('set', KEYS[1], 'six'); return redis.call('get', KEYS[1])", 1, "x"),
            "six",
        )
        self.assertEqual(c.client_info()["db"], 5)
        self.assertEqual(c.get("x"), "five")
        self.assertEqual(self.db(6).get("x"), "six")
        # SELECT inside MULTI applies from there on.
        p = c.pipeline()
        p.execute_command("SELECT", 7).set("y", "seven")
        p.execute()
        self.assertEqual(self.db(7).get("y"), "seven")
        self.assertEqual(c.client_info()["db"], 7)
        c.execute_command("RESET")
        self.assertEqual(c.client_info()["db"], 0)

    def test_watch_is_per_database(self):
        c = self.db(1)
        other = self.r
        with c.pipeline() as p:
            p.watch("w")
            other.set("w", "db0 is another key")
            p.multi()
            p.set("w", "mine")
            self.assertEqual(p.execute(), [True])
        with c.pipeline() as p:
            p.watch("w")
            self.db(1).set("w", "changed")
            p.multi()
            p.set("w", "late")
            with self.assertRaises(redis.WatchError):
                p.execute()

    def test_notifications_name_the_database(self):
        self.r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(decode_responses=True)
            ps = sub.pubsub()
            ps.psubscribe("__key*@*__:*")
            self.assertEqual(ps.get_message(timeout=5)["type"], "psubscribe")
            d4 = self.db(4)
            d4.set("n", 1)
            self.r.set("n", 1)
            d4.move("n", 9)
            seen = []
            wait_for(lambda: seen.append(ps.get_message(timeout=0.1)) or len([m for m in seen if m]) >= 8)
            got = [(m["channel"], m["data"]) for m in seen if m]
            self.assertEqual(
                got[:8],
                [
                    ("__keyspace@4__:n", "set"),
                    ("__keyevent@4__:set", "n"),
                    ("__keyspace@0__:n", "set"),
                    ("__keyevent@0__:set", "n"),
                    ("__keyspace@4__:n", "move_from"),
                    ("__keyevent@4__:move_from", "n"),
                    ("__keyspace@9__:n", "move_to"),
                    ("__keyevent@9__:move_to", "n"),
                ],
            )
            ps.close()
            sub.close()
        finally:
            self.r.config_set("notify-keyspace-events", "")


class Resp2(Databases, unittest.TestCase):
    PROTOCOL = 2


class Resp3(Databases, unittest.TestCase):
    PROTOCOL = 3


class Durable(unittest.TestCase):
    def fill(self, srv):
        for n in (0, 1, 15):
            c = srv.client(decode_responses=True, db=n)
            c.set("k", f"db{n}")
            c.hset("h", "f", n)
            c.set("t", "volatile", ex=1000)
            c.close()

    def check(self, srv):
        for n in (0, 1, 15):
            c = srv.client(decode_responses=True, db=n)
            self.assertEqual(c.get("k"), f"db{n}")
            self.assertEqual(c.hget("h", "f"), str(n))
            self.assertGreater(c.ttl("t"), 900)
            self.assertEqual(c.dbsize(), 3)
            c.close()
        c = srv.client(decode_responses=True, db=2)
        self.assertEqual(c.dbsize(), 0)
        c.close()

    def test_restart_keeps_each_keys_database(self):
        srv = Server()
        try:
            self.fill(srv)
            srv.terminate()
            srv.restart()
            self.check(srv)
        finally:
            srv.stop()

    def test_strict_mode_sigkill_keeps_databases_swaps_and_flushes(self):
        srv = Server("--durability=strict")
        try:
            self.fill(srv)
            c = srv.client(decode_responses=True, db=3)
            c.set("gone", 1)
            c.flushdb()
            c.set("x", "three")
            c.swapdb(3, 4)
            c.close()
            srv.kill()
            srv.restart()
            self.check(srv)
            self.assertEqual(srv.client(decode_responses=True, db=3).dbsize(), 0)
            self.assertEqual(srv.client(decode_responses=True, db=4).get("x"), "three")
        finally:
            srv.stop()

    def test_the_change_feed_names_a_database_other_than_0(self):
        srv = Server("--kv-events-topic=changes")
        try:
            consumer = NsqConsumer(srv.tcp, "changes", "sync")
            c0 = srv.client(decode_responses=True)
            c2 = srv.client(decode_responses=True, db=2)
            c0.set("a", 1)
            c2.set("a", 2)
            c2.flushdb()
            bodies = [json.loads(consumer.next()) for _ in range(3)]
            self.assertEqual([(b["op"], b.get("key"), b.get("db")) for b in bodies],
                             [("set", "a", None), ("set", "a", 2), ("flush", None, 2)])
            consumer.close()
            c0.close()
            c2.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
