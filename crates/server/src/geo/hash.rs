//! Geohash bits as Redis 7.0 computes them (geohash.c): coordinates interleaved into
//! `2 * step` bits (latitude in the even bits, longitude in the odd ones), decoded back to
//! the centre of their cell, neighbour cells, and the 52-bit sorted-set score.

/// Longitude and latitude limits (EPSG:900913): no point can be stored beyond them.
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;

/// 26 steps: 52 bits, the precision of every stored point.
pub const STEP_MAX: u8 = 26;

/// A range of one coordinate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The ranges Redis encodes stored points with.
pub const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A geohash of `step` steps (GeoHashBits). The zero value (bits 0, step 0) means "no
/// cell" (a neighbour excluded from a search).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bits {
    pub bits: u64,
    pub step: u8,
}

impl Bits {
    pub const ZERO: Bits = Bits { bits: 0, step: 0 };

    pub fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The hash shifted to 52 bits (geohashAlign52Bits): a sorted-set score.
    pub fn align52(self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// The cell a hash covers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

/// The eight neighbours of a cell.
#[derive(Clone, Copy, Debug, Default)]
pub struct Neighbors {
    pub north: Bits,
    pub east: Bits,
    pub west: Bits,
    pub south: Bits,
    pub north_east: Bits,
    pub south_east: Bits,
    pub north_west: Bits,
    pub south_west: Bits,
}

fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// C's conversion of a double to an unsigned 32-bit parameter as x86-64 code does it (the
/// low 32 bits of a 64-bit truncation); only called with values in 0..=2^32.
fn to_u32(v: f64) -> u32 {
    c_i64(v) as u32
}

/// `(long long) v` on x86-64 (cvttsd2si): truncation, and i64::MIN for NaN or a value out
/// of range.
pub fn c_i64(v: f64) -> i64 {
    if !(-9223372036854775808.0..9223372036854775808.0).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// `(uint64_t) v` as gcc compiles it for x86-64: values from 2^63 are shifted down before
/// the signed conversion, the rest (NaN included) converted as signed.
pub fn c_u64(v: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    if v >= TWO63 {
        (c_i64(v - TWO63) as u64) ^ (1 << 63)
    } else {
        c_i64(v) as u64
    }
}

/// geohashEncode: None where Redis fails (step out of 1..=32, coordinates beyond the
/// limits or the given ranges).
// The limits are checked as C compares (a NaN would pass), not with `contains`.
#[allow(clippy::manual_range_contains)]
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<Bits> {
    if step > 32 || step == 0 {
        return None;
    }
    if longitude > LONG_MAX || longitude < LONG_MIN || latitude > LAT_MAX || latitude < LAT_MIN {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    let scale = (1u64 << step) as f64;
    lat_offset *= scale;
    long_offset *= scale;
    Some(Bits {
        bits: interleave64(to_u32(lat_offset), to_u32(long_offset)),
        step,
    })
}

/// geohashEncodeWGS84 (the stored points' ranges).
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<Bits> {
    encode(LONG_RANGE, LAT_RANGE, longitude, latitude, step)
}

/// geohashDecode: the cell of `hash` (None for the zero hash).
pub fn decode(long_range: Range, lat_range: Range, hash: Bits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let step = u32::from(hash.step);
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_range.min + (f64::from(ilato) / div) * lat_scale,
            max: lat_range.min + (f64::from(ilato.wrapping_add(1)) / div) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (f64::from(ilono) / div) * long_scale,
            max: long_range.min + (f64::from(ilono.wrapping_add(1)) / div) * long_scale,
        },
    })
}

/// The centre of a cell, clamped to the limits (geohashDecodeAreaToLongLat): [lon, lat].
pub fn area_center(area: &Area) -> [f64; 2] {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// The position a sorted-set score stands for (Redis's decodeGeohash): the score is read
/// as C converts a double to uint64_t, then decoded at 26 steps. Every score decodes
/// (out-of-range bits end up clamped to the limits).
pub fn decode_score(score: f64) -> [f64; 2] {
    let hash = Bits {
        bits: c_u64(score),
        step: STEP_MAX,
    };
    let area = decode(LONG_RANGE, LAT_RANGE, hash).expect("a 26-step hash is never zero");
    area_center(&area)
}

/// The score a stored point gets: its 26-step hash aligned to 52 bits.
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(Bits::align52)
}

/// Move one cell along the coordinate held in the bits of `own` (geohash_move_x with the
/// odd bits, geohash_move_y with the even ones), wrapping around: the other coordinate's
/// bits are filled with ones so that the carry crosses them.
fn move_along(hash: &mut Bits, d: i8, own: u64) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let mut c = hash.bits & own;
    let rest = hash.bits & !own;
    let zz = !own >> shift;
    if d > 0 {
        c = c.wrapping_add(zz + 1);
    } else {
        c |= zz;
        c = c.wrapping_sub(zz + 1);
    }
    c &= own >> shift;
    hash.bits = c | rest;
}

fn moved(hash: Bits, dx: i8, dy: i8) -> Bits {
    let mut h = hash;
    move_along(&mut h, dx, 0xaaaaaaaaaaaaaaaa);
    move_along(&mut h, dy, 0x5555555555555555);
    h
}

/// geohashNeighbors (cells wrap around at the edges of the grid).
pub fn neighbors(hash: Bits) -> Neighbors {
    Neighbors {
        east: moved(hash, 1, 0),
        west: moved(hash, -1, 0),
        south: moved(hash, 0, -1),
        north: moved(hash, 0, 1),
        north_west: moved(hash, -1, 1),
        north_east: moved(hash, 1, 1),
        south_east: moved(hash, 1, -1),
        south_west: moved(hash, -1, -1),
    }
}

/// GEOHASH's 11-character string: the point decoded from its score, encoded again over
/// the standard latitude range (±90) and written in the geohash base32 alphabet (the
/// eleventh character is always '0': there are only 52 bits).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let std_long = Range {
        min: -180.0,
        max: 180.0,
    };
    let std_lat = Range {
        min: -90.0,
        max: 90.0,
    };
    // A decoded point is always within the limits, so this encodes.
    let bits = encode(std_long, std_lat, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_roundtrip() {
        for &(a, b) in &[
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ffffff, 0x1234567),
            (u32::MAX, 7),
        ] {
            let sep = deinterleave64(interleave64(a, b));
            assert_eq!((sep as u32, (sep >> 32) as u32), (a, b));
        }
    }

    #[test]
    fn known_scores() {
        // Redis: GEOADD Sicily 13.361389 38.115556 "Palermo" stores 3479099956230698.
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
    }

    #[test]
    fn c_conversions() {
        assert_eq!(c_u64(-1.5), u64::MAX);
        assert_eq!(c_u64(f64::NAN), 1 << 63);
        assert_eq!(c_u64(f64::INFINITY), 0);
        assert_eq!(c_u64(1e19), 10000000000000000000);
        assert_eq!(c_i64(f64::NEG_INFINITY), i64::MIN);
    }

    #[test]
    fn every_score_decodes_within_limits() {
        for s in [0.0, -1.0, 1e300, -1e300, f64::INFINITY, 4503599627370496.0] {
            let [lon, lat] = decode_score(s);
            assert!((LONG_MIN..=LONG_MAX).contains(&lon));
            assert!((LAT_MIN..=LAT_MAX).contains(&lat));
        }
    }

    #[test]
    fn neighbours_wrap() {
        let h = Bits { bits: 0, step: 1 };
        let n = neighbors(h);
        assert_eq!(n.north, n.south);
        assert_eq!(n.east, n.west);
    }
}
