//! The geohash arithmetic of Redis 7.0's geo commands, sans-IO: a position is a 52-bit score
//! (26 bits of latitude and 26 of longitude, interleaved, latitude in the even bits) in a
//! sorted set, so GEOADD's scores, GEOPOS's rounding, GEOHASH's strings and every search's
//! candidates are redis-server's own. The limits are Redis's (latitudes within
//! ±85.05112878, the Web Mercator bound), the distance is the haversine on a sphere of
//! 6372797.560856 m, and a search looks at the 3×3 boxes of geohash cells around the centre
//! at a precision estimated from the radius, then keeps the points really inside the shape.

pub const LAT_MIN: f64 = -85.051_128_78;
pub const LAT_MAX: f64 = 85.051_128_78;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// Bits per coordinate of a stored position.
pub const STEP_MAX: u8 = 26;
/// The Earth's quadratic mean radius (WGS-84), in metres.
pub const EARTH_RADIUS: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

/// A range of one coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A geohash cell: `step` bits per coordinate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

/// The coordinates a cell covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

/// Spreads the low 32 bits of `v` to the even bits.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bits of `v` into 32 bits.
fn squash(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    ((x | (x >> 16)) & 0x0000_0000_ffff_ffff) as u32
}

/// Whether a longitude / latitude pair may be stored (GEOADD, FROMLONLAT).
pub fn valid(lon: f64, lat: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The cell of `step` bits holding a point, within the given ranges; `None` outside them.
fn encode_in(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if step == 0 || step > 32 || !valid(lon, lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_offset = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    let bits = spread(lat_offset as u32) | (spread(lon_offset as u32) << 1);
    Some(Cell { bits, step })
}

/// The cell of `step` bits holding a point (Redis's ranges).
pub fn encode(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode_in(LONG_RANGE, LAT_RANGE, lon, lat, step)
}

/// A cell aligned to 52 bits: the sorted-set score.
pub fn align52(c: Cell) -> u64 {
    c.bits << (52 - u32::from(c.step) * 2)
}

/// The score GEOADD stores for a valid point.
pub fn score_of(lon: f64, lat: f64) -> Option<f64> {
    encode(lon, lat, STEP_MAX).map(|c| align52(c) as f64)
}

fn decode_in(lon_r: Range, lat_r: Range, c: Cell) -> Area {
    let lat_bits = squash(c.bits);
    let lon_bits = squash(c.bits >> 1);
    let scale = (1u64 << c.step) as f64;
    let at = |r: Range, v: u32| r.min + (f64::from(v) / scale) * (r.max - r.min);
    let after = |r: Range, v: u32| r.min + ((f64::from(v) + 1.0) / scale) * (r.max - r.min);
    Area {
        latitude: Range {
            min: at(lat_r, lat_bits),
            max: after(lat_r, lat_bits),
        },
        longitude: Range {
            min: at(lon_r, lon_bits),
            max: after(lon_r, lon_bits),
        },
    }
}

/// The area a cell covers.
pub fn decode(c: Cell) -> Area {
    decode_in(LONG_RANGE, LAT_RANGE, c)
}

/// The point a score stands for: its cell's centre, clamped to the limits (GEOPOS).
pub fn point_of(score: f64) -> (f64, f64) {
    // A negative score (ZADD can store one) converts as C's cast does on x86-64.
    let bits = if score < 0.0 {
        score as i64 as u64
    } else {
        score as u64
    };
    let area = decode(Cell {
        bits,
        step: STEP_MAX,
    });
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The standard 11-character geohash of a score (GEOHASH): the point re-encoded with
/// latitudes in ±90, the eleventh character always `0`.
pub fn hash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = point_of(score);
    let world = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode_in(LONG_RANGE, world, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    for (i, ch) in out.iter_mut().take(10).enumerate() {
        *ch = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

/// Moves a cell by one along longitude (`x`) or latitude, wrapping around.
fn moved(c: Cell, dx: i8, dy: i8) -> Cell {
    let shift = 64 - u32::from(c.step) * 2;
    let mut x = c.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = c.bits & 0x5555_5555_5555_5555;
    let zz_x = 0x5555_5555_5555_5555u64 >> shift;
    let zz_y = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if dx > 0 {
        x = x.wrapping_add(zz_x + 1);
    } else if dx < 0 {
        x = (x | zz_x).wrapping_sub(zz_x + 1);
    }
    if dx != 0 {
        x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    }
    if dy > 0 {
        y = y.wrapping_add(zz_y + 1);
    } else if dy < 0 {
        y = (y | zz_y).wrapping_sub(zz_y + 1);
    }
    if dy != 0 {
        y &= 0x5555_5555_5555_5555u64 >> shift;
    }
    Cell {
        bits: x | y,
        step: c.step,
    }
}

/// The bits precision of the search boxes for a radius at a latitude.
fn steps_for_radius(mut range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// A search's shape, in its unit (`to_meters` converts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Radius(f64),
    /// Width and height.
    Box(f64, f64),
}

/// A search: a centre, a shape and its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    pub lon: f64,
    pub lat: f64,
    pub shape: Shape,
    pub to_meters: f64,
}

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// The distance between two latitudes on a meridian, in metres.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance between two points, in metres.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

impl Search {
    /// min longitude, min latitude, max longitude, max latitude.
    fn bounds(&self) -> [f64; 4] {
        let (half_h, half_w) = match self.shape {
            Shape::Radius(r) => (r, r),
            Shape::Box(w, h) => (h / 2.0, w / 2.0),
        };
        let (height, width) = (half_h * self.to_meters, half_w * self.to_meters);
        let lat_delta = rad_deg(height / EARTH_RADIUS);
        let long_top = rad_deg(width / EARTH_RADIUS / deg_rad(self.lat + lat_delta).cos());
        let long_bottom = rad_deg(width / EARTH_RADIUS / deg_rad(self.lat - lat_delta).cos());
        let long_delta = if self.lat < 0.0 {
            long_bottom
        } else {
            long_top
        };
        [
            self.lon - long_delta,
            self.lat - lat_delta,
            self.lon + long_delta,
            self.lat + lat_delta,
        ]
    }

    /// The cells to look in, in Redis's order (centre, N, S, E, W, NE, NW, SE, SW), with the
    /// ones that cannot hold a match left out and a cell equal to the one before skipped.
    pub fn cells(&self) -> Vec<Cell> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius_m = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
        } * self.to_meters;
        let mut steps = steps_for_radius(radius_m, self.lat);
        let centre = |steps| encode(self.lon, self.lat, steps).unwrap_or(Cell { bits: 0, step: 0 });
        let mut hash = centre(steps);
        let too_coarse = {
            let n = decode(moved(hash, 0, 1));
            let s = decode(moved(hash, 0, -1));
            let e = decode(moved(hash, 1, 0));
            let w = decode(moved(hash, -1, 0));
            n.latitude.max < max_lat
                || s.latitude.min > min_lat
                || e.longitude.max < max_lon
                || w.longitude.min > min_lon
        };
        if steps > 1 && too_coarse {
            steps -= 1;
            hash = centre(steps);
        }
        let area = decode(hash);
        // (dx, dy) of centre, N, S, E, W, NE, NW, SE, SW.
        let around: [(i8, i8); 9] = [
            (0, 0),
            (0, 1),
            (0, -1),
            (1, 0),
            (-1, 0),
            (1, 1),
            (-1, 1),
            (1, -1),
            (-1, -1),
        ];
        let useless = |(dx, dy): (i8, i8)| {
            steps >= 2
                && ((dy < 0 && area.latitude.min < min_lat)
                    || (dy > 0 && area.latitude.max > max_lat)
                    || (dx < 0 && area.longitude.min < min_lon)
                    || (dx > 0 && area.longitude.max > max_lon))
        };
        let mut cells: Vec<Cell> = Vec::with_capacity(9);
        for d in around {
            if useless(d) {
                continue;
            }
            let c = moved(hash, d.0, d.1);
            if c.bits == 0 && c.step == 0 {
                continue;
            }
            // Redis compares with the last cell searched, unless that is the centre.
            if cells.len() > 1 && cells.last() == Some(&c) {
                continue;
            }
            cells.push(c);
        }
        cells
    }

    /// The point of a score and its distance from the centre (in metres), if it is inside
    /// the shape.
    pub fn matches(&self, score: f64) -> Option<(f64, f64, f64)> {
        let (lon, lat) = point_of(score);
        match self.shape {
            Shape::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.to_meters).then_some((lon, lat, d))
            }
            Shape::Box(w, h) => {
                let (w, h) = (w * self.to_meters, h * self.to_meters);
                if lat_distance(lat, self.lat) > h / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > w / 2.0 {
                    return None;
                }
                Some((lon, lat, distance(self.lon, self.lat, lon, lat)))
            }
        }
    }
}

/// The scores a cell's points have: `min` included, `max` excluded.
pub fn score_range(c: Cell) -> (f64, f64) {
    let min = align52(c);
    let max = align52(Cell {
        bits: c.bits + 1,
        step: c.step,
    });
    (min as f64, max as f64)
}

/// A distance unit's size in metres (`m`, `km`, `ft`, `mi`, any case).
pub fn unit(name: &[u8]) -> Option<f64> {
    [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]
        .into_iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|(_, f)| f)
}

/// A distance as Redis writes one: rounded (half to even) to four decimals.
pub fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let v = (d * 10_000.0).round_ties_even() as i64;
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!("{sign}{}.{:04}", a / 10_000, a % 10_000)
}

/// A coordinate as Redis writes one: 17 decimals, trailing zeros dropped.
pub fn format_coordinate(v: f64) -> String {
    let s = format!("{v:.17}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_squash_are_inverse() {
        for v in [0u32, 1, 0xffff_ffff, 0x1234_5678, 0x0300_0001] {
            assert_eq!(squash(spread(v)), v);
            assert_eq!(spread(v) & 0xaaaa_aaaa_aaaa_aaaa, 0);
        }
    }

    #[test]
    fn scores_and_points_match_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo" 15.087269 37.502669 "Catania",
        // then ZSCORE and GEOPOS, on redis-server 7.0.
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698.0));
        assert_eq!(score_of(15.087269, 37.502669), Some(3479447370796909.0));
        let (lon, lat) = point_of(3479099956230698.0);
        assert_eq!(format_coordinate(lon), "13.36138933897018433");
        assert_eq!(format_coordinate(lat), "38.11555639549629859");
        assert_eq!(&hash_string(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&hash_string(3479447370796909.0), b"sqdtr74hyu0");
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
    }

    #[test]
    fn distances_as_redis_writes_them() {
        let (a, b) = (point_of(3479099956230698.0), point_of(3479447370796909.0));
        let d = distance(a.0, a.1, b.0, b.1);
        assert_eq!(format_distance(d), "166274.1516");
        assert_eq!(format_distance(d / 1000.0), "166.2742");
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.125), "0.1250");
        assert_eq!(format_distance(12.345_67), "12.3457");
    }

    #[test]
    fn units() {
        assert_eq!(unit(b"KM"), Some(1000.0));
        assert_eq!(unit(b"mi"), Some(1609.34));
        assert_eq!(unit(b"yd"), None);
    }

    #[test]
    fn neighbours_wrap_and_cells_cover_the_centre() {
        let c = encode(13.361389, 38.115556, 10).unwrap();
        assert_eq!(moved(moved(c, 1, 0), -1, 0), c);
        assert_eq!(moved(moved(c, 0, 1), 0, -1), c);
        let search = Search {
            lon: 15.0,
            lat: 37.0,
            shape: Shape::Radius(200.0),
            to_meters: 1000.0,
        };
        let cells = search.cells();
        assert!(!cells.is_empty() && cells.len() <= 9);
        let score = score_of(13.361389, 38.115556).unwrap();
        let covered = cells.iter().any(|&c| {
            let (min, max) = score_range(c);
            (min..max).contains(&score)
        });
        assert!(covered);
        assert!(search.matches(score).is_some());
        let far = Search {
            shape: Shape::Radius(100.0),
            ..search
        };
        assert!(far.matches(score).is_none());
    }
}
