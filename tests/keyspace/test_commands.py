"""Every command nsqrd's keyspace serves, through redis-py, in RESP2 and in RESP3."""

import threading
import time
import unittest

import redis

from harness import NO_RETRY, Server, read_until_closed, wait_for as wait_until


def about(seconds, ttl):
    """A TTL read right after it was set: at most a few seconds gone on a loaded machine."""
    return seconds - 10 <= ttl <= seconds


class Commands:
    """The checks, run once per protocol version by the subclasses below."""

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

    def test_connection(self):
        r = self.r
        self.assertTrue(r.ping())
        self.assertEqual(r.echo("hi there"), "hi there")
        hello = r.execute_command("HELLO", self.PROTOCOL)
        hello = hello if isinstance(hello, dict) else dict(zip(hello[::2], hello[1::2]))
        self.assertEqual(hello["proto"], self.PROTOCOL)
        self.assertTrue(r.execute_command("SELECT", 0))
        with self.assertRaisesRegex(redis.ResponseError, "DB index is out of range"):
            r.execute_command("SELECT", 16)
        self.assertTrue(r.client_setname("tester"))
        self.assertEqual(r.client_getname(), "tester")
        self.assertIsInstance(r.client_id(), int)
        self.assertEqual(r.client_info()["name"], "tester")
        self.assertTrue(r.execute_command("CLIENT", "SETINFO", "LIB-NAME", "suite"))
        with self.assertRaises(redis.ResponseError):
            r.client_setname("has space")
        with self.assertRaisesRegex(redis.ResponseError, "unknown command 'NOSUCH'"):
            r.execute_command("NOSUCH", "a")
        with self.assertRaisesRegex(redis.ResponseError, "wrong number of arguments for 'get'"):
            r.execute_command("GET")
        self.assertTrue(r.ping())

    def test_server(self):
        r = self.r
        r.mset({"a": 1, "b": 2})
        self.assertEqual(r.dbsize(), 2)
        self.assertEqual(r.config_get("save"), {"save": ""})
        self.assertEqual(r.config_get("appendonly"), {"appendonly": "no"})
        self.assertTrue(r.config_set("maxmemory-samples", 7))
        self.assertEqual(r.config_get("maxmemory-*")["maxmemory-samples"], "7")
        with self.assertRaises(redis.ResponseError):
            r.config_set("maxmemory-policy", "sometimes")
        with self.assertRaisesRegex(redis.ResponseError, "Unknown option"):
            r.config_set("no-such-option", 1)
        info = r.info()
        self.assertEqual(info["db0"]["keys"], 2)
        self.assertIn("used_memory", r.info("memory"))
        self.assertGreater(r.command_count(), 40)
        self.assertIn("get", r.command())
        secs, micros = r.time()
        self.assertLess(abs(secs - time.time()), 5)
        self.assertTrue(r.save())
        self.assertTrue(r.flushall())
        self.assertEqual(r.dbsize(), 0)

    def test_set_and_its_options(self):
        r = self.r
        self.assertTrue(r.set("k", "v"))
        self.assertEqual(r.get("k"), "v")
        self.assertIsNone(r.set("k", "w", nx=True))
        self.assertTrue(r.set("k", "w", xx=True))
        self.assertIsNone(r.set("missing", "w", xx=True))
        self.assertEqual(r.set("k", "x", get=True), "w")
        self.assertTrue(r.set("k", "v", ex=100))
        self.assertTrue(about(100, r.ttl("k")))
        self.assertTrue(r.set("k", "v2", keepttl=True))
        self.assertTrue(about(100, r.ttl("k")))
        self.assertTrue(r.set("k", "v", px=50000))
        self.assertTrue(40000 <= r.pttl("k") <= 50000)
        self.assertTrue(r.set("k", "v", exat=int(time.time()) + 60))
        self.assertTrue(about(60, r.ttl("k")))
        self.assertTrue(r.set("k", "v", pxat=int(time.time() * 1000) + 60000))
        self.assertTrue(r.set("k", "v"))
        self.assertEqual(r.ttl("k"), -1)
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("SET", "k", "v", "NX", "XX")
        with self.assertRaisesRegex(redis.ResponseError, "invalid expire time in 'set' command"):
            r.set("k", "v", ex=0)
        with self.assertRaisesRegex(redis.ResponseError, "not an integer or out of range"):
            r.execute_command("SET", "k", "v", "EX", "soon")

    def test_string_commands(self):
        r = self.r
        self.assertIsNone(r.getset("g", "1"))
        self.assertEqual(r.getset("g", "2"), "1")
        self.assertEqual(r.getdel("g"), "2")
        self.assertIsNone(r.getdel("g"))
        r.set("e", "v")
        self.assertEqual(r.getex("e", ex=100), "v")
        self.assertTrue(about(100, r.ttl("e")))
        self.assertEqual(r.getex("e", persist=True), "v")
        self.assertEqual(r.ttl("e"), -1)
        self.assertEqual(r.getex("e", px=1), "v")
        self.assertTrue(r.execute_command("SETEX", "s", 100, "v"))
        self.assertTrue(about(100, r.ttl("s")))
        self.assertTrue(r.psetex("p", 100000, "v"))
        self.assertTrue(90000 < r.pttl("p") <= 100000)
        self.assertTrue(r.setnx("n", "1"))
        self.assertFalse(r.setnx("n", "2"))
        self.assertTrue(r.mset({"a": "1", "b": "2"}))
        self.assertEqual(r.mget("a", "b", "nope"), ["1", "2", None])
        self.assertEqual(r.incr("c"), 1)
        self.assertEqual(r.incrby("c", 10), 11)
        self.assertEqual(r.decr("c"), 10)
        self.assertEqual(r.decrby("c", 20), -10)
        r.set("big", 2**63 - 1)
        with self.assertRaisesRegex(redis.ResponseError, "would overflow"):
            r.incr("big")
        r.set("word", "abc")
        with self.assertRaisesRegex(redis.ResponseError, "not an integer"):
            r.incr("word")
        self.assertEqual(r.append("word", "def"), 6)
        self.assertEqual(r.append("fresh", "xy"), 2)
        self.assertEqual(r.strlen("word"), 6)
        self.assertEqual(r.strlen("nope"), 0)

    def test_binary_values(self):
        r = self.srv.client(protocol=self.PROTOCOL)
        value = bytes(range(256)) * 4
        r.set(b"bin\x00key", value)
        self.assertEqual(r.get(b"bin\x00key"), value)
        r.close()

    def test_key_commands(self):
        r = self.r
        r.mset({"a": 1, "b": 2, "c": 3})
        self.assertEqual(r.exists("a", "a", "zz"), 2)
        self.assertEqual(r.delete("a", "zz"), 1)
        self.assertEqual(r.unlink("b"), 1)
        self.assertEqual(r.type("c"), "string")
        self.assertEqual(r.type("a"), "none")
        self.assertTrue(r.expire("c", 100))
        self.assertFalse(r.expire("c", 200, nx=True))
        self.assertTrue(r.expire("c", 200, xx=True))
        self.assertFalse(r.expire("c", 50, gt=True))
        self.assertTrue(r.expire("c", 50, lt=True))
        self.assertTrue(about(50, r.ttl("c")))
        self.assertTrue(r.pexpire("c", 70000))
        self.assertTrue(r.expireat("c", int(time.time()) + 80))
        self.assertTrue(r.pexpireat("c", int(time.time() * 1000) + 90000))
        self.assertTrue(about(90, r.ttl("c")))
        at = r.expiretime("c")
        self.assertTrue(abs(at - (time.time() + 90)) < 10)
        self.assertTrue(abs(r.pexpiretime("c") / 1000 - at) < 1.5)
        self.assertEqual(r.expiretime("zz"), -2)
        self.assertTrue(r.persist("c"))
        self.assertFalse(r.persist("c"))
        self.assertEqual(r.expiretime("c"), -1)
        self.assertFalse(r.expire("zz", 10))
        with self.assertRaisesRegex(redis.ResponseError, "NX and XX, GT or LT"):
            r.execute_command("EXPIRE", "c", 10, "NX", "GT")
        with self.assertRaisesRegex(redis.ResponseError, "invalid expire time in 'expire' command"):
            r.execute_command("EXPIRE", "c", 2**62)

    def test_scan_and_keys(self):
        r = self.r
        r.mset({f"user:{i}": i for i in range(300)})
        r.mset({f"cache:{i}": i for i in range(100)})
        self.assertEqual(len(set(r.scan_iter(match="user:*", count=25))), 300)
        self.assertEqual(len(set(r.scan_iter(_type="string"))), 400)
        self.assertEqual(list(r.scan_iter(_type="list")), [])
        self.assertEqual(sorted(r.keys("cache:9*")), sorted(["cache:9"] + [f"cache:9{i}" for i in range(10)]))
        cursor, keys = r.scan(0, count=10)
        self.assertIsInstance(cursor, int)
        with self.assertRaisesRegex(redis.ResponseError, "invalid cursor"):
            r.execute_command("SCAN", "nope")

    def test_member_scans_judge_the_cursor_then_the_key_then_the_options(self):
        # Redis's order: a bad cursor, then a missing key (an empty scan whatever the options),
        # then the key's type, then the options.
        r = self.r
        r.sadd("members", "a")
        r.set("plain", "x")
        for cmd in ("SSCAN", "HSCAN", "ZSCAN"):
            with self.assertRaisesRegex(redis.ResponseError, "invalid cursor"):
                r.execute_command(cmd, "absent", "x", "COUNT", 0)
            for bad in (("COUNT", 0), ("MATCH",), ("NOVALUES",)):
                cursor, found = r.execute_command(cmd, "absent", 0, *bad)
                self.assertEqual((cursor, len(found)), (0, 0))
            with self.assertRaisesRegex(redis.ResponseError, "WRONGTYPE"):
                r.execute_command(cmd, "plain", 0, "COUNT", "x")
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("SSCAN", "members", 0, "COUNT", 0)
        with self.assertRaisesRegex(redis.ResponseError, "not an integer"):
            r.execute_command("SSCAN", "members", 0, "COUNT", "x")

    def test_ranges_floats_renames_and_copies(self):
        r = self.r
        r.set("s", "Hello World")
        self.assertEqual(r.getrange("s", 0, 4), "Hello")
        self.assertEqual(r.getrange("s", -5, -1), "World")
        self.assertEqual(r.getrange("s", 5, 2), "")
        self.assertEqual(r.getrange("missing", 0, 1), "")
        self.assertEqual(r.substr("s", 0, 2), "Hel")
        self.assertEqual(r.setrange("s", 6, "Redis"), 11)
        self.assertEqual(r.get("s"), "Hello Redis")
        self.assertEqual(r.setrange("pad", 3, "x"), 4)
        self.assertEqual(r.get("pad"), "\x00\x00\x00x")
        with self.assertRaisesRegex(redis.ResponseError, "offset is out of range"):
            r.setrange("s", -1, "x")
        with self.assertRaisesRegex(redis.ResponseError, "proto-max-bulk-len"):
            r.setrange("s", 536870912, "x")
        self.assertEqual(r.incrbyfloat("f", 1.5), 1.5)
        self.assertEqual(r.incrbyfloat("f", 1e3), 1001.5)
        r.set("h", "10.50")
        self.assertEqual(r.incrbyfloat("h", 0.1), 10.6)
        self.assertEqual(r.get("h"), "10.6")
        with self.assertRaisesRegex(redis.ResponseError, "not a valid float"):
            r.incrbyfloat("s", 1)
        with self.assertRaisesRegex(redis.ResponseError, "NaN or Infinity"):
            r.incrbyfloat("f", float("inf"))
        self.assertTrue(r.msetnx({"a": 1, "b": 2}))
        self.assertFalse(r.msetnx({"a": 9, "c": 3}))
        self.assertIsNone(r.get("c"))
        r.expire("a", 100)
        self.assertTrue(r.rename("a", "z"))
        self.assertTrue(about(100, r.ttl("z")))
        with self.assertRaisesRegex(redis.ResponseError, "no such key"):
            r.rename("a", "y")
        self.assertFalse(r.renamenx("z", "b"))
        self.assertTrue(r.renamenx("z", "y"))
        self.assertTrue(r.copy("y", "c1"))
        self.assertFalse(r.copy("y", "c1"))
        self.assertTrue(r.copy("y", "c1", replace=True))
        with self.assertRaisesRegex(redis.ResponseError, "DB index is out of range"):
            r.copy("y", "c2", destination_db=16)
        with self.assertRaisesRegex(redis.ResponseError, "source and destination objects are the same"):
            r.copy("y", "y")
        self.assertEqual(r.touch("y", "c1", "missing"), 2)
        self.assertIn(r.randomkey(), r.keys("*"))
        self.assertEqual(r.getex("s", ex=10, px=None), "Hello Redis")
        self.assertEqual(r.execute_command("GETEX", "s", "EX", 10, "EX", 20), "Hello Redis")
        self.assertTrue(about(20, r.ttl("s")))
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("GETEX", "s", "EX", 10, "PERSIST")
        self.assertEqual(r.execute_command("SCAN", -1), (0, []))
        r.flushdb()
        self.assertIsNone(r.randomkey())

    def test_introspection_and_snapshots(self):
        r = self.r
        r.set("k", "foo")
        r.set("i", 123)
        r.set("long", "x" * 45)
        self.assertEqual(r.object("encoding", "k"), "embstr")
        self.assertEqual(r.object("encoding", "i"), "int")
        self.assertEqual(r.object("encoding", "long"), "raw")
        self.assertEqual(r.object("refcount", "k"), 1)
        self.assertIsInstance(r.object("idletime", "k"), int)
        self.assertIsNone(r.object("idletime", "missing"))
        with self.assertRaisesRegex(redis.ResponseError, "LFU maxmemory policy is not selected"):
            r.object("freq", "k")
        with self.assertRaisesRegex(redis.ResponseError, "Try OBJECT HELP"):
            r.execute_command("OBJECT", "NOSUCH", "k")
        self.assertGreater(r.memory_usage("k"), 3)
        self.assertIsNone(r.memory_usage("missing"))
        self.assertIsInstance(r.memory_stats(), dict)
        self.assertEqual(r.latency_latest(), [])
        self.assertEqual(r.latency_reset(), 0)
        self.assertEqual(r.role()[0], "master")
        self.assertEqual(r.command_getkeys("MSET", "a", "b", "c", "d"), ["a", "c"])
        with self.assertRaisesRegex(redis.ResponseError, "Invalid command specified"):
            r.command_getkeys("NOSUCH", "a")
        with self.assertRaisesRegex(redis.ResponseError, "no key arguments"):
            r.command_getkeys("PING", "x")
        before = r.lastsave()
        self.assertTrue(r.save())
        self.assertGreaterEqual(r.lastsave(), before)
        self.assertTrue(r.bgsave())
        for _ in range(200):
            try:
                r.bgsave()
                break
            except redis.ResponseError as e:
                self.assertIn("already in progress", str(e))
                time.sleep(0.05)
        # SAVE inside a transaction runs with it (no deadlock with the transaction's turn).
        p = r.pipeline()
        p.set("tx", 1).save().get("tx")
        self.assertEqual(p.execute(), [True, True, "1"])
        r.ping()
        self.assertGreater(int(r.info()["total_commands_processed"]), 1)
        self.assertEqual(r.info("cluster")["cluster_enabled"], 0)
        self.assertTrue(r.config_resetstat())
        self.assertLessEqual(int(r.info()["total_commands_processed"]), 2)

    def test_bitmaps(self):
        r = self.r
        r.set("mykey", "foobar")
        self.assertEqual(r.bitcount("mykey"), 26)
        self.assertEqual(r.bitcount("mykey", 1, 1), 6)
        self.assertEqual(r.bitcount("mykey", 5, 30, "BIT"), 17)
        self.assertEqual(r.bitcount("missing", 0, 1), 0)
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("BITCOUNT", "mykey", 0)
        self.assertEqual(r.setbit("b", 7, 1), 0)
        self.assertEqual(r.setbit("b", 7, 0), 1)
        self.assertEqual(r.setbit("b", 100, 1), 0)
        self.assertEqual((r.getbit("b", 100), r.getbit("b", 7), r.getbit("missing", 3)), (1, 0, 0))
        self.assertEqual(r.strlen("b"), 13)
        with self.assertRaisesRegex(redis.ResponseError, "bit offset is not an integer or out of range"):
            r.setbit("b", 4294967296, 1)
        with self.assertRaisesRegex(redis.ResponseError, "bit is not an integer or out of range"):
            r.execute_command("SETBIT", "b", 1, 2)
        r.set("bp", b"\xff\xf0\x00")
        self.assertEqual(r.bitpos("bp", 0), 12)
        self.assertEqual(r.bitpos("bp", 1, 7, 15, "BIT"), 7)
        self.assertEqual(r.bitpos("bp", 1, 2, -1), -1)
        self.assertEqual(r.bitpos("missing", 0), 0)
        r.set("ones", b"\xff\xff")
        self.assertEqual(r.bitpos("ones", 0), 16)
        self.assertEqual(r.bitpos("ones", 0, 0, -1), -1)
        with self.assertRaisesRegex(redis.ResponseError, "must be 1 or 0"):
            r.execute_command("BITPOS", "bp", 2)
        r.set("k1", "foobar")
        r.set("k2", "abcdef")
        self.assertEqual(r.bitop("AND", "dest", "k1", "k2"), 6)
        self.assertEqual(r.get("dest"), "`bc`ab")
        self.assertEqual(r.bitop("OR", "dest", "k1", "k2", "missing"), 6)
        self.assertEqual(r.get("dest"), "goofev")
        self.assertEqual(r.bitop("AND", "dest", "missing"), 0)
        self.assertFalse(r.exists("dest"))
        with self.assertRaisesRegex(redis.ResponseError, "single source key"):
            r.bitop("NOT", "dest", "k1", "k2")

    def test_dump_and_restore(self):
        r = self.srv.client(protocol=self.PROTOCOL)
        r.set("s", "hello")
        r.set("n", 12345)
        # The payloads redis-server 7.0 writes for the same values.
        self.assertEqual(r.dump("s"), b"\x00\x05hello\n\x00cr\xdfve4 \n")
        self.assertEqual(r.dump("n"), b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9")
        self.assertIsNone(r.dump("missing"))
        self.assertTrue(r.restore("copy", 0, r.dump("s")))
        self.assertEqual(r.get("copy"), b"hello")
        with self.assertRaisesRegex(redis.ResponseError, "BUSYKEY"):
            r.restore("copy", 0, r.dump("n"))
        self.assertTrue(r.restore("copy", 100000, r.dump("n"), replace=True))
        self.assertEqual(r.get("copy"), b"12345")
        self.assertTrue(about(100, r.ttl("copy")))
        self.assertTrue(r.restore("gone", 1, r.dump("s"), absttl=True))
        self.assertFalse(r.exists("gone"))
        with self.assertRaisesRegex(redis.ResponseError, "payload version or checksum are wrong"):
            r.restore("bad", 0, b"\x00\x05hellx\n\x00cr\xdfve4 \n")
        with self.assertRaisesRegex(redis.ResponseError, "Invalid TTL value"):
            r.restore("bad", -1, r.dump("s"))
        self.assertTrue(r.restore("idle", 0, r.dump("s"), idletime=1000))
        self.assertGreaterEqual(r.object("idletime", "idle"), 999)
        r.close()

    def test_every_client_listed_killed_and_paused(self):
        r = self.r
        other = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
        other.client_setname("other")
        other_id = other.client_id()
        listed = {c["id"]: c for c in r.client_list()}
        self.assertEqual(listed[str(other_id)]["name"], "other")
        self.assertIn(str(r.client_id()), listed)
        self.assertEqual([c["id"] for c in r.client_list(client_id=[other_id])], [str(other_id)])
        self.assertEqual(r.client_list(_type="pubsub"), [])
        # PAUSE WRITE: the other client's write waits for UNPAUSE; reads go on.
        self.assertTrue(r.client_pause(60000, all=False))
        done = threading.Event()

        def write():
            other.set("paused", 1)
            done.set()

        t = threading.Thread(target=write)
        t.start()
        self.assertIsNone(r.get("paused"))
        self.assertFalse(done.wait(0.3), "a write ran during CLIENT PAUSE WRITE")
        self.assertTrue(r.client_unpause())
        self.assertTrue(done.wait(20))
        t.join(20)
        self.assertEqual(r.get("paused"), "1")
        # KILL by id closes the other connection; SKIPME keeps the caller.
        self.assertEqual(r.client_kill_filter(_id=other_id), 1)
        self.assertTrue(wait_until(lambda: str(other_id) not in {c["id"] for c in r.client_list()}))
        self.assertTrue(r.ping())
        with self.assertRaisesRegex(redis.ResponseError, "No such client"):
            r.client_kill("1.2.3.4:5")
        other.close()

    def test_client_reply_off_and_skip(self):
        s = self.srv.raw()
        s.sendall(b"CLIENT REPLY OFF\r\nSET a 1\r\nGET a\r\nCLIENT REPLY ON\r\n"
                  b"CLIENT REPLY SKIP\r\nGET a\r\nGET a\r\nQUIT\r\n")
        out = read_until_closed(s)
        s.close()
        self.assertEqual(out, b"+OK\r\n$1\r\n1\r\n+OK\r\n")

    def test_pipelining(self):
        p = self.r.pipeline(transaction=False)
        for i in range(1000):
            p.set(f"p{i}", i)
        p.get("p999")
        out = p.execute()
        self.assertEqual(out[-1], "999")
        self.assertEqual(self.r.dbsize(), 1000)


class Resp2(Commands, unittest.TestCase):
    PROTOCOL = 2


class Resp3(Commands, unittest.TestCase):
    PROTOCOL = 3


class Auth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--kv-password=open-sesame")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_password(self):
        for proto in (2, 3):
            if proto == 2:
                bare = self.srv.client(protocol=2, retry=NO_RETRY)
                with self.assertRaises(redis.AuthenticationError):
                    bare.get("k")
            wrong = self.srv.client(protocol=proto, password="nope", retry=NO_RETRY)
            with self.assertRaises(redis.AuthenticationError):
                wrong.ping()
            good = self.srv.client(protocol=proto, password="open-sesame")
            self.assertTrue(good.set("k", "v"))
            self.assertEqual(good.get("k"), b"v")
            named = self.srv.client(protocol=proto, username="default", password="open-sesame")
            self.assertTrue(named.ping())


if __name__ == "__main__":
    unittest.main()
