"""Geo commands through redis-py (RESP2 and RESP3): a geo set is a sorted set whose scores are
Redis's 52-bit geohashes, so the positions, distances, hashes and search results below are
redis-server 7.0.15's for the same commands; the STORE forms, the errors, WRONGTYPE, keyspace
events, a graceful restart and strict mode's SIGKILL."""

import unittest

import redis

from harness import AcrossRestarts, SharedServer, wait_for
from test_pubsub import messages

PALERMO = (13.361389, 38.115556, "Palermo")
CATANIA = (15.087269, 37.502669, "Catania")


def scored(r, key):
    """ZRANGE key 0 -1 WITHSCORES as (member, score) tuples in either protocol."""
    return [tuple(x) for x in r.zrange(key, 0, -1, withscores=True)]


class Geo(SharedServer):
    def add_sicily(self):
        return self.r.geoadd("Sicily", PALERMO + CATANIA)

    def test_positions_hashes_and_distances(self):
        r = self.r
        self.assertEqual(self.add_sicily(), 2)
        self.assertEqual(r.zscore("Sicily", "Palermo"), 3479099956230698)
        self.assertEqual(r.type("Sicily"), "zset")
        pos = r.geopos("Sicily", "Palermo", "nope")
        self.assertAlmostEqual(pos[0][0], 13.36138933897018433)
        self.assertAlmostEqual(pos[0][1], 38.11555639549629859)
        self.assertIsNone(pos[1])
        # The reply itself, before redis-py turns it into floats.
        conn = self.srv.client(protocol=2).connection_pool.get_connection()
        conn.send_command("GEOPOS", "Sicily", "Palermo")
        self.assertEqual(conn.read_response(), [[b"13.36138933897018433", b"38.11555639549629859"]])
        conn.disconnect()
        self.assertEqual(r.geohash("Sicily", "Palermo", "Catania", "nope"), ["sqc8b49rny0", "sqdtr74hyu0", None])
        self.assertEqual(r.geodist("Sicily", "Palermo", "Catania"), 166274.1516)
        self.assertEqual(r.geodist("Sicily", "Palermo", "Catania", "km"), 166.2742)
        self.assertEqual(r.geodist("Sicily", "Palermo", "Catania", "mi"), 103.3182)
        self.assertIsNone(r.geodist("Sicily", "Palermo", "nope"))
        self.assertIsNone(r.geodist("missing", "a", "b"))

    def test_geoadd_flags(self):
        r = self.r
        self.add_sicily()
        self.assertEqual(r.geoadd("Sicily", (13.4, 38.1, "Palermo"), nx=True), 0)
        self.assertEqual(r.geoadd("Sicily", (13.4, 38.1, "Palermo", 1, 1, "new"), xx=True, ch=True), 1)
        self.assertEqual(r.zcard("Sicily"), 2)
        with self.assertRaisesRegex(redis.ResponseError, "^invalid longitude,latitude pair 200.000000,1.000000$"):
            r.geoadd("Sicily", (1, 1, "ok", 200, 1, "bad"))
        self.assertIsNone(r.zscore("Sicily", "ok"))
        with self.assertRaisesRegex(redis.ResponseError, "^value is not a valid float$"):
            r.execute_command("GEOADD", "Sicily", "x", "1", "m")
        with self.assertRaisesRegex(redis.ResponseError, "^syntax error$"):
            r.execute_command("GEOADD", "Sicily", "NX", "XX", "1", "1", "m")

    def test_searches(self):
        r = self.r
        self.add_sicily()
        self.assertEqual(r.georadius("Sicily", 15, 37, 200, "km", withdist=True, sort="ASC"),
                         [["Catania", 56.4413], ["Palermo", 190.4424]])
        self.assertEqual(r.georadiusbymember("Sicily", "Palermo", 200, "km", sort="ASC"), ["Palermo", "Catania"])
        self.assertEqual(r.geosearch("Sicily", longitude=15, latitude=37, radius=100, unit="km"), ["Catania"])
        self.assertEqual(r.geosearch("Sicily", member="Palermo", width=400, height=400, unit="km", sort="DESC",
                                     count=1), ["Catania"])
        found = r.geosearch("Sicily", longitude=15, latitude=37, radius=200, unit="km", sort="ASC",
                            withhash=True, withcoord=True)
        self.assertEqual(found[0][0:2], ["Catania", 3479447370796909])
        self.assertAlmostEqual(found[0][2][0], 15.08726745843887329)
        self.assertEqual(r.geosearch("missing", longitude=15, latitude=37, radius=1, unit="km"), [])
        self.assertEqual(r.georadius_ro("Sicily", 15, 37, 1, "km") if hasattr(r, "georadius_ro")
                         else r.execute_command("GEORADIUS_RO", "Sicily", 15, 37, 1, "km"), [])

    def test_store_forms(self):
        r = self.r
        self.add_sicily()
        self.assertEqual(r.georadius("Sicily", 15, 37, 200, "km", store="dst"), 2)
        self.assertEqual(scored(r, "dst"), [("Palermo", 3479099956230698.0), ("Catania", 3479447370796909.0)])
        self.assertEqual(r.geosearchstore("near", "Sicily", longitude=15, latitude=37, radius=200, unit="km",
                                          storedist=True), 2)
        self.assertEqual(scored(r, "near"), [("Catania", 56.4412578701582), ("Palermo", 190.44242984775784)])
        r.set("near", "a string, replaced")
        self.assertEqual(r.georadius("missing", 15, 37, 200, "km", store="near"), 0)
        self.assertEqual(r.exists("near"), 0)
        with self.assertRaisesRegex(redis.ResponseError, "^GEOSEARCHSTORE is not compatible with WITHDIST"):
            r.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 1, "km", "WITHDIST")

    def test_errors(self):
        r = self.r
        self.add_sicily()
        cases = [
            (("GEORADIUS", "Sicily", 15, 37, -1, "km"), "^radius cannot be negative$"),
            (("GEORADIUS", "Sicily", 15, 37, 1, "yd"), "^unsupported unit provided. please use M, KM, FT, MI$"),
            (("GEORADIUS", "Sicily", 15, 37, 1, "km", "COUNT", 0), "^COUNT must be > 0$"),
            (("GEORADIUS", "Sicily", 15, 37, 1, "km", "ANY"), "^the ANY argument requires COUNT argument$"),
            (("GEORADIUSBYMEMBER", "Sicily", "nope", 1, "km"), "^could not decode requested zset member$"),
            (("GEOSEARCH", "Sicily", "BYRADIUS", 1, "km", "ASC", "WITHDIST"),
             "^exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH$"),
            (("GEOSEARCH", "Sicily", "FROMLONLAT", 1, 1, "ASC", "WITHDIST"), "^exactly one of BYRADIUS and BYBOX can be specified"),
            (("GEOSEARCH", "Sicily", "FROMLONLAT", 1, 1, "BYRADIUS", 1, "km", "BYBOX", 1, 1, "km"), "^syntax error$"),
            (("GEOSEARCH", "Sicily", "FROMLONLAT", 1, 86, "BYRADIUS", 1, "km"), "^invalid longitude,latitude pair"),
            (("GEODIST", "Sicily", "a", "b", "km", "x"), "^syntax error$"),
        ]
        for args, pattern in cases:
            with self.assertRaisesRegex(redis.ResponseError, pattern):
                r.execute_command(*args)
        r.set("str", "x")
        for args in (("GEOADD", "str", 1, 1, "m"), ("GEOPOS", "str", "m"), ("GEODIST", "str", "a", "b"),
                     ("GEOHASH", "str", "m"), ("GEORADIUS", "str", 1, 1, 1, "km"),
                     ("GEOSEARCHSTORE", "d", "str", "FROMLONLAT", 1, 1, "BYRADIUS", 1, "km")):
            with self.assertRaisesRegex(redis.ResponseError, "^WRONGTYPE"):
                r.execute_command(*args)

    def test_hostile_input(self):
        r = self.r
        self.add_sicily()
        huge = 2**63 - 1
        self.assertEqual(r.execute_command("GEORADIUS", "Sicily", 15, 37, "1e308", "mi", "COUNT", huge),
                         ["Catania", "Palermo"])
        self.assertEqual(len(r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", -180, -85.05112878,
                                               "BYBOX", "inf", "inf", "km", "DESC")), 2)
        self.assertEqual(r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", 180, 85.05112878,
                                           "BYRADIUS", 0, "m", "ASC", "WITHDIST"), [])
        for bad in ("nan", "1e400", "", " 1", "0x"):
            with self.assertRaisesRegex(redis.ResponseError, "^need numeric radius$"):
                r.execute_command("GEORADIUS", "Sicily", 15, 37, bad, "km")
        # A member whose score is no geohash still decodes to a clamped position.
        r.zadd("Sicily", {"odd": -1})
        self.assertEqual(len(r.geopos("Sicily", "odd")[0]), 2)
        self.assertEqual(r.ping(), True)

    def test_keyspace_events(self):
        r = self.r
        r.config_set("notify-keyspace-events", "KEA")
        try:
            sub = self.srv.client(protocol=self.PROTOCOL, decode_responses=True).pubsub()
            sub.psubscribe("__keyevent@0__:*")
            self.assertTrue(wait_for(lambda: r.execute_command("PUBSUB", "NUMPAT") == 1))
            self.add_sicily()
            r.georadius("Sicily", 15, 37, 200, "km", store="a")
            r.geosearchstore("b", "Sicily", longitude=15, latitude=37, radius=200, unit="km")
            r.geosearchstore("b", "Sicily", longitude=15, latitude=37, radius=1, unit="m")
            got = [(m["channel"].split(":", 1)[1], m["data"]) for m in messages(sub, 4)]
            self.assertEqual(got, [("zadd", "Sicily"), ("georadiusstore", "a"), ("geosearchstore", "b"), ("del", "b")])
            sub.close()
        finally:
            r.config_set("notify-keyspace-events", "")


class GeoResp2(Geo, unittest.TestCase):
    PROTOCOL = 2


class GeoResp3(Geo, unittest.TestCase):
    PROTOCOL = 3


class GeoAcrossRestarts(AcrossRestarts, unittest.TestCase):
    def fill(self, r):
        r.geoadd("Sicily", PALERMO + CATANIA)
        r.geosearchstore("near", "Sicily", longitude=15, latitude=37, radius=200, unit="km", storedist=True)
        return {k: scored(r, k) for k in ("Sicily", "near")}

    def check(self, r, before):
        self.assertEqual({k: scored(r, k) for k in before}, before)
        self.assertEqual(r.geodist("Sicily", "Palermo", "Catania"), 166274.1516)


if __name__ == "__main__":
    unittest.main()
