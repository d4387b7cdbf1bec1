//! Geo searches: a geo set is a sorted set whose scores are 52-bit geohashes (`geohash.rs`),
//! so GEOADD is ZADD and every sorted set command works on one. A search reads the score
//! ranges of the cells around its centre, in Redis's order, and keeps the points inside its
//! shape; the STORE forms write the result as a sorted set in the same locked step.

use crate::error::KvError;
use crate::feed::Op;
use crate::geohash::{score_range, Search};
use crate::keyspace::{Find, Keyspace, Pending};
use crate::pqsort::pqsort;
use crate::typed::typed;
use crate::zset::{ScoreBound, ZSet};

/// A point a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct GeoPoint {
    pub member: Box<[u8]>,
    pub lon: f64,
    pub lat: f64,
    /// From the centre, in metres.
    pub dist: f64,
    pub score: f64,
}

/// The order of a search's results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GeoSort {
    /// As found: cell by cell, by score within a cell.
    #[default]
    None,
    Asc,
    Desc,
}

/// The points of `z` inside `search`, as found; with `limit` (ANY), it stops once it has that
/// many.
pub fn geo_search(z: &ZSet, search: &Search, limit: Option<usize>) -> Vec<GeoPoint> {
    let mut out = Vec::new();
    let full = |out: &Vec<GeoPoint>| limit.is_some_and(|n| out.len() >= n);
    for cell in search.cells() {
        if full(&out) {
            break;
        }
        let (min, max) = score_range(cell);
        let ranks = z.score_ranks(
            ScoreBound {
                value: min,
                exclusive: false,
            },
            ScoreBound {
                value: max,
                exclusive: true,
            },
        );
        for (member, score) in z.by_rank(ranks) {
            if let Some((lon, lat, dist)) = search.matches(score) {
                out.push(GeoPoint {
                    member: member.into(),
                    lon,
                    lat,
                    dist,
                    score,
                });
            }
            if full(&out) {
                break;
            }
        }
    }
    out
}

/// Sorts points by distance and keeps the first `count` (`None`: all), as Redis does: a
/// full sort is glibc's `qsort` (a stable merge sort), a partial one Redis's `pqsort`, whose
/// order of points at equal distances this keeps too.
pub fn sort_points(points: &mut Vec<GeoPoint>, sort: GeoSort, count: Option<usize>) {
    let by_dist = |a: &GeoPoint, b: &GeoPoint| match sort {
        GeoSort::Desc => b.dist.total_cmp(&a.dist),
        _ => a.dist.total_cmp(&b.dist),
    };
    match count.filter(|&n| n < points.len()) {
        _ if sort == GeoSort::None => {}
        Some(n) => pqsort(points, by_dist, 0, n - 1),
        None => points.sort_by(by_dist),
    }
    if let Some(n) = count {
        points.truncate(n);
    }
}

impl Keyspace {
    /// A STORE search: `f` sees the sorted set of `src` (`None` if missing; WRONGTYPE
    /// otherwise) while `dest` is locked too, and answers with its reply and, to store, a
    /// sorted set that replaces `dest` (an empty one deletes it), announced as `op`.
    pub fn zset_read_store<R>(
        &self,
        src: &[u8],
        dest: &[u8],
        op: Op,
        pending: &mut Pending,
        f: impl FnOnce(Option<&ZSet>) -> (R, Option<ZSet>),
    ) -> Result<R, KvError> {
        let now = crate::clock::now_ms();
        let (hs, hd) = (self.hash(src), self.hash(dest));
        let mut guards = self.lock_many(&[hs, hd]);
        let g = self.guard_of(&mut guards, hs);
        let (reply, result) = match self.find(g, hs, src, now, Find::Read) {
            Some(e) => f(Some(typed::<ZSet>(e)?)),
            None => f(None),
        };
        if let Some(result) = result {
            self.store_zset(&mut guards, dest, hd, result, op, now, pending);
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geohash::{score_of, Shape};
    use crate::test_support::mem;
    use crate::zsets::ZaddOptions;

    fn sicily() -> ZSet {
        let mut z = ZSet::default();
        for (lon, lat, m) in [
            (13.361389, 38.115556, "Palermo"),
            (15.087269, 37.502669, "Catania"),
            (2.3522, 48.8566, "Paris"),
        ] {
            z.insert(m.as_bytes(), score_of(lon, lat).unwrap());
        }
        z
    }

    fn names(points: &[GeoPoint]) -> Vec<&str> {
        points
            .iter()
            .map(|p| std::str::from_utf8(&p.member).unwrap())
            .collect()
    }

    #[test]
    fn radius_and_box_searches() {
        let z = sicily();
        let around = |shape| Search {
            lon: 15.0,
            lat: 37.0,
            shape,
            to_meters: 1000.0,
        };
        let mut found = geo_search(&z, &around(Shape::Radius(200.0)), None);
        sort_points(&mut found, GeoSort::Asc, None);
        assert_eq!(names(&found), ["Catania", "Palermo"]);
        assert_eq!(
            crate::geohash::format_distance(found[0].dist / 1000.0),
            "56.4413"
        );
        let mut near = geo_search(&z, &around(Shape::Radius(100.0)), None);
        sort_points(&mut near, GeoSort::Desc, Some(5));
        assert_eq!(names(&near), ["Catania"]);
        let boxed = geo_search(&z, &around(Shape::Box(400.0, 400.0)), None);
        assert_eq!(boxed.len(), 2);
        assert_eq!(
            geo_search(&z, &around(Shape::Radius(200.0)), Some(1)).len(),
            1
        );
    }

    #[test]
    fn stores_and_deletes_the_destination() {
        let ks = mem();
        let mut p = Pending::default();
        let items: Vec<(f64, &[u8])> = vec![(score_of(13.361389, 38.115556).unwrap(), b"P")];
        ks.zadd(b"src", &items, ZaddOptions::default(), &mut p)
            .unwrap();
        let n = ks.zset_read_store(b"src", b"dst", Op::Geosearchstore, &mut p, |z| {
            let z = z.cloned().unwrap_or_default();
            (z.len(), Some(z))
        });
        assert_eq!(n, Ok(1));
        assert!(ks.contains(b"dst"));
        let gone = ks.zset_read_store(b"none", b"dst", Op::Geosearchstore, &mut p, |z| {
            (z.is_none(), Some(ZSet::default()))
        });
        assert_eq!(gone, Ok(true));
        assert!(!ks.contains(b"dst"));
        ks.sadd(b"set", &[b"x"], &mut p).unwrap();
        let wrong = ks.zset_read_store(b"set", b"dst", Op::Geosearchstore, &mut p, |_| ((), None));
        assert_eq!(wrong, Err(KvError::WrongType));
    }
}
