"""MIGRATE between two nsqrd (and from nsqrd to redis-server when one is installed): keys of
each type with their TTLs, KEYS / COPY / REPLACE / the target database, Redis's replies for a
refused key, no key, bad options, and a target that is gone or never answers (IOERR within
the timeout); COMMAND GETKEYS MIGRATE as Redis finds the keys."""

import random
import shutil
import socket
import subprocess
import tempfile
import threading
import unittest

import redis

from harness import Server, wait_for


class Migrate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src_srv, cls.dst_srv = Server(), Server()
        cls.src = cls.src_srv.client()
        cls.dst = cls.dst_srv.client()

    @classmethod
    def tearDownClass(cls):
        for c in (cls.src, cls.dst):
            c.close()
        for s in (cls.src_srv, cls.dst_srv):
            s.stop()

    def setUp(self):
        self.src.flushall()
        self.dst.flushall()

    def migrate(self, *args, port=None, client=None):
        port = port or self.dst_srv.port
        return (client or self.src).execute_command("MIGRATE", "127.0.0.1", port, *args)

    def test_moves_each_type_with_its_ttl(self):
        s, d = self.src, self.dst
        s.set("str", "v", px=100_000)
        s.rpush("list", "a", "b")
        s.hset("hash", mapping={"f": "1"})
        s.sadd("set", "m")
        s.zadd("zset", {"z": 1.5})
        self.assertEqual(self.migrate("str", 0, 1000), b"OK")
        self.assertEqual(s.exists("str"), 0)
        self.assertEqual(d.get("str"), b"v")
        self.assertTrue(90_000 < d.pttl("str") <= 100_000)
        self.assertEqual(self.migrate("", 0, 1000, "KEYS", "list", "hash", "set", "zset", "nokey"), b"OK")
        self.assertEqual(s.exists("list", "hash", "set", "zset"), 0)
        self.assertEqual(d.lrange("list", 0, -1), [b"a", b"b"])
        self.assertEqual(d.hgetall("hash"), {b"f": b"1"})
        self.assertEqual(d.smembers("set"), {b"m"})
        self.assertEqual(d.zrange("zset", 0, -1, withscores=True), [(b"z", 1.5)])
        self.assertEqual(d.ttl("list"), -1)

    def test_copy_replace_database_and_refusals(self):
        s, d = self.src, self.dst
        s.set("k", "new")
        d.set("k", "old")
        with self.assertRaises(redis.ResponseError) as e:
            self.migrate("k", 0, 1000)
        self.assertEqual(str(e.exception), "Target instance replied with error: BUSYKEY Target key name already exists.")
        self.assertEqual(s.get("k"), b"new")
        self.assertEqual(self.migrate("k", 0, 1000, "COPY", "REPLACE"), b"OK")
        self.assertEqual((s.get("k"), d.get("k")), (b"new", b"new"))
        self.assertEqual(self.migrate("k", 3, 1000), b"OK")
        self.assertEqual(s.exists("k"), 0)
        self.assertEqual(self.dst_srv.client(db=3).get("k"), b"new")
        self.assertEqual(self.migrate("missing", 0, 1000), b"NOKEY")
        s.set("k", "v")
        for args, error in [
            (("k", 0, 1000, "KEYS", "k"), "When using MIGRATE KEYS option, the key argument must be set to the empty string"),
            (("k", 0, 1000, "FOO"), "syntax error"),
            (("k", 0, 1000, "AUTH"), "syntax error"),
            (("k", "x", 1000), "value is not an integer or out of range"),
            (("k", 99, 1000), "Target instance replied with error: ERR DB index is out of range"),
            (("k", 0, 1000, "AUTH", "pw"), "Target instance replied with error: ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"),
        ]:
            with self.assertRaises(redis.ResponseError, msg=args) as e:
                self.migrate(*args)
            self.assertEqual(str(e.exception), error)
        self.assertEqual(s.get("k"), b"v")

    def test_dead_or_silent_target_is_an_ioerr(self):
        self.src.set("k", "v")
        with socket.socket() as gone:
            gone.bind(("127.0.0.1", 0))
            port = gone.getsockname()[1]
        with self.assertRaises(redis.ResponseError) as e:
            self.migrate("k", 0, 200, port=port)
        self.assertEqual(str(e.exception), "IOERR error or timeout writing to target instance")
        # A target that accepts and never answers: the reply waits at most the timeout.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        accepted = []
        threading.Thread(target=lambda: accepted.append(silent.accept()), daemon=True).start()
        try:
            with self.assertRaises(redis.ResponseError) as e:
                self.migrate("k", 0, 300, port=silent.getsockname()[1])
            self.assertEqual(str(e.exception), "IOERR error or timeout reading to target instance")
        finally:
            wait_for(lambda: accepted)
            accepted[0][0].close()
            silent.close()
        self.assertEqual(self.src.get("k"), b"v")
        self.assertTrue(self.src.ping())

    def test_command_getkeys(self):
        r = self.src
        self.assertEqual(r.command_getkeys("MIGRATE", "h", 1, "key", 0, 5), ["key"])
        self.assertEqual(
            r.command_getkeys("MIGRATE", "h", 1, "", 0, 5, "AUTH", "KEYS", "COPY", "KEYS", "a", "b"),
            ["a", "b"],
        )


def free_port():
    """A port nothing listens on, below the kernel's ephemeral range (32768-60999 by default)
    so that no socket bound to port 0 elsewhere can take it before redis-server binds it."""
    for _ in range(1000):
        port = random.randrange(20000, 32768)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port in 20000-32767 after 1000 tries")


@unittest.skipUnless(shutil.which("redis-server"), "redis-server is not installed")
class MigrateToRedis(unittest.TestCase):
    def test_strings_and_hashes_reach_redis_server(self):
        port = free_port()
        data = tempfile.mkdtemp(prefix="nsqr-migrate-redis-")
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", data],
            stdout=subprocess.DEVNULL,
        )
        srv = Server()
        try:
            target = redis.Redis(port=port)
            wait_for(lambda: ping(target))
            src = srv.client()
            src.set("s", "v", ex=100)
            src.hset("h", mapping={"f": "1"})
            self.assertEqual(src.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 1000, "KEYS", "s", "h"), b"OK")
            self.assertEqual(target.get("s"), b"v")
            self.assertTrue(90 < target.ttl("s") <= 100)
            self.assertEqual(target.hgetall("h"), {b"f": b"1"})
            self.assertEqual(src.exists("s", "h"), 0)
            target.close()
        finally:
            srv.stop()
            proc.terminate()
            proc.wait(timeout=20)
            shutil.rmtree(data, ignore_errors=True)


def ping(client):
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


if __name__ == "__main__":
    unittest.main()
