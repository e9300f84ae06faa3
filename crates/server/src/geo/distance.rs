//! Distances on the sphere as Redis 7.0 computes them (geohash_helper.c): the haversine
//! with Redis's Earth radius, the same operations in the same order, so that results
//! (through the same libm) agree to the last bit.

/// Earth's quadratic mean radius for WGS-84, in meters.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;

/// Degrees to radians as Redis's `deg_rad` (multiplication by M_PI / 180.0).
const D_R: f64 = std::f64::consts::PI / 180.0;

pub fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

pub fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// Distance between two latitudes on one meridian (geohashGetLatDistance).
pub fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// Great-circle distance in meters (geohashGetDistance).
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Is the point (x2, y2) within `radius` meters of (x1, y1)? With its distance.
pub fn within_radius(x1: f64, y1: f64, x2: f64, y2: f64, radius: f64) -> Option<f64> {
    let d = distance(x1, y1, x2, y2);
    if d > radius {
        None
    } else {
        Some(d)
    }
}

/// Is the point (x2, y2) within the axis-aligned box of `width_m` by `height_m` meters
/// centred on (x1, y1) (geohashGetDistanceIfInRectangle)? With its distance to the centre.
pub fn within_rectangle(
    width_m: f64,
    height_m: f64,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
) -> Option<f64> {
    if lat_distance(y2, y1) > height_m / 2.0 {
        return None;
    }
    if distance(x2, y2, x1, y2) > width_m / 2.0 {
        return None;
    }
    Some(distance(x1, y1, x2, y2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palermo_catania() {
        // The coordinates GEOPOS returns for Redis's documentation example; GEODIST
        // answers 166274.1516 m.
        let d = distance(
            13.361389338970184,
            38.1155563954963,
            15.087267458438873,
            37.50266842333162,
        );
        assert_eq!(format!("{d:.4}"), "166274.1516");
    }
}
