//! Geo commands: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE and the older
//! GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms, with Redis 7.0's argument rules, replies
//! and error texts. A geo set is a sorted set (`nsqr_kv::geohash` computes its scores and
//! searches). Every search goes through one parser that follows Redis's `georadiusGeneric`
//! step by step, so the same bad input gets the same error, and a STORE search reads its
//! source and writes its destination in one locked step.

use nsqr_kv::geohash::{self, Search, Shape};
use nsqr_kv::{geo_search, sort_points, GeoPoint, GeoSort, Op, ZSet, ZaddOptions, ZaddReply};
use resp_wire::{Args, Protocol, Reply};

use super::args::{checked, is, NOT_INTEGER, SYNTAX};
use super::session::Ctx;

const NOT_FLOAT: &str = "ERR value is not a valid float";
const NO_MEMBER: &str = "ERR could not decode requested zset member";

/// A reply's error line, the parsers' way of stopping at the first bad argument.
type Parsed<T> = Result<T, String>;

/// A double argument as Redis reads one; `err` is the reply if it is not one.
fn double(arg: &[u8], err: &str) -> Parsed<f64> {
    nsqr_kv::parse_double(arg).ok_or_else(|| err.to_string())
}

/// A longitude and a latitude within Redis's limits.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Parsed<(f64, f64)> {
    let (lon, lat) = (double(lon, NOT_FLOAT)?, double(lat, NOT_FLOAT)?);
    if !geohash::valid(lon, lat) {
        return Err(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        ));
    }
    Ok((lon, lat))
}

fn unit(arg: &[u8]) -> Parsed<f64> {
    geohash::unit(arg)
        .ok_or_else(|| "ERR unsupported unit provided. please use M, KM, FT, MI".to_string())
}

/// `<radius> <unit>`: the radius and the unit's size in metres.
fn radius(r: &[u8], u: &[u8]) -> Parsed<(f64, f64)> {
    let r = double(r, "ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((r, unit(u)?))
}

/// `<width> <height> <unit>`.
fn box_size(w: &[u8], h: &[u8], u: &[u8]) -> Parsed<(f64, f64, f64)> {
    let w = double(w, "ERR need numeric width")?;
    let h = double(h, "ERR need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((w, h, unit(u)?))
}

/// The position of a member of the source.
fn member_point(z: &ZSet, m: &[u8]) -> Parsed<(f64, f64)> {
    z.score(m)
        .map(geohash::point_of)
        .ok_or_else(|| NO_MEMBER.to_string())
}

/// Which search command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS (`ro`: GEORADIUS_RO, no STORE).
    Radius {
        ro: bool,
    },
    ByMember {
        ro: bool,
    },
    Search,
    SearchStore,
}

impl Kind {
    fn is_search(self) -> bool {
        matches!(self, Kind::Search | Kind::SearchStore)
    }

    fn store_op(self) -> Op {
        if self.is_search() {
            Op::Geosearchstore
        } else {
            Op::Georadiusstore
        }
    }
}

/// A parsed search.
#[derive(Debug, Clone, Copy)]
struct Query<'a> {
    center: Option<(f64, f64)>,
    /// FROMMEMBER or FROMLONLAT was given (a member of a missing source leaves no centre).
    from: bool,
    /// The shape and its unit's size in metres.
    shape: Option<(Shape, f64)>,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: GeoSort,
    count: Option<usize>,
    any: bool,
    store: Option<&'a [u8]>,
    storedist: bool,
}

/// Parses a search against its source (`None`: missing), in Redis's order.
fn parse<'a>(a: &Args<'a>, z: Option<&ZSet>, kind: Kind) -> Parsed<Query<'a>> {
    let mut q = Query {
        center: None,
        from: false,
        shape: None,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: GeoSort::None,
        count: None,
        any: false,
        store: None,
        storedist: false,
    };
    let base = match kind {
        Kind::Radius { .. } => {
            q.center = Some(lon_lat(a.get(2), a.get(3))?);
            let (r, conv) = radius(a.get(4), a.get(5))?;
            q.shape = Some((Shape::Radius(r), conv));
            6
        }
        Kind::ByMember { .. } => {
            if let Some(z) = z {
                q.center = Some(member_point(z, a.get(2))?);
                let (r, conv) = radius(a.get(3), a.get(4))?;
                q.shape = Some((Shape::Radius(r), conv));
            }
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            q.store = Some(a.get(1));
            3
        }
    };
    options(a, z, kind, base, &mut q)?;
    check(a, kind, &q)?;
    Ok(q)
}

/// The options after the fixed arguments.
fn options<'a>(
    a: &Args<'a>,
    z: Option<&ZSet>,
    kind: Kind,
    base: usize,
    q: &mut Query<'a>,
) -> Parsed<()> {
    let can_store = matches!(
        kind,
        Kind::Radius { ro: false } | Kind::ByMember { ro: false }
    );
    let (mut frommember, mut fromloc) = (false, false);
    let mut i = base;
    while i < a.len() {
        let arg = a.get(i);
        let left = a.len() - i - 1;
        if is(arg, "withdist") {
            q.withdist = true;
        } else if is(arg, "withhash") {
            q.withhash = true;
        } else if is(arg, "withcoord") {
            q.withcoord = true;
        } else if is(arg, "any") {
            q.any = true;
        } else if is(arg, "asc") {
            q.sort = GeoSort::Asc;
        } else if is(arg, "desc") {
            q.sort = GeoSort::Desc;
        } else if is(arg, "count") && left >= 1 {
            let n = resp_wire::parse_i64(a.get(i + 1)).ok_or(NOT_INTEGER)?;
            if n <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            q.count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && left >= 1 && can_store {
            q.store = Some(a.get(i + 1));
            q.storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && kind == Kind::SearchStore {
            q.storedist = true;
        } else if is(arg, "frommember") && left >= 1 && kind.is_search() && !fromloc {
            if let Some(z) = z {
                q.center = Some(member_point(z, a.get(i + 1))?);
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && left >= 2 && kind.is_search() && !frommember {
            q.center = Some(lon_lat(a.get(i + 1), a.get(i + 2))?);
            fromloc = true;
            i += 2;
        } else if is(arg, "byradius")
            && left >= 2
            && kind.is_search()
            && !matches!(q.shape, Some((Shape::Box(..), _)))
        {
            let (r, conv) = radius(a.get(i + 1), a.get(i + 2))?;
            q.shape = Some((Shape::Radius(r), conv));
            i += 2;
        } else if is(arg, "bybox")
            && left >= 3
            && kind.is_search()
            && !matches!(q.shape, Some((Shape::Radius(_), _)))
        {
            let (w, h, conv) = box_size(a.get(i + 1), a.get(i + 2), a.get(i + 3))?;
            q.shape = Some((Shape::Box(w, h), conv));
            i += 3;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    q.from = frommember || fromloc;
    Ok(())
}

/// The checks after the options, in Redis's order.
fn check(a: &Args<'_>, kind: Kind, q: &Query<'_>) -> Parsed<()> {
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        let who = if kind == Kind::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ));
    }
    if kind.is_search() && !q.from {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            String::from_utf8_lossy(a.get(0))
        ));
    }
    if kind.is_search() && q.shape.is_none() {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            String::from_utf8_lossy(a.get(0))
        ));
    }
    if q.any && q.count.is_none() {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    Ok(())
}

/// The points a parsed search finds in `z`, sorted and cut to COUNT.
fn run(z: &ZSet, q: &Query<'_>) -> Vec<GeoPoint> {
    let (Some((lon, lat)), Some((shape, to_meters))) = (q.center, q.shape) else {
        return Vec::new();
    };
    let search = Search {
        lon,
        lat,
        shape,
        to_meters,
    };
    let mut sort = q.sort;
    if q.count.is_some() && sort == GeoSort::None && !q.any {
        sort = GeoSort::Asc;
    }
    let mut points = geo_search(z, &search, q.count.filter(|_| q.any));
    sort_points(&mut points, sort, q.count);
    points
}

/// A coordinate: a bulk string in RESP2, a double in RESP3.
fn coordinate(out: &mut Reply, v: f64) {
    let text = geohash::format_coordinate(v);
    match out.protocol() {
        Protocol::Resp2 => out.bulk(text.as_bytes()),
        Protocol::Resp3 => {
            out.raw(b",");
            out.raw(text.as_bytes());
            out.raw(b"\r\n");
        }
    }
}

fn point_reply(out: &mut Reply, lon: f64, lat: f64) {
    out.array(2);
    coordinate(out, lon);
    coordinate(out, lat);
}

/// The found points, each with what the WITH options ask for.
fn points_reply(out: &mut Reply, points: &[GeoPoint], q: &Query<'_>) {
    let to_meters = q.shape.map_or(1.0, |(_, c)| c);
    let extra = usize::from(q.withdist) + usize::from(q.withhash) + usize::from(q.withcoord);
    out.array(points.len());
    for p in points {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(&p.member);
        if q.withdist {
            out.bulk(geohash::format_distance(p.dist / to_meters).as_bytes());
        }
        if q.withhash {
            out.integer(p.score as i64);
        }
        if q.withcoord {
            point_reply(out, p.lon, p.lat);
        }
    }
}

/// The sorted set a STORE search writes: scores are the points' (or their distances, in the
/// search's unit, with STOREDIST).
fn stored(points: &[GeoPoint], q: &Query<'_>) -> ZSet {
    let to_meters = q.shape.map_or(1.0, |(_, c)| c);
    let mut z = ZSet::default();
    for p in points {
        let score = if q.storedist {
            p.dist / to_meters
        } else {
            p.score
        };
        z.insert(&p.member, score);
    }
    z
}

fn search(ctx: &mut Ctx<'_>, a: &Args<'_>, kind: Kind) {
    let src = if kind == Kind::SearchStore {
        a.get(2)
    } else {
        a.get(1)
    };
    // Where the result goes does not depend on the source: find it first, so that the
    // destination is locked with the source.
    let dest = parse(a, None, kind).ok().and_then(|q| q.store);
    let out = &mut *ctx.out;
    let Some(dest) = dest else {
        let r = ctx.shared.ks.read_zset(src, |z| match parse(a, z, kind) {
            Err(e) => out.error(&e),
            Ok(q) => points_reply(out, &z.map(|z| run(z, &q)).unwrap_or_default(), &q),
        });
        checked(out, r);
        return;
    };
    let op = kind.store_op();
    let r = ctx
        .shared
        .ks
        .zset_read_store(src, dest, op, &mut ctx.s.pending, |z| {
            match parse(a, z, kind) {
                Err(e) => (Err(e), None),
                Ok(q) => {
                    let points = z.map(|z| run(z, &q)).unwrap_or_default();
                    (Ok(points.len()), Some(stored(&points, &q)))
                }
            }
        });
    match checked(out, r) {
        Some(Ok(n)) => out.integer(n as i64),
        Some(Err(e)) => out.error(&e),
        None => {}
    }
}

pub fn georadius(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    search(ctx, a, Kind::Radius { ro: false });
}

pub fn georadius_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    search(ctx, a, Kind::Radius { ro: true });
}

pub fn georadiusbymember(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    search(ctx, a, Kind::ByMember { ro: false });
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    search(ctx, a, Kind::ByMember { ro: true });
}

pub fn geosearch(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    search(ctx, a, Kind::Search);
}

pub fn geosearchstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    search(ctx, a, Kind::SearchStore);
}

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD of the positions' scores.
pub fn geoadd(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut o = ZaddOptions::default();
    let mut at = 2;
    while at < a.len() {
        let flag = a.get(at);
        if is(flag, "nx") {
            o.nx = true;
        } else if is(flag, "xx") {
            o.xx = true;
        } else if !is(flag, "ch") {
            break;
        }
        o.ch |= is(flag, "ch");
        at += 1;
    }
    let rest = a.len() - at;
    if !rest.is_multiple_of(3) || (o.xx && o.nx) {
        return ctx.out.error(SYNTAX);
    }
    let mut items = Vec::with_capacity(rest / 3);
    for i in (at..a.len()).step_by(3) {
        match lon_lat(a.get(i), a.get(i + 1)) {
            Ok((lon, lat)) => {
                let score = geohash::score_of(lon, lat).unwrap_or_default();
                items.push((score, a.get(i + 2)));
            }
            Err(e) => return ctx.out.error(&e),
        }
    }
    if items.is_empty() {
        return ctx.out.error(SYNTAX);
    }
    let r = ctx.shared.ks.zadd(a.get(1), &items, o, &mut ctx.s.pending);
    if let Some(ZaddReply::Count(n)) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

/// Runs `f` on the sorted set of argument 1 (`None` if missing); WRONGTYPE otherwise.
fn read(ctx: &mut Ctx<'_>, a: &Args<'_>, f: impl FnOnce(&mut Reply, Option<&ZSet>)) {
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_zset(a.get(1), |z| f(out, z));
    checked(out, r);
}

/// An array of one reply per member (arguments 2 and on): `f` sees its score, if it has one.
fn per_member(ctx: &mut Ctx<'_>, a: &Args<'_>, f: impl Fn(&mut Reply, Option<f64>)) {
    read(ctx, a, |out, z| {
        out.array(a.len() - 2);
        for m in a.iter().skip(2) {
            f(out, z.and_then(|z| z.score(m)));
        }
    });
}

/// GEOPOS key [member ...]: each member's position, or a null array.
pub fn geopos(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    per_member(ctx, a, |out, score| match score {
        Some(score) => {
            let (lon, lat) = geohash::point_of(score);
            point_reply(out, lon, lat);
        }
        None => out.null_array(),
    });
}

/// GEOHASH key [member ...]: each member's 11-character geohash, or null.
pub fn geohash(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    per_member(ctx, a, |out, score| match score {
        Some(score) => out.bulk(&geohash::hash_string(score)),
        None => out.null(),
    });
}

/// GEODIST key member1 member2 [unit]: null if the key or either member is missing.
pub fn geodist(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let to_meters = match a.len() {
        5 => match unit(a.get(4)) {
            Ok(u) => u,
            Err(e) => return ctx.out.error(&e),
        },
        4 => 1.0,
        _ => return ctx.out.error(SYNTAX),
    };
    read(ctx, a, |out, z| {
        let points = z.and_then(|z| Some((z.score(a.get(2))?, z.score(a.get(3))?)));
        match points {
            Some((s1, s2)) => {
                let ((lon1, lat1), (lon2, lat2)) = (geohash::point_of(s1), geohash::point_of(s2));
                let d = geohash::distance(lon1, lat1, lon2, lat2) / to_meters;
                out.bulk(geohash::format_distance(d).as_bytes());
            }
            None => out.null(),
        }
    });
}
