"""Hostile input: each gets a RESP error or a closed connection, the server's memory stays
bounded, and a well-behaved client connected all along keeps being served."""

import random
import socket
import struct
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

    def test_huge_counts_and_ranges_on_collections(self):
        r = self.srv.client(decode_responses=True)
        r.rpush("l", *range(10))
        r.sadd("s", *range(10))
        r.hset("h", mapping={str(i): i for i in range(10)})
        # Negative counts ask for that many picks: bounded, then refused.
        for cmd in (("SRANDMEMBER", "s", -(2**40)), ("HRANDFIELD", "h", -(2**40)),
                    ("HRANDFIELD", "h", -(2**62), "WITHVALUES")):
            with self.assertRaisesRegex(redis.ResponseError, "out of range"):
                r.execute_command(*cmd)
        self.assertEqual(len(r.execute_command("SRANDMEMBER", "s", 2**62)), 10)
        self.assertEqual(len(r.spop("s", 2**62)), 10)
        self.assertEqual(r.lrange("l", -(2**63), 2**63 - 1), [str(i) for i in range(10)])
        self.assertIsNone(r.lindex("l", -(2**63)))
        self.assertEqual(r.lpos("l", "3", maxlen=2**62), 3)
        self.assertEqual(r.lpop("l", 2**62), [str(i) for i in range(10)])
        self.assertEqual(r.hscan("h", 2**64 - 1, count=2**62)[0], 0)
        with self.assertRaisesRegex(redis.ResponseError, "greater than number of args"):
            r.execute_command("SINTERCARD", 2**62, "a")
        # A timeout of 2^63 seconds: Redis 7.0's error, nobody blocked.
        for t in (2**63, "inf", "1e300"):
            with self.assertRaisesRegex(redis.ResponseError, "^timeout is negative$"):
                r.execute_command("BLPOP", "nothing", t)
        with self.assertRaisesRegex(redis.ResponseError, "^timeout is not a float or out of range$"):
            r.execute_command("BLPOP", "nothing", "nan")
        # A DUMP payload claiming 2^60 members is bad data, refused before any allocation.
        body = bytes([2, 0x81]) + (2**60).to_bytes(8, "big") + b"\x01a"
        payload = body + struct.pack("<H", 10)
        crc = self.crc64(payload)
        with self.assertRaisesRegex(redis.ResponseError, "Bad data format"):
            r.restore("evil", 0, payload + struct.pack("<Q", crc))

    @staticmethod
    def crc64(data):
        """Redis's CRC-64 (Jones polynomial, reflected)."""
        crc = 0
        for b in data:
            crc ^= b
            for _ in range(8):
                crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
        return crc

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
