"""The blocking list commands through redis-py: a push wakes a blocked client, clients are
served in the order they blocked, timeouts, a transaction's pushes seen only whole at EXEC,
a pipeline waiting behind a blocked command, and a client that leaves while blocked."""

import threading
import time
import unittest

from harness import NO_RETRY, SharedServer, wait_for


class Blocking(SharedServer, unittest.TestCase):
    FLAGS = ("--kv-threads=4",)

    def call_in_thread(self, fn):
        """Runs fn on its own connection's thread; returns (thread, result list)."""
        out = []
        t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
        t.start()
        return t, out

    def client(self):
        # No retry: a client killed while blocked must not reconnect and block again.
        c = self.srv.client(decode_responses=True, retry=NO_RETRY)
        c.ids = c.client_id()
        self.addCleanup(c.close)
        return c

    def wait_blocked(self, c):
        """Until client `c` runs a blocking command (CLIENT LIST's cmd=)."""
        blocking = ("blpop", "brpop", "blmove", "blmpop", "brpoplpush")
        self.assertTrue(wait_for(lambda: any(
            int(x["id"]) == c.ids and x["cmd"] in blocking for x in self.r.client_list())))

    def test_a_push_wakes_a_blocked_client(self):
        c = self.client()
        t, out = self.call_in_thread(lambda: c.blpop(["none", "q"], timeout=0))
        self.wait_blocked(c)
        self.r.rpush("q", "x")
        t.join(20)
        self.assertEqual(out, [("q", "x")])
        self.assertEqual(self.r.exists("q"), 0)

    def test_first_blocked_first_served(self):
        clients = [self.client() for _ in range(3)]
        threads = []
        for c in clients:
            threads.append(self.call_in_thread(lambda c=c: c.brpop("q", timeout=0)))
            self.wait_blocked(c)
        self.r.lpush("q", "a")
        threads[0][0].join(20)
        self.assertEqual(threads[0][1], [("q", "a")])
        self.r.lpush("q", "b", "c")
        threads[1][0].join(20)
        threads[2][0].join(20)
        self.assertEqual([threads[1][1], threads[2][1]], [[("q", "b")], [("q", "c")]])

    def test_timeouts(self):
        started = time.time()
        self.assertIsNone(self.r.blpop("none", timeout=0.2))
        self.assertGreaterEqual(time.time() - started, 0.2)
        self.assertIsNone(self.r.blmove("none", "dst", 0.05))
        self.assertIsNone(self.r.blmpop(0.05, 1, "none", direction="LEFT"))

    def test_a_transaction_is_seen_whole(self):
        c = self.client()
        t, out = self.call_in_thread(lambda: c.blpop("q", timeout=1))
        self.wait_blocked(c)
        p = self.r.pipeline()
        p.rpush("q", "x").lpop("q")
        self.assertEqual(p.execute(), [1, "x"])
        t.join(20)
        self.assertEqual(out, [None])
        # Inside a transaction a blocking command answers at once.
        p = self.r.pipeline()
        p.blpop("none", timeout=0).brpoplpush("none", "dst", timeout=0)
        self.assertEqual(p.execute(), [None, None])

    def test_a_pipeline_waits_behind_a_blocked_command(self):
        c = self.client()
        p = c.pipeline(transaction=False)
        p.blmove("src", "dst", 0, "LEFT", "RIGHT").lrange("dst", 0, -1)
        t, out = self.call_in_thread(p.execute)
        self.wait_blocked(c)
        self.r.rpush("src", "x")
        t.join(20)
        self.assertEqual(out, [["x", ["x"]]])

    def test_a_client_that_leaves_gives_up_its_place(self):
        leaving = self.client()
        t1, _ = self.call_in_thread(lambda: self.swallow(lambda: leaving.blpop("q", timeout=0)))
        self.wait_blocked(leaving)
        staying = self.client()
        t2, out = self.call_in_thread(lambda: staying.blpop("q", timeout=0))
        self.wait_blocked(staying)
        self.r.client_kill_filter(_id=leaving.ids)
        t1.join(20)
        self.assertFalse(t1.is_alive())
        self.r.rpush("q", "x")
        t2.join(20)
        self.assertEqual(out, [("q", "x")])

    @staticmethod
    def swallow(fn):
        try:
            return fn()
        except Exception as e:  # the connection is killed while blocked
            return e


if __name__ == "__main__":
    unittest.main()
