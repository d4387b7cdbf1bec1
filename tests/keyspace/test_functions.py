"""Functions through redis-py (RESP2 and RESP3) and raw sockets: FUNCTION LOAD / DELETE /
FLUSH / LIST / DUMP / RESTORE / STATS / KILL and FCALL / FCALL_RO with Redis 7.0's replies and
errors, a runaway function answered BUSY and stopped by FUNCTION KILL, functions inside
MULTI, and libraries surviving a graceful restart and, in strict mode, kill -9."""

import threading
import unittest

import redis

from harness import Server, SharedServer, wait_for

LIB = """#!lua name=mylib
redis.register_function('set', function(keys, args) return redis.call('SET', keys[1], args[1]) end)
redis.register_function{function_name='echo', callback=function(keys, args) return args[1] end,
                        flags={'no-writes'}, description='says it back'}
"""


class Functions(SharedServer):
    FLAGS = ("--kv-threads=2",)

    def setUp(self):
        super().setUp()
        self.r.function_flush()

    def test_load_call_and_list(self):
        r = self.r
        self.assertEqual(r.function_load(LIB), "mylib")
        self.assertEqual(r.fcall("set", 1, "k", "v"), "OK")
        self.assertEqual(r.get("k"), "v")
        self.assertEqual(r.fcall_ro("echo", 0, "hi"), "hi")
        with self.assertRaises(redis.ResponseError) as e:
            r.fcall_ro("set", 1, "k", "v")
        self.assertEqual(str(e.exception), "Can not execute a script with write flag using *_ro command.")
        listed = r.function_list(withcode=True)
        self.assertEqual(len(listed), 1)
        lib = listed[0] if self.PROTOCOL == 3 else dict(zip(listed[0][::2], listed[0][1::2]))
        self.assertEqual((lib["library_name"], lib["engine"], lib["library_code"]), ("mylib", "LUA", LIB))
        functions = lib["functions"]
        if self.PROTOCOL == 2:
            functions = [dict(zip(f[::2], f[1::2])) for f in functions]
        by_name = {f["name"]: f for f in functions}
        self.assertEqual(by_name["echo"]["description"], "says it back")
        self.assertIsNone(by_name["set"]["description"])
        self.assertEqual(list(by_name["echo"]["flags"]), ["no-writes"])
        self.assertEqual(r.function_list(library="nomatch*"), [])

    def test_load_errors_are_redis_errors(self):
        r = self.r
        cases = [
            ("return 1", "Missing library metadata"),
            ("#!lua\nreturn 1", "Library name was not given"),
            ("#!lua name=a-b\nreturn 1", "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
            ("#!js name=x\nreturn 1", "Engine 'js' not found"),
            ("#!lua name=x\nreturn 1", "No functions registered"),
            ("#!lua name=x\nreturn 1 +", "Error compiling function: user_function:2: unexpected symbol near '<eof>'"),
            ("#!lua name=x\nredis.call('ping')", "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
            ("#!lua name=x\nredis.register_function('f', 1)", "Error registering functions: ERR second argument to redis.register_function must be a function"),
            ("#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'bad'}}", "Error registering functions: ERR unknown flag given"),
            ("#!lua name=x\nredis.register_function('f', function() end) while true do end", "Error registering functions: ERR FUNCTION LOAD timeout"),
        ]
        for code, error in cases:
            with self.assertRaises(redis.ResponseError, msg=code) as e:
                r.function_load(code)
            self.assertEqual(str(e.exception), error)
        r.function_load(LIB)
        with self.assertRaises(redis.ResponseError) as e:
            r.function_load(LIB)
        self.assertEqual(str(e.exception), "Library 'mylib' already exists")
        with self.assertRaises(redis.ResponseError) as e:
            r.function_load("#!lua name=other\nredis.register_function('echo', function() end)")
        self.assertEqual(str(e.exception), "Function echo already exists")
        self.assertEqual(r.function_load(LIB, replace=True), "mylib")

    def test_call_errors(self):
        r = self.r
        r.function_load("#!lua name=errs\nredis.register_function('boom', function() error('oops') end)\n"
                        "redis.register_function{function_name='ro', callback=function(k) return redis.call('set', k[1], 1) end, flags={'no-writes'}}")
        for args, error in [
            (("nosuch", 0), "Function not found"),
            (("boom", "x"), "Bad number of keys provided"),
            (("boom", -1), "Number of keys can't be negative"),
            (("boom", 2, "k"), "Number of keys can't be greater than number of args"),
            (("boom", 0), "user_function:2: oops script: boom, on @user_function:2."),
            (("ro", 1, "k"), "Write commands are not allowed from read-only scripts. script: ro, on @user_function:3."),
        ]:
            with self.assertRaises(redis.ResponseError, msg=args) as e:
                r.fcall(*args)
            self.assertEqual(str(e.exception), error)
        self.assertEqual(r.exists("k"), 0)

    def test_delete_flush_dump_restore(self):
        r = self.r
        r.function_load(LIB)
        payload = r.execute_command("FUNCTION", "DUMP", NEVER_DECODE=True)
        self.assertTrue(r.function_delete("mylib"))
        with self.assertRaises(redis.ResponseError):
            r.fcall("echo", 0, "x")
        with self.assertRaises(redis.ResponseError) as e:
            r.function_delete("mylib")
        self.assertEqual(str(e.exception), "Library not found")
        self.assertTrue(r.function_restore(payload))
        self.assertEqual(r.fcall("echo", 0, "back"), "back")
        with self.assertRaises(redis.ResponseError) as e:
            r.function_restore(payload)
        self.assertEqual(str(e.exception), "Library mylib already exists")
        self.assertTrue(r.function_restore(payload, "REPLACE"))
        with self.assertRaises(redis.ResponseError) as e:
            r.function_restore(payload[:-1])
        self.assertEqual(str(e.exception), "DUMP payload version or checksum are wrong")
        with self.assertRaises(redis.ResponseError) as e:
            r.function_restore(payload, "BAD")
        self.assertIn("Wrong restore policy given", str(e.exception))
        self.assertTrue(r.function_flush())
        self.assertEqual(r.function_list(), [])
        self.assertTrue(r.function_restore(payload, "FLUSH"))
        self.assertEqual(r.fcall("echo", 0, "again"), "again")

    def test_functions_inside_multi(self):
        r = self.r
        p = r.pipeline(transaction=True)
        p.function_load(LIB)
        p.fcall("set", 1, "m", "1")
        p.fcall("echo", 0, "done")
        self.assertEqual(p.execute(), ["mylib", "OK", "done"])
        self.assertEqual(r.get("m"), "1")

    def test_runaway_function_is_busy_and_killed(self):
        r = self.r
        r.function_load("#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
        r.config_set("busy-reply-threshold", 100)
        failed = []

        def spin():
            try:
                self.srv.client().fcall("spin", 0)
            except redis.ResponseError as e:
                failed.append(str(e))

        t = threading.Thread(target=spin)
        t.start()
        other = self.srv.client(decode_responses=True)
        try:
            wait_for(lambda: busy(other))
            with self.assertRaises(redis.ResponseError) as e:
                other.ping()
            self.assertEqual(str(e.exception), "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
            with self.assertRaises(redis.ResponseError) as e:
                other.script_kill()
            self.assertIn("FUNCTION KILL", str(e.exception))
            stats = other.execute_command("FUNCTION", "STATS")
            self.assertIn("spin", str(stats))
            self.assertEqual(other.execute_command("FUNCTION", "KILL"), "OK")
            t.join(20)
            self.assertFalse(t.is_alive())
            self.assertEqual(len(failed), 1)
            self.assertIn("Script killed by user", failed[0])
            self.assertEqual(other.ping(), True)
            with self.assertRaises(redis.ResponseError) as e:
                other.execute_command("FUNCTION", "KILL")
            self.assertEqual(str(e.exception), "NOTBUSY No scripts in execution right now.")
        finally:
            other.config_set("busy-reply-threshold", 5000)
            other.close()


def busy(client):
    try:
        client.ping()
        return False
    except redis.ResponseError as e:
        return str(e).startswith("BUSY")


class Resp3(Functions, unittest.TestCase):
    PROTOCOL = 3


class Resp2(Functions, unittest.TestCase):
    PROTOCOL = 2


class Persistence(unittest.TestCase):
    def check(self, srv):
        r = srv.client(decode_responses=True)
        self.assertEqual(r.fcall("echo", 0, "still here"), "still here")
        self.assertEqual([lib[1] for lib in r.function_list()], ["mylib"])
        r.close()

    def test_graceful_restart_keeps_libraries(self):
        srv = Server()
        try:
            r = srv.client(decode_responses=True)
            r.function_load(LIB)
            r.close()
            srv.terminate()
            srv.restart()
            self.check(srv)
        finally:
            srv.stop()

    def test_strict_mode_keeps_libraries_through_sigkill(self):
        srv = Server("--durability=strict")
        try:
            r = srv.client(decode_responses=True)
            r.function_load("#!lua name=gone\nredis.register_function('g', function() return 1 end)")
            r.function_load(LIB)
            r.function_delete("gone")
            r.close()
            srv.kill()
            srv.restart()
            self.check(srv)
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
