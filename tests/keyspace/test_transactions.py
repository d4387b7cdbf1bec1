"""Transactions through redis-py (RESP2 and RESP3) and raw sockets: MULTI / EXEC / DISCARD /
WATCH / UNWATCH with Redis 7.0's replies, queued commands that never run unless EXEC does,
isolation from other clients' commands, WATCH broken by writes, expiry and flushes, and a
transaction that survives kill -9 whole in strict mode."""

import threading
import time
import unittest

import redis

from harness import Server, SharedServer, read_until_closed


def exchange(srv, *lines):
    """Sends each line as an inline command on one connection; returns every reply byte."""
    s = srv.raw()
    s.sendall(b"".join(line.encode() + b"\r\n" for line in lines) + b"QUIT\r\n")
    out = read_until_closed(s)
    s.close()
    return out


class Transactions(SharedServer):
    # Several serving threads, so clients really run at once.
    FLAGS = ("--kv-threads=4",)

    def test_a_pipeline_runs_whole_and_answers_each_command(self):
        p = self.r.pipeline()
        p.set("a", 1).incr("a").incr("a")
        self.assertEqual(p.execute(), [True, 2, 3])
        self.assertEqual(self.r.get("a"), "3")
        # An empty transaction answers an empty array.
        self.assertEqual(self.r.pipeline().execute(), [])

    def test_queued_commands_never_run_without_exec(self):
        other = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
        s = self.srv.raw()
        s.sendall(b"MULTI\r\nSET q 1\r\nINCR n\r\n")
        buf = b""
        while buf.count(b"\r\n") < 3:
            buf += s.recv(1024)
        self.assertEqual(buf, b"+OK\r\n+QUEUED\r\n+QUEUED\r\n")
        self.assertIsNone(other.get("q"), "a queued command ran before EXEC")
        s.sendall(b"DISCARD\r\nGET q\r\n")
        buf = b""
        while buf.count(b"\r\n") < 2:
            buf += s.recv(1024)
        self.assertEqual(buf, b"+OK\r\n$-1\r\n")
        # A client that leaves inside MULTI: nothing it queued runs.
        s.sendall(b"MULTI\r\nSET q 2\r\n")
        s.recv(1024)
        s.close()
        time.sleep(0.2)
        self.assertIsNone(other.get("q"))
        self.assertIsNone(other.get("n"))
        other.close()

    def test_a_refused_command_aborts_the_whole_transaction(self):
        # Unknown command and wrong arity while queueing: EXECABORT, nothing runs.
        out = exchange(self.srv, "MULTI", "SET x 1", "NOSUCH a", "EXEC", "GET x")
        self.assertEqual(
            out,
            b"+OK\r\n+QUEUED\r\n"
            b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"
            b"-EXECABORT Transaction discarded because of previous errors.\r\n"
            b"$-1\r\n+OK\r\n",
        )
        out = exchange(self.srv, "MULTI", "SET x 1", "SET x", "EXEC", "GET x")
        self.assertEqual(
            out,
            b"+OK\r\n+QUEUED\r\n"
            b"-ERR wrong number of arguments for 'set' command\r\n"
            b"-EXECABORT Transaction discarded because of previous errors.\r\n"
            b"$-1\r\n+OK\r\n",
        )
        # redis-py raises the queueing error and applies nothing.
        p = self.r.pipeline()
        p.set("y", 1)
        p.execute_command("ZZZ")
        with self.assertRaises(redis.ResponseError):
            p.execute()
        self.assertIsNone(self.r.get("y"))

    def test_errors_and_replies_as_redis(self):
        out = exchange(
            self.srv,
            "EXEC",
            "DISCARD",
            "MULTI",
            "MULTI",
            "WATCH k",
            "SET k v",
            "INCR k",
            "GET k",
            "EXEC",
        )
        self.assertEqual(
            out,
            b"-ERR EXEC without MULTI\r\n"
            b"-ERR DISCARD without MULTI\r\n"
            b"+OK\r\n"
            b"-ERR MULTI calls can not be nested\r\n"
            b"-ERR WATCH inside MULTI is not allowed\r\n"
            b"+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
            b"*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n$1\r\nv\r\n"
            b"+OK\r\n",
        )
        # A command that fails when run does not stop the others (redis-py reports it).
        p = self.r.pipeline()
        p.set("s", "x").incr("s").set("t", 1)
        with self.assertRaises(redis.ResponseError):
            p.execute()
        self.assertEqual(self.r.get("t"), "1")
        p = self.r.pipeline()
        p.set("s", "x").incr("s").set("t", 2)
        res = p.execute(raise_on_error=False)
        self.assertIsInstance(res[1], redis.ResponseError)
        self.assertEqual(res[2], True)
        self.assertEqual(self.r.get("t"), "2")

    def test_client_info_shows_the_open_transaction(self):
        out = exchange(self.srv, "MULTI", "SET a 1", "CLIENT INFO", "EXEC")
        self.assertIn(b"flags=x", out)
        self.assertIn(b"multi=2 ", out)
        out = exchange(self.srv, "CLIENT INFO")
        self.assertIn(b"multi=-1 ", out)

    def test_watch_untouched_runs(self):
        self.r.set("w", 1)
        with self.r.pipeline() as p:
            p.watch("w")
            self.assertEqual(p.get("w"), "1")
            p.multi()
            p.set("w", 2)
            self.assertEqual(p.execute(), [True])
        self.assertEqual(self.r.get("w"), "2")

    def test_watch_broken_by_another_client_runs_nothing(self):
        self.r.set("w", 1)
        other = self.srv.client(protocol=self.PROTOCOL)
        with self.r.pipeline() as p:
            p.watch("w", "missing")
            other.set("w", 5)
            p.multi()
            p.set("w", 2)
            p.set("side", 1)
            with self.assertRaises(redis.WatchError):
                p.execute()
        self.assertEqual(self.r.get("w"), "5")
        self.assertIsNone(self.r.get("side"))
        other.close()

    def test_watch_broken_by_the_client_itself_and_by_a_delete(self):
        self.r.set("w", 1)
        with self.r.pipeline() as p:
            p.watch("w")
            p.delete("w")
            p.multi()
            p.set("w", 2)
            with self.assertRaises(redis.WatchError):
                p.execute()
        self.assertIsNone(self.r.get("w"))

    def test_watch_broken_by_expiry(self):
        self.r.set("w", 1, px=200)
        with self.r.pipeline() as p:
            p.watch("w")
            time.sleep(0.5)
            p.multi()
            p.set("side", 1)
            with self.assertRaises(redis.WatchError):
                p.execute()
        self.assertIsNone(self.r.get("side"))

    def test_flush_breaks_a_watch_on_an_existing_key_only(self):
        other = self.srv.client(protocol=self.PROTOCOL)
        with self.r.pipeline() as p:
            p.watch("nothing-here")
            other.flushdb()
            p.multi()
            p.set("side", 1)
            self.assertEqual(p.execute(), [True])
        self.r.set("w", 1)
        with self.r.pipeline() as p:
            p.watch("w")
            other.flushall()
            p.multi()
            p.set("side", 2)
            with self.assertRaises(redis.WatchError):
                p.execute()
        self.assertIsNone(self.r.get("side"))
        other.close()

    def test_unwatch_and_discard_forget_the_watch(self):
        self.r.set("w", 1)
        other = self.srv.client(protocol=self.PROTOCOL)
        out = exchange(self.srv, "WATCH w", "UNWATCH", "MULTI", "SET w 3", "EXEC")
        self.assertEqual(out, b"+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n+OK\r\n")
        s = self.srv.raw()
        s.sendall(b"WATCH w\r\nMULTI\r\nDISCARD\r\n")
        buf = b""
        while buf.count(b"\r\n") < 3:
            buf += s.recv(1024)
        other.set("w", 9)
        s.sendall(b"MULTI\r\nGET w\r\nEXEC\r\nQUIT\r\n")
        out = read_until_closed(s)
        self.assertEqual(out, b"+OK\r\n+QUEUED\r\n*1\r\n$1\r\n9\r\n+OK\r\n")
        s.close()
        other.close()

    def test_watch_abort_is_a_null_array(self):
        hello = b"HELLO 3" if self.PROTOCOL == 3 else b"PING"
        s = self.srv.raw()
        other = self.srv.client(protocol=2)
        s.sendall(hello + b"\r\nWATCH k\r\n")
        time.sleep(0.1)
        other.set("k", 1)
        s.sendall(b"MULTI\r\nGET k\r\nEXEC\r\nQUIT\r\n")
        out = read_until_closed(s)
        null = b"_\r\n" if self.PROTOCOL == 3 else b"*-1\r\n"
        self.assertTrue(out.endswith(b"+OK\r\n+OK\r\n+QUEUED\r\n" + null + b"+OK\r\n"), out)
        s.close()
        other.close()

    def test_no_other_command_runs_between_a_transactions_commands(self):
        # Each transaction moves x and y together, with many commands in between; readers
        # on other connections (and threads of the server) must never see them apart.
        rounds = 200
        errors = []
        done = threading.Event()

        def writer():
            c = self.srv.client(protocol=self.PROTOCOL)
            for _ in range(rounds):
                p = c.pipeline()
                p.incr("x")
                for _ in range(200):
                    p.get("x")
                p.incr("y")
                p.execute()
            c.close()

        def reader(transactional):
            c = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
            deadline = time.time() + 120
            while not done.is_set() and time.time() < deadline:
                if transactional:
                    p = c.pipeline()
                    p.get("x").get("y")
                    x, y = p.execute()
                else:
                    x, y = c.mget("x", "y")
                if x != y:
                    errors.append((x, y))
            c.close()

        writers = [threading.Thread(target=writer) for _ in range(2)]
        readers = [threading.Thread(target=reader, args=(t,)) for t in (False, True)]
        for t in writers + readers:
            t.start()
        for t in writers:
            t.join(timeout=120)
        done.set()
        for t in writers + readers:
            t.join(timeout=120)
            self.assertFalse(t.is_alive())
        self.assertEqual(errors, [])
        self.assertEqual((self.r.get("x"), self.r.get("y")), (str(2 * rounds), str(2 * rounds)))


    def test_pipelined_transactions_and_scripts_stay_whole(self):
        # One connection pipelines transactions and scripts back to back (a batch keeps the
        # exclusive turn from one to the next); readers on other connections never see px and
        # py apart, and every transaction and script runs once.
        n = 400
        script = "redis.call('incr', KEYS[1]) return redis.call('incr', KEYS[2])"
        self.r.delete("px", "py")
        errors = []
        done = threading.Event()

        def reader():
            c = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
            deadline = time.time() + 120
            while not done.is_set() and time.time() < deadline:
                x, y = c.mget("px", "py")
                if x != y:
                    errors.append((x, y))
            c.close()

        readers = [threading.Thread(target=reader) for _ in range(2)]
        for t in readers:
            t.start()
        requests = []
        for i in range(n):
            if i % 2:
                requests.append(["EVAL", script, "2", "px", "py"])
            else:
                requests += [["MULTI"], ["INCR", "px"], ["INCR", "py"], ["EXEC"]]
        requests.append(["QUIT"])
        s = self.srv.raw()
        s.sendall(b"".join(encode(r) for r in requests))
        out = read_until_closed(s)
        s.close()
        done.set()
        for t in readers:
            t.join(timeout=120)
            self.assertFalse(t.is_alive())
        self.assertEqual(errors, [])
        self.assertEqual(out.count(b"+QUEUED\r\n"), n)
        self.assertNotIn(b"\r\n-", b"\r\n" + out)
        self.assertEqual((self.r.get("px"), self.r.get("py")), (str(n), str(n)))


def encode(words):
    """A request as a RESP array of bulk strings."""
    out = b"*%d\r\n" % len(words)
    for w in words:
        w = w.encode()
        out += b"$%d\r\n%s\r\n" % (len(w), w)
    return out


class Resp2(Transactions, unittest.TestCase):
    PROTOCOL = 2


class Resp3(Transactions, unittest.TestCase):
    PROTOCOL = 3


class Strict(unittest.TestCase):
    def test_an_acknowledged_transaction_survives_sigkill_whole(self):
        srv = Server("--durability=strict")
        try:
            r = srv.client(decode_responses=True)
            for i in range(50):
                p = r.pipeline()
                p.set(f"a{i}", i).set(f"b{i}", i).delete(f"a{i - 1}")
                self.assertEqual(p.execute(), [True, True, 1 if i else 0])
            r.close()
            srv.kill()
            srv.restart()
            r = srv.client(decode_responses=True)
            self.assertEqual(r.get("a49"), "49")
            self.assertEqual(r.get("b49"), "49")
            self.assertEqual(r.get("b0"), "0")
            self.assertIsNone(r.get("a48"))
            self.assertEqual(r.dbsize(), 51)
            r.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
