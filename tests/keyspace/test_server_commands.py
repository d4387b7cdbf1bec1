"""Server, string and key commands through redis-py (RESP2 and RESP3): SORT (BY, GET, LIMIT,
ALPHA, STORE), BITFIELD, LCS, SLOWLOG with its CONFIG parameters, CONFIG SET of several
parameters (all or none), MONITOR, CLIENT TRACKING's invalidations; SORT ... STORE's list and
BITFIELD's writes kept across a graceful restart and strict mode's SIGKILL."""

import unittest

import redis

from harness import AcrossRestarts, SharedServer, wait_for


class ServerCommands(SharedServer):
    def test_sort_by_patterns_get_limit_and_store(self):
        r = self.r
        r.rpush("l", 3, 1, 2)
        r.mset({"w_1": 30, "w_2": 20, "w_3": 10})
        r.hset("h_1", "name", "one")
        r.hset("h_3", "name", "three")
        self.assertEqual(r.sort("l"), ["1", "2", "3"])
        self.assertEqual(r.sort("l", desc=True, start=0, num=2), ["3", "2"])
        self.assertEqual(r.sort("l", by="w_*"), ["3", "2", "1"])
        self.assertEqual(r.sort("l", by="nosort"), ["3", "1", "2"])
        self.assertEqual(r.sort("l", by="w_*", get=["#", "h_*->name"]),
                         ["3", "three", "2", None, "1", "one"])
        self.assertEqual(r.sort("l", store="dst"), 3)
        self.assertEqual(r.lrange("dst", 0, -1), ["1", "2", "3"])
        self.assertEqual(r.sort("missing", store="dst"), 0)
        self.assertEqual(r.exists("dst"), 0)
        r.sadd("s", "b", "a", "c")
        self.assertEqual(r.sort("s", alpha=True), ["a", "b", "c"])
        self.assertEqual(r.sort_ro("s", alpha=True, desc=True), ["c", "b", "a"])
        r.rpush("words", "x", "1")
        with self.assertRaisesRegex(redis.ResponseError, "can't be converted into double"):
            r.sort("words")
        r.set("str", "v")
        with self.assertRaisesRegex(redis.ResponseError, "WRONGTYPE"):
            r.sort("str")
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("SORT_RO", "l", "STORE", "x")

    def test_bitfield_ops_overflow_and_ro(self):
        r = self.r
        bf = r.bitfield("b")
        self.assertEqual(bf.set("u8", 8, 255).get("u8", 0).get("u4", 8).execute(), [0, 0, 15])
        self.assertEqual(r.bitfield("b").overflow("SAT").incrby("u8", 8, 10).execute(), [255])
        self.assertEqual(r.bitfield("b").overflow("FAIL").incrby("u8", 8, 1).execute(), [None])
        self.assertEqual(r.bitfield("b").overflow("WRAP").incrby("i8", "#1", 1).execute(), [0])
        self.assertEqual(r.bitfield_ro("b", "u8", 8), [0])
        with self.assertRaisesRegex(redis.ResponseError, "Invalid bitfield type"):
            r.execute_command("BITFIELD", "b", "GET", "u64", 0)
        with self.assertRaisesRegex(redis.ResponseError, "bit offset is not an integer"):
            r.execute_command("BITFIELD", "b", "GET", "u8", -1)
        with self.assertRaisesRegex(redis.ResponseError, "only supports the GET subcommand"):
            r.execute_command("BITFIELD_RO", "b", "SET", "u8", 0, 1)

    def test_lcs(self):
        r = self.r
        r.mset({"a": "ohmytext", "b": "mynewtext"})
        self.assertEqual(r.lcs("a", "b"), "mytext")
        self.assertEqual(r.lcs("a", "b", len=True), 6)
        idx = r.lcs("a", "b", idx=True, minmatchlen=3, withmatchlen=True)
        matches = idx["matches"] if isinstance(idx, dict) else idx[1]
        self.assertEqual(matches, [[[4, 7], [5, 8], 4]])
        r.rpush("l", "x")
        with self.assertRaisesRegex(redis.ResponseError, "must contain string values"):
            r.lcs("a", "l")

    def test_slowlog_records_commands_with_their_arguments(self):
        r = self.r
        old = r.config_get("slowlog-*")
        try:
            r.config_set("slowlog-log-slower-than", 0, "slowlog-max-len", 3)
            r.slowlog_reset()
            r.set("k", "x" * 200)
            r.client_setname("me")
            r.get("k")
            log = r.slowlog_get()
            self.assertEqual(len(log), 3)
            text = lambda v: v.decode() if isinstance(v, bytes) else v
            self.assertEqual(text(log[0]["command"]), "GET k")
            self.assertEqual(text(log[0]["client_name"]), "me")
            self.assertEqual(len(text(log[2]["command"])), len("SET k ") + 128 + len("... (72 more bytes)"))
            self.assertEqual(r.slowlog_len(), 3)
            r.config_set("slowlog-log-slower-than", -1)
            r.slowlog_reset()
            r.get("k")
            self.assertEqual(r.slowlog_len(), 0)
        finally:
            r.config_set(*[x for kv in old.items() for x in kv])

    def test_config_set_is_all_or_nothing(self):
        r = self.r
        with self.assertRaisesRegex(redis.ResponseError, "argument must be a memory value"):
            r.config_set("timeout", 5, "maxmemory", "abc")
        self.assertEqual(r.config_get("timeout")["timeout"], "0")
        with self.assertRaisesRegex(redis.ResponseError, "duplicate parameter"):
            r.config_set("timeout", 1, "timeout", 2)
        self.assertTrue(r.config_set("timeout", 70, "maxmemory", 100))
        self.assertEqual(r.config_get("timeout", "maxmemory"),
                         {"timeout": "70", "maxmemory": "100"})
        self.assertTrue(r.config_set("timeout", 0, "maxmemory", 0))
        self.assertIn("hash-max-listpack-entries", r.config_get("*max-*-entries*"))

    def test_monitor_sees_other_clients_commands(self):
        with self.r.monitor() as m:
            self.r.set("seen", "a b")
            # The monitor's own connection setup (HELLO, CLIENT SETINFO) may come first.
            for _ in range(10):
                line = m.next_command()
                if line["command"].startswith("SET"):
                    break
            self.assertEqual(line["command"], "SET seen a b")
            self.assertEqual(line["client_type"], "tcp")

    def test_command_list_filters(self):
        r = self.r
        self.assertIn("lpop", r.command_list(pattern="l*"))
        self.assertIn("config|get", r.command_list())
        self.assertEqual(r.command_list(module="any"), [])
        self.assertNotIn("get", r.command_list(category="list"))
        self.assertIn("sort", r.command_list(category="list"))


class ServerCommandsResp3(ServerCommands, unittest.TestCase):
    PROTOCOL = 3

    def test_tracking_invalidates_keys_read_once(self):
        srv, r = self.srv, self.r
        c = srv.client(protocol=3)
        conn = c.connection_pool.get_connection()
        pushes = []
        conn._parser.set_invalidation_push_handler(lambda m: pushes.append(m))
        conn.send_command("CLIENT", "TRACKING", "ON")
        self.assertEqual(conn.read_response(), b"OK")
        conn.send_command("GET", "t")
        conn.read_response()
        r.set("t", "1")
        r.set("t", "2")
        conn.send_command("PING")
        self.assertEqual(conn.read_response(), b"PONG")
        wait_for(lambda: conn.can_read() is False or pushes)
        self.assertEqual(pushes, [[b"invalidate", [b"t"]]])
        c.connection_pool.release(conn)
        c.close()


class ServerCommandsResp2(ServerCommands, unittest.TestCase):
    pass


class Durability(AcrossRestarts, unittest.TestCase):
    DECODE = False

    def fill(self, r):
        r.rpush("src", 3, 1, 2)
        r.sort("src", store="sorted")
        r.bitfield("bits").set("u8", 0, 200).incrby("i16", 8, -5).execute()
        return (r.lrange("sorted", 0, -1), r.get("bits"))

    def check(self, r, before):
        self.assertEqual((r.lrange("sorted", 0, -1), r.get("bits")), before)
        self.assertEqual(r.bitfield_ro("bits", "i16", 8), [-5])


if __name__ == "__main__":
    unittest.main()
