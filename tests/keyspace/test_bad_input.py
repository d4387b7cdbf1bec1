"""Hostile input: each gets a RESP error or a closed connection, the server's memory stays
bounded, and a well-behaved client connected all along keeps being served."""

import random
import socket
import threading
import unittest

import redis

from harness import Server, read_until_closed


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.bystander = cls.srv.client(decode_responses=True)
        cls.bystander.set("still", "here")
        cls.rss_before = cls.srv.rss_kib()

    @classmethod
    def tearDownClass(cls):
        cls.bystander.close()
        cls.srv.stop()

    def tearDown(self):
        self.assertTrue(self.srv.alive())
        self.assertEqual(self.bystander.get("still"), "here")
        grown = self.srv.rss_kib() - self.rss_before
        self.assertLess(grown, 48 * 1024, f"server RSS grew by {grown} KiB")

    def refused(self, data, error):
        s = self.srv.raw()
        s.sendall(data)
        self.assertEqual(read_until_closed(s), b"-ERR " + error + b"\r\n")
        s.close()

    def test_a_bulk_length_of_two_to_the_forty(self):
        self.refused(b"*2\r\n$3\r\nGET\r\n$1099511627776\r\n", b"Protocol error: invalid bulk length")
        self.refused(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-5\r\n", b"Protocol error: invalid bulk length")

    def test_negative_and_huge_counts(self):
        s = self.srv.raw()
        s.sendall(b"*-1\r\n*-9999\r\nPING\r\n")
        self.assertEqual(s.recv(100), b"+PONG\r\n")
        s.close()
        self.refused(b"*99999999999\r\n", b"Protocol error: invalid multibulk length")
        r = self.srv.client()
        with self.assertRaisesRegex(redis.ResponseError, "syntax error"):
            r.execute_command("SCAN", 0, "COUNT", -5)
        r.close()

    def test_non_numeric_ttls(self):
        r = self.srv.client()
        for cmd in (("SET", "k", "v", "EX", "ten"), ("EXPIRE", "k", "1.5"), ("SETEX", "k", "x", "v"),
                    ("PEXPIRE", "k", " 5"), ("GETEX", "k", "PX", "-")):
            with self.assertRaisesRegex(redis.ResponseError, "not an integer or out of range"):
                r.execute_command(*cmd)
        self.assertTrue(r.ping())
        r.close()

    def test_a_100_mb_inline_line(self):
        s = self.srv.raw()
        sent = [0]

        def flood():
            chunk = b"A" * (1 << 20)
            try:
                for _ in range(100):
                    s.sendall(chunk)
                    sent[0] += len(chunk)
            except OSError:
                pass

        t = threading.Thread(target=flood)
        t.start()
        reply = read_until_closed(s)
        t.join()
        s.close()
        self.assertIn(reply, (b"", b"-ERR Protocol error: too big inline request\r\n"))
        self.assertLess(sent[0], 100 << 20, "the server read the whole line")

    def test_binary_garbage(self):
        rng = random.Random(17)
        for i in range(20):
            junk = bytes(rng.getrandbits(8) for _ in range(64 * 1024))
            if i % 2:
                junk = b"*" + junk
            s = self.srv.raw()
            try:
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            reply = read_until_closed(s)
            s.close()
            # Whatever came back is RESP: errors and replies, each line ended by CRLF.
            self.assertTrue(reply == b"" or reply.endswith(b"\r\n"), reply[-50:])


if __name__ == "__main__":
    unittest.main()
