"""ACL users through redis-py (RESP2 and RESP3) and raw sockets: ACL SETUSER / GETUSER /
DELUSER / LIST / USERS / WHOAMI / CAT / LOG / GENPASS / DRYRUN with Redis 7.0's replies, AUTH and
HELLO AUTH as a user, NOPERM for commands, keys and channels (at the top level, inside MULTI and
from scripts), --kv-password as the default user's password, COMMAND INFO's ACL categories, and
protected mode."""

import socket
import unittest

import redis

from harness import NO_RETRY, Server, read_until_closed


def exchange(srv, requests):
    """Sends raw requests, then QUIT, on a new connection; returns every reply byte (QUIT's
    +OK included)."""
    s = srv.raw()
    s.sendall(requests + b"QUIT\r\n")
    out = read_until_closed(s)
    s.close()
    return out


class Acl:
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
        for u in self.r.acl_users():
            if u != "default":
                self.r.acl_deluser(u)
        self.r.acl_log_reset()

    def as_user(self, name, password):
        c = self.srv.client(
            protocol=self.PROTOCOL, decode_responses=True, username=name, password=password, retry=NO_RETRY
        )
        self.addCleanup(c.close)
        return c

    def test_default_user(self):
        self.assertEqual(self.r.acl_whoami(), "default")
        self.assertEqual(self.r.acl_users(), ["default"])
        self.assertEqual(self.r.acl_list(), ["user default on nopass ~* &* +@all"])
        u = self.r.acl_getuser("default")
        self.assertEqual(u["flags"], ["on", "nopass"])
        self.assertEqual(u["categories"], ["+@all"])
        self.assertIsNone(self.r.acl_getuser("nobody"))

    def test_setuser_and_describe(self):
        self.assertTrue(self.r.acl_setuser("bob"))
        self.assertIn("user bob off resetchannels -@all", self.r.acl_list())
        self.r.execute_command(
            "ACL", "SETUSER", "bob", "on", ">p1", ">p2", "<p2", "~cache:*", "%R~ro:*", "&news.*",
            "-@all", "+@string", "-set", "+config|get",
        )
        line = [l for l in self.r.acl_list() if l.startswith("user bob ")][0]
        self.assertEqual(
            line,
            "user bob on #" + "f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a"
            + " ~cache:* %R~ro:* resetchannels &news.* -@all +@string -set +config|get",
        )
        u = self.r.acl_getuser("bob")
        self.assertEqual(u["keys"], ["~cache:*", "%R~ro:*"])
        self.assertEqual(u["channels"], ["&news.*"])
        self.assertEqual(len(u["passwords"]), 1)
        self.assertEqual(sorted(self.r.acl_users()), ["bob", "default"])
        self.assertEqual(self.r.acl_deluser("bob", "nobody"), 1)
        self.assertEqual(self.r.acl_users(), ["default"])

    def test_setuser_errors_change_nothing(self):
        self.r.acl_setuser("eve", enabled=True, passwords=["+pw"])
        before = self.r.acl_list()
        cases = [
            ("+nosuch", "Unknown command or category name in ACL"),
            ("+@nosuch", "Unknown command or category name in ACL"),
            ("bogus", "Syntax error"),
            ("<nopw", "The password you are trying to remove from the user does not exist"),
            ("#abc", "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"),
        ]
        for rule, text in cases:
            with self.assertRaises(redis.ResponseError) as e:
                self.r.execute_command("ACL", "SETUSER", "eve", "nopass", rule)
            self.assertEqual(str(e.exception), f"Error in ACL SETUSER modifier '{rule}': {text}")
        self.assertEqual(self.r.acl_list(), before)
        with self.assertRaises(redis.ResponseError) as e:
            self.r.execute_command("ACL", "SETUSER", "a b")
        self.assertEqual(str(e.exception), "Usernames can't contain spaces or null characters")
        with self.assertRaises(redis.ResponseError) as e:
            self.r.acl_deluser("default")
        self.assertEqual(str(e.exception), "The 'default' user cannot be removed")

    def test_auth_as_user(self):
        self.r.acl_setuser("alice", enabled=True, passwords=["+secret"], categories=["+@all"], keys=["*"])
        a = self.as_user("alice", "secret")
        self.assertEqual(a.acl_whoami(), "alice")
        self.assertTrue(a.set("k", "v"))
        with self.assertRaises(redis.AuthenticationError):
            self.as_user("alice", "wrong").ping()
        self.r.acl_setuser("alice", enabled=False)
        with self.assertRaises(redis.AuthenticationError):
            self.as_user("alice", "secret").ping()
        entries = self.r.acl_log()
        self.assertEqual(entries[0]["reason"], "auth")
        self.assertEqual(entries[0]["object"], "AUTH")
        self.assertEqual(entries[0]["username"], "alice")

    def test_hello_auth(self):
        self.r.acl_setuser("h", enabled=True, passwords=["+pw"], categories=["+@all"])
        out = exchange(self.srv, b"HELLO 3 AUTH h bad\r\nHELLO 3 AUTH h pw\r\nACL WHOAMI\r\n")
        self.assertTrue(out.startswith(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n%7\r\n"), out)
        self.assertIn(b"$1\r\nh\r\n+OK\r\n", out)

    def test_command_key_and_channel_permissions(self):
        self.r.acl_setuser(
            "bob", enabled=True, passwords=["+pw"], keys=["k*"], channels=["ch*"],
            commands=["+get", "+set", "+publish", "+multi", "+exec", "+eval"],
        )
        b = self.as_user("bob", "pw")
        self.assertTrue(b.set("k1", "v"))
        self.assertEqual(b.get("k1"), "v")
        with self.assertRaises(redis.exceptions.NoPermissionError) as e:
            b.get("x")
        self.assertEqual(str(e.exception), "this user has no permissions to access one of the keys used as arguments")
        with self.assertRaises(redis.exceptions.NoPermissionError) as e:
            b.delete("k1")
        self.assertEqual(str(e.exception), "this user has no permissions to run the 'del' command")
        with self.assertRaises(redis.exceptions.NoPermissionError) as e:
            b.config_get("maxmemory")
        self.assertEqual(str(e.exception), "this user has no permissions to run the 'config|get' command")
        self.assertEqual(b.publish("ch1", "m"), 0)
        with self.assertRaises(redis.exceptions.NoPermissionError) as e:
            b.publish("other", "m")
        self.assertEqual(str(e.exception), "this user has no permissions to access one of the channels used as arguments")
        with self.assertRaises(redis.ResponseError) as e:
            b.eval("return redis.call('get', 'x')", 0)
        self.assertIn("The user executing the script can't access at least one of the keys", str(e.exception))
        self.assertEqual(b.eval("return redis.call('get', KEYS[1])", 1, "k1"), "v")
        # The key named by EVAL itself is checked too.
        with self.assertRaises(redis.exceptions.NoPermissionError):
            b.eval("return 1", 1, "x")
        # The same refusal within a minute counts on its entry, which becomes the newest.
        log = [e for e in self.r.acl_log() if not e["object"].startswith("client")]
        self.assertEqual(
            [(e["reason"], e["context"], e["object"], e["count"]) for e in log],
            [("key", "toplevel", "x", 2), ("key", "lua", "x", 1), ("channel", "toplevel", "other", 1),
             ("command", "toplevel", "config|get", 1), ("command", "toplevel", "del", 1)],
        )
        # redis-py's CLIENT SETINFO on connecting is refused (and logged) too.
        self.assertTrue(all(e["username"] == "bob" for e in log))
        self.assertIn("bob", str(log[0]["client-info"]))

    def test_selectors(self):
        self.r.acl_setuser(
            "sel", enabled=True, passwords=["+pw"], commands=["+get"], keys=["a*"], selectors=[("+set", "%W~app*")]
        )
        line = [l for l in self.r.acl_list() if l.startswith("user sel ")][0]
        self.assertTrue(line.endswith(" ~a* resetchannels -@all +get (%W~app* resetchannels -@all +set)"), line)
        # A map in RESP3, a flat array in RESP2.
        sels = [s if isinstance(s, dict) else dict(zip(s[::2], s[1::2])) for s in self.r.acl_getuser("sel")["selectors"]]
        self.assertEqual(sels, [{"commands": "-@all +set", "keys": "%W~app*", "channels": ""}])
        u = self.as_user("sel", "pw")
        self.assertIsNone(u.get("a1"))
        self.assertTrue(u.set("app1", "v"))
        with self.assertRaises(redis.exceptions.NoPermissionError) as e:
            u.set("a1", "v")
        self.assertEqual(str(e.exception), "this user has no permissions to access one of the keys used as arguments")
        self.r.execute_command("ACL", "SETUSER", "sel", "clearselectors")
        self.assertEqual(self.r.acl_getuser("sel")["selectors"], [])

    def test_read_and_write_key_patterns(self):
        self.r.acl_setuser("rw", enabled=True, passwords=["+pw"], keys=["%R~ro:*", "%W~wo:*"], categories=["+@all"])
        u = self.as_user("rw", "pw")
        self.assertIsNone(u.get("ro:1"))
        with self.assertRaises(redis.exceptions.NoPermissionError):
            u.set("ro:1", "v")
        self.assertTrue(u.set("wo:1", "v"))
        with self.assertRaises(redis.exceptions.NoPermissionError):
            u.get("wo:1")

    def test_multi_refuses_at_queue_time(self):
        self.r.acl_setuser("m", enabled=True, passwords=["+pw"], keys=["*"], commands=["+multi", "+exec", "+set"])
        out = exchange(self.srv, b"AUTH m pw\r\nMULTI\r\nSET a 1\r\nDEL a\r\nEXEC\r\n")
        self.assertEqual(
            out,
            b"+OK\r\n+OK\r\n+QUEUED\r\n-NOPERM this user has no permissions to run the 'del' command\r\n"
            b"-EXECABORT Transaction discarded because of previous errors.\r\n+OK\r\n",
        )
        self.assertIsNone(self.r.get("a"))
        self.assertEqual(self.r.acl_log(1)[0]["context"], "multi")

    def test_changes_apply_to_connected_clients(self):
        self.r.acl_setuser("c", enabled=True, passwords=["+pw"], keys=["*"], categories=["+@all"])
        c = self.as_user("c", "pw")
        self.assertTrue(c.set("a", "1"))
        self.r.acl_setuser("c", commands=["-set"])
        with self.assertRaises(redis.exceptions.NoPermissionError):
            c.set("a", "2")
        self.assertEqual(c.get("a"), "1")

    def test_deluser_closes_its_connections(self):
        self.r.acl_setuser("gone", enabled=True, passwords=["+pw"], categories=["+@all"])
        s = self.srv.raw()
        s.sendall(b"AUTH gone pw\r\n")
        self.assertEqual(s.recv(100), b"+OK\r\n")
        self.assertEqual(self.r.acl_deluser("gone"), 1)
        self.assertEqual(read_until_closed(s), b"")
        s.close()

    def test_subscribers_lose_channels_they_may_no_longer_use(self):
        self.r.acl_setuser("ps", enabled=True, passwords=["+pw"], categories=["+@all"], channels=["news.*"])
        s = self.srv.raw()
        s.sendall(b"AUTH ps pw\r\nSUBSCRIBE news.1\r\n")
        want = b"+OK\r\n*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.1\r\n:1\r\n"
        got = b""
        while len(got) < len(want):
            got += s.recv(100)
        self.assertEqual(got, want)
        self.r.acl_setuser("ps", enabled=True, channels=["news.*", "sports.*"])
        self.assertEqual(self.r.publish("news.1", "still"), 1)
        self.r.execute_command("ACL", "SETUSER", "ps", "resetchannels", "&sports.*")
        self.assertEqual(read_until_closed(s), b"*3\r\n$7\r\nmessage\r\n$6\r\nnews.1\r\n$5\r\nstill\r\n")
        s.close()

    def test_cat_genpass_dryrun(self):
        cats = self.r.acl_cat()
        self.assertEqual(len(cats), 21)
        self.assertIn("keyspace", cats)
        strings = self.r.acl_cat("string")
        self.assertIn("get", strings)
        self.assertNotIn("del", strings)
        with self.assertRaises(redis.ResponseError) as e:
            self.r.acl_cat("nosuch")
        self.assertEqual(str(e.exception), "Unknown category 'nosuch'")
        p = self.r.acl_genpass()
        self.assertEqual(len(p), 64)
        int(p, 16)
        self.assertNotEqual(p, self.r.acl_genpass())
        self.assertEqual(len(self.r.acl_genpass(5)), 2)
        with self.assertRaises(redis.ResponseError):
            self.r.execute_command("ACL", "GENPASS", "5000")
        self.r.acl_setuser("d", keys=["k*"], commands=["+get"])
        self.assertEqual(self.r.acl_dryrun("d", "get", "k1"), "OK")
        self.assertEqual(self.r.acl_dryrun("d", "get", "x"), "This user has no permissions to access the 'x' key")
        self.assertEqual(self.r.acl_dryrun("d", "del", "k"), "This user has no permissions to run the 'del' command")
        with self.assertRaises(redis.ResponseError) as e:
            self.r.acl_dryrun("nob", "get", "k")
        self.assertEqual(str(e.exception), "User 'nob' not found")

    def test_log_groups_and_resets(self):
        self.r.acl_setuser("l", enabled=True, passwords=["+pw"], commands=["+get"], keys=["k"])
        u = self.as_user("l", "pw")
        for _ in range(3):
            with self.assertRaises(redis.exceptions.NoPermissionError):
                u.get("x")
        log = [e for e in self.r.acl_log() if e["reason"] == "key"]
        self.assertEqual(len(log), 1)
        self.assertEqual(log[0]["count"], 3)
        self.assertTrue(self.r.acl_log_reset())
        self.assertEqual(self.r.acl_log(), [])

    def test_requirepass_is_the_default_users_password(self):
        self.assertEqual(self.r.config_get("requirepass"), {"requirepass": ""})
        self.assertTrue(self.r.config_set("requirepass", "pw"))
        self.addCleanup(self.r.config_set, "requirepass", "")
        self.assertEqual(self.r.config_get("requirepass"), {"requirepass": "pw"})
        self.assertEqual(self.r.acl_getuser("default")["flags"], ["on"])
        out = exchange(self.srv, b"GET k\r\nAUTH pw\r\nGET k\r\n")
        self.assertEqual(out, b"-NOAUTH Authentication required.\r\n+OK\r\n$-1\r\n+OK\r\n")
        self.assertTrue(self.r.config_set("requirepass", ""))
        self.assertEqual(self.r.acl_getuser("default")["flags"], ["on", "nopass"])

    def test_command_getkeys_by_key_specs(self):
        self.assertEqual(self.r.command_getkeys("MSET", "a", "1", "b", "2"), ["a", "b"])
        self.assertEqual(self.r.command_getkeys("EVAL", "s", "2", "k1", "k2", "arg"), ["k1", "k2"])
        self.assertEqual(self.r.command_getkeys("EVAL", "s", "0", "arg"), [])
        flags = self.r.command_getkeysandflags("SET", "k", "v")
        self.assertEqual(flags, [["k", ["OW", "update"]]])

    def test_command_info_has_categories(self):
        out = exchange(self.srv, b"COMMAND INFO get\r\n")
        self.assertTrue(
            out.startswith(
                b"*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
                b"*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n"
            ),
            out,
        )
        out = exchange(self.srv, b"COMMAND INFO config\r\n")
        self.assertIn(b"$10\r\nconfig|get\r\n:-3\r\n", out)


class AclResp2(Acl, unittest.TestCase):
    PROTOCOL = 2


class AclResp3(Acl, unittest.TestCase):
    PROTOCOL = 3


class Password(unittest.TestCase):
    """--kv-password is the default user's password."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--kv-password=s3cret")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_default_user_has_the_password(self):
        r = self.srv.client(decode_responses=True, password="s3cret")
        self.addCleanup(r.close)
        self.assertEqual(r.acl_getuser("default")["flags"], ["on"])
        self.assertEqual(len(r.acl_getuser("default")["passwords"]), 1)
        r.acl_setuser("ops", enabled=True, passwords=["+ops"], categories=["+@all"], keys=["*"])
        out = exchange(self.srv, b"GET k\r\nAUTH default nope\r\nAUTH ops ops\r\nACL WHOAMI\r\n")
        self.assertEqual(
            out,
            b"-NOAUTH Authentication required.\r\n"
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
            b"+OK\r\n$3\r\nops\r\n+OK\r\n",
        )


def outside_address():
    """This host's address on a non-loopback interface, if it has one."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 9))
        ip = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") else ip


DENIED = (
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set "
    b"for the default user. In this mode connections are only accepted from the loopback interface."
)


class ProtectedMode(unittest.TestCase):
    """Bound to every interface with no password: only loopback clients are served."""

    def start(self, *flags):
        ip = outside_address()
        if ip is None:
            self.skipTest("this host has no non-loopback IPv4 address to connect from")
        srv = Server("--kv-address=0.0.0.0:0", *flags)
        self.addCleanup(srv.stop)
        return srv, ip

    def send_from(self, ip, port, request=b"PING\r\n"):
        s = socket.create_connection((ip, port), timeout=20)
        s.sendall(request)
        out = read_until_closed(s)
        s.close()
        return out

    def test_refuses_outside_clients(self):
        srv, ip = self.start()
        out = self.send_from(ip, srv.port)
        self.assertTrue(out.startswith(DENIED), out)
        self.assertTrue(out.endswith(b"from the outside.\r\n"), out)
        self.assertEqual(self.send_from("127.0.0.1", srv.port, b"PING\r\nQUIT\r\n"), b"+PONG\r\n+OK\r\n")

    def test_a_password_lifts_it(self):
        srv, ip = self.start()
        r = redis.Redis(host="127.0.0.1", port=srv.port)
        self.addCleanup(r.close)
        r.execute_command("ACL", "SETUSER", "default", ">pw")
        self.assertEqual(self.send_from(ip, srv.port, b"AUTH pw\r\nPING\r\nQUIT\r\n"), b"+OK\r\n+PONG\r\n+OK\r\n")

    def test_config_set_turns_it_off(self):
        srv, ip = self.start()
        r = redis.Redis(host="127.0.0.1", port=srv.port, decode_responses=True)
        self.addCleanup(r.close)
        self.assertEqual(r.config_get("protected-mode"), {"protected-mode": "yes"})
        self.assertTrue(r.config_set("protected-mode", "no"))
        self.assertEqual(self.send_from(ip, srv.port, b"PING\r\nQUIT\r\n"), b"+PONG\r\n+OK\r\n")

    def test_flag_turns_it_off(self):
        srv, ip = self.start("--kv-protected-mode=no")
        self.assertEqual(self.send_from(ip, srv.port, b"PING\r\nQUIT\r\n"), b"+PONG\r\n+OK\r\n")


if __name__ == "__main__":
    unittest.main()
