"""Lua scripts through redis-py (RESP2 and RESP3) and raw sockets: EVAL / EVALSHA / EVAL_RO /
SCRIPT with Redis 7.0's replies and errors, redis-py's Lock (which releases with EVALSHA),
atomicity against other clients, a runaway script answered BUSY and stopped by SCRIPT KILL,
a script that wrote is UNKILLABLE, scripts inside MULTI, and a script's writes surviving
kill -9 whole in strict mode."""

import threading
import time
import unittest

import redis

from harness import Server, SharedServer, wait_for


class Scripts(SharedServer):
    FLAGS = ("--kv-threads=2",)

    def setUp(self):
        super().setUp()
        self.r.script_flush()

    def test_eval_converts_replies_both_ways(self):
        r = self.r
        r.set("s", "abc")
        self.assertEqual(r.eval("return redis.call('get', KEYS[1])", 1, "s"), "abc")
        self.assertEqual(r.eval("return {1, 'two', {3}, false, nil, 9}", 0), [1, "two", [3], None])
        self.assertEqual(r.eval("return 3.99", 0), 3)
        self.assertEqual(r.eval("return redis.call('ping')", 0), "PONG")
        self.assertEqual(r.eval("return KEYS[2] .. ARGV[1] .. #ARGV", 2, "a", "b", "c", "d"), "bc2")
        self.assertEqual(r.eval("return redis.call('get', 'missing') == false", 0), 1)
        self.assertEqual(r.eval("return cjson.encode({1, 2, {a = 1}})", 0), '[1,2,{"a":1}]')
        self.assertEqual(r.eval("return bit.band(7, 3)", 0), 3)
        # Numbers reach commands as Redis writes them (%.17g).
        r.eval("redis.call('set', 'n', 1/3)", 0)
        self.assertEqual(r.get("n"), "0.33333333333333331")

    def test_errors_name_the_script_and_line(self):
        r = self.r
        r.set("s", "abc")
        sha = r.script_load("local x = 1\nreturn redis.call('incr', 's')")
        with self.assertRaises(redis.ResponseError) as e:
            r.evalsha(sha, 0)
        self.assertEqual(
            str(e.exception),
            f"value is not an integer or out of range script: {sha}, on @user_script:2.",
        )
        with self.assertRaises(redis.ResponseError) as e:
            r.eval("x = 5", 0)
        self.assertIn("Attempt to modify a readonly table", str(e.exception))
        with self.assertRaises(redis.ResponseError) as e:
            r.eval("return redis.call('multi')", 0)
        self.assertIn("This Redis command is not allowed from script", str(e.exception))
        with self.assertRaises(redis.ResponseError) as e:
            r.eval("return (", 0)
        self.assertIn("Error compiling script", str(e.exception))
        # redis.pcall hands the error to the script.
        self.assertEqual(
            r.eval("local e = redis.pcall('incr', 's') return e['err']", 0),
            "ERR value is not an integer or out of range",
        )

    def test_script_cache(self):
        r = self.r
        sha = r.script_load("return 'cached'")
        self.assertEqual(r.script_exists(sha, "f" * 40), [True, False])
        self.assertEqual(r.evalsha(sha, 0), "cached")
        self.assertEqual(r.evalsha(sha.upper(), 0), "cached")
        r.script_flush()
        with self.assertRaises(redis.exceptions.NoScriptError):
            r.evalsha(sha, 0)
        # register_script: EVALSHA, then EVAL once the script is unknown.
        script = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
        self.assertEqual(script(keys=["c"], args=[5]), 5)
        self.assertEqual(script(keys=["c"], args=[5]), 10)

    def test_read_only_scripts_cannot_write(self):
        r = self.r
        with self.assertRaises(redis.ResponseError) as e:
            r.eval_ro("return redis.call('set', 'a', 1)", 0)
        self.assertIn("Write commands are not allowed from read-only scripts", str(e.exception))
        with self.assertRaises(redis.ResponseError):
            r.eval("#!lua flags=no-writes\nreturn redis.call('set', 'a', 1)", 0)
        self.assertIsNone(r.get("a"))
        r.set("a", "1")
        self.assertEqual(r.eval_ro("return redis.call('get', KEYS[1])", 1, "a"), "1")

    def test_lock_acquires_and_releases(self):
        lock = self.r.lock("resource", timeout=30)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertFalse(self.r.lock("resource", timeout=30).acquire(blocking=False))
        lock.extend(10)
        lock.release()
        self.assertIsNone(self.r.get("resource"))
        self.assertTrue(self.r.lock("resource", timeout=30).acquire(blocking=False))

    def test_a_script_inside_multi_runs_at_exec(self):
        p = self.r.pipeline()
        p.set("m", 1)
        p.eval("return redis.call('incr', KEYS[1])", 1, "m")
        self.assertEqual(p.execute(), [True, 2])

    def test_no_other_command_runs_inside_a_script(self):
        # A script moves x and y together over many commands; readers on other connections
        # must always see them equal.
        r = self.r
        r.mset({"x": 0, "y": 0})
        move = r.register_script(
            "for i = 1, 200 do redis.call('incr', 'x') end "
            "for i = 1, 200 do redis.call('incr', 'y') end"
        )
        stop = threading.Event()
        seen = []

        def read():
            c = self.srv.client(protocol=self.PROTOCOL, decode_responses=True)
            while not stop.is_set():
                x, y = c.mget("x", "y")
                if x != y:
                    seen.append((x, y))
            c.close()

        readers = [threading.Thread(target=read) for _ in range(2)]
        for t in readers:
            t.start()
        for _ in range(50):
            move()
        stop.set()
        for t in readers:
            t.join()
        self.assertEqual(seen, [])
        self.assertEqual(r.get("x"), "10000")

    def test_slow_log_times_a_script_and_not_what_follows_it(self):
        # A script that spends its time in Lua before its one command: the slow log keeps the
        # script, not its command (which starts after the Lua code), nor the command
        # pipelined after the script (which starts where the script ended).
        r = self.r
        old = r.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
        script = "for i = 1, tonumber(ARGV[1]) do end return redis.call('get', KEYS[1])"
        n = 1 << 16
        while True:
            started = time.monotonic()
            r.eval(script, 1, "k", n)
            if time.monotonic() - started >= 0.2 or n >= 1 << 30:
                break
            n *= 2
        try:
            r.config_set("slowlog-log-slower-than", 50000)
            r.slowlog_reset()
            p = r.pipeline(transaction=False)
            p.eval(script, 1, "k", n)
            p.ping()
            p.execute()
            log = r.slowlog_get()
            names = [e["command"].split()[0].lower() for e in log]
            self.assertIn(names, (["eval"], [b"eval"]))
            self.assertGreaterEqual(log[0]["duration"], 50000)
        finally:
            r.config_set("slowlog-log-slower-than", old)
            r.slowlog_reset()


    def test_hostile_scripts_get_errors_and_the_server_goes_on(self):
        r = self.r
        # A table that contains itself: nested replies stop at a bound with an error element.
        s = self.srv.raw()
        s.sendall(b'EVAL "local t = {} t[1] = t return t" 0\r\nPING\r\n')
        buf = b""
        while not buf.endswith(b"+PONG\r\n"):
            chunk = s.recv(65536)
            self.assertTrue(chunk, "connection closed")
            buf += chunk
        s.close()
        self.assertTrue(buf.startswith(b"*1\r\n*1\r\n"))
        self.assertIn(b"-ERR reached lua stack limit\r\n", buf)
        # A script that asks for more memory than a Lua state may have.
        with self.assertRaises(redis.ResponseError) as e:
            r.eval("local t = {string.rep('x', 1024 * 1024)} "
                   "for i = 2, 12 do t[i] = table.concat(t) end return #t", 0)
        self.assertIn("not enough memory", str(e.exception))
        # ... and the next script has the memory again.
        self.assertEqual(r.eval("return #string.rep('x', 1024 * 1024)", 0), 1 << 20)
        # Arguments that are neither strings nor numbers.
        with self.assertRaises(redis.ResponseError) as e:
            r.eval("return redis.call('set', 'a', {})", 0)
        self.assertIn("must be strings or integers", str(e.exception))
        self.assertTrue(r.ping())


class Resp2(Scripts, unittest.TestCase):
    PROTOCOL = 2


class Resp3(Scripts, unittest.TestCase):
    PROTOCOL = 3

    def test_resp3_types_come_through(self):
        r = self.r
        self.assertEqual(r.eval("return {map = {a = 1}}", 0), {"a": 1})
        self.assertEqual(r.eval("return {double = 1.5}", 0), 1.5)
        self.assertIs(r.eval("redis.setresp(3) return true", 0), True)
        self.assertEqual(r.eval("redis.setresp(3) return redis.call('get', 'missing') == nil", 0), 1)


class Runaway(unittest.TestCase):
    """A script that never ends: others get BUSY once it passes busy-reply-threshold, SCRIPT
    KILL stops it, and the server serves everyone again. The clients that probe and kill
    connect while the script is running (a client already on the script's serving thread
    waits for it, as every client waits in Redis)."""

    def setUp(self):
        # One serving thread: the script holds it, so the killer must be served elsewhere.
        self.srv = Server("--kv-threads=1")
        r = self.srv.client(decode_responses=True)
        r.config_set("busy-reply-threshold", 200)
        r.close()

    def tearDown(self):
        self.srv.stop()

    def run_forever(self, script):
        result = {}

        def go():
            c = self.srv.client(decode_responses=True)
            try:
                result["reply"] = c.eval(script, 0)
            except redis.ResponseError as e:
                result["error"] = str(e)
            c.close()

        t = threading.Thread(target=go)
        t.start()
        return t, result

    def ask(self, command, timeout=30):
        """One command on a new connection; its reply line."""
        s = self.srv.raw()
        s.settimeout(timeout)
        s.sendall(command + b"\r\n")
        buf = b""
        while not buf.endswith(b"\r\n"):
            chunk = s.recv(1024)
            self.assertTrue(chunk, "connection closed")
            buf += chunk
        s.close()
        return buf

    def wait_busy(self):
        # A probe that connected before the script started shares its thread and waits with
        # it: give it up after a second and probe again on a new connection.
        def busy():
            try:
                return self.ask(b"GET a", timeout=1).startswith(b"-BUSY")
            except TimeoutError:
                return False

        wait_for(busy, timeout=60)

    def test_script_kill_stops_a_script_that_did_not_write(self):
        t, result = self.run_forever("while true do end")
        self.wait_busy()
        self.assertEqual(
            self.ask(b"SET a 1"),
            b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
        )
        self.assertEqual(self.ask(b"SCRIPT KILL"), b"+OK\r\n")
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertIn("Script killed by user with SCRIPT KILL", result["error"])
        self.assertEqual(self.ask(b"PING"), b"+PONG\r\n")
        self.assertEqual(self.ask(b"SCRIPT KILL"), b"-NOTBUSY No scripts in execution right now.\r\n")
        self.assertEqual(self.ask(b"GET a"), b"$-1\r\n")

    def test_a_script_that_wrote_is_unkillable(self):
        # It writes, then spins for three seconds of the server's clock and ends by itself.
        t, result = self.run_forever(
            "redis.call('set', 'w', 1) local t0 = redis.call('time') "
            "while true do local t = redis.call('time') "
            "if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 3000000 then return 1 end end"
        )
        self.wait_busy()
        self.assertTrue(self.ask(b"SCRIPT KILL").startswith(b"-UNKILLABLE Sorry the script already"))
        t.join(600)
        self.assertEqual(result, {"reply": 1})
        self.assertEqual(self.ask(b"GET w"), b"$1\r\n1\r\n")


class Strict(unittest.TestCase):
    def test_a_scripts_writes_survive_sigkill_whole(self):
        srv = Server("--durability=strict")
        try:
            r = srv.client(decode_responses=True)
            move = r.register_script(
                "redis.call('set', KEYS[1], ARGV[1]) redis.call('set', KEYS[2], ARGV[1]) "
                "return redis.call('del', KEYS[3])"
            )
            for i in range(30):
                move(keys=[f"a{i}", f"b{i}", f"a{i - 1}"], args=[i])
            r.close()
            srv.kill()
            srv.restart()
            r = srv.client(decode_responses=True)
            self.assertEqual(r.get("a29"), "29")
            self.assertEqual(r.get("b29"), "29")
            self.assertIsNone(r.get("a28"))
            self.assertEqual(r.dbsize(), 31)
            r.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
