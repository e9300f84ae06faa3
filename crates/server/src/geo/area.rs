//! The cells a search looks in (geohash_helper.c): a shape (a radius or a box around a
//! centre), its bounding box, the step whose cells are about the shape's size, and the
//! centre cell with its eight neighbours, less those that cannot hold a match.

use super::distance::{deg_rad, rad_deg, EARTH_RADIUS_IN_METERS};
use super::hash::{self, Area, Bits, Neighbors, LAT_RANGE, LONG_RANGE};

const MERCATOR_MAX: f64 = 20037726.37;

/// What a search covers, in the unit of the request.
#[derive(Clone, Copy, Debug)]
pub enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search shape (GeoShape): the extent around the centre `xy` ([lon, lat]) and the
/// unit's size in meters.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub extent: Extent,
    pub xy: [f64; 2],
    pub conversion: f64,
}

impl Shape {
    /// Half the height and half the width, in meters (both the radius for a circle).
    fn half_sizes(&self) -> (f64, f64) {
        match self.extent {
            Extent::Radius(r) => (self.conversion * r, self.conversion * r),
            Extent::Box { width, height } => (
                self.conversion * (height / 2.0),
                self.conversion * (width / 2.0),
            ),
        }
    }

    /// [min lon, min lat, max lon, max lat] (geohashBoundingBox); the edges towards the
    /// nearer pole are the wider ones.
    pub fn bounding_box(&self) -> [f64; 4] {
        let [longitude, latitude] = self.xy;
        let (height, width) = self.half_sizes();
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
        let long_delta = if latitude < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            longitude - long_delta,
            latitude - lat_delta,
            longitude + long_delta,
            latitude + lat_delta,
        ]
    }

    /// The distance from the centre to the farthest point of the shape, in meters.
    fn radius_meters(&self) -> f64 {
        let r = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.conversion
    }
}

/// geohashEstimateStepsByRadius: the step of the cells a search of `range_meters` around
/// latitude `lat` starts from.
pub fn estimate_steps(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
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

/// The cells to search, in Redis's order: the centre, north, south, east, west,
/// north-east, north-west, south-east, south-west. Excluded ones are [`Bits::ZERO`].
pub fn search_cells(shape: &Shape) -> [Bits; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = shape.bounding_box();
    let [longitude, latitude] = shape.xy;
    let mut steps = estimate_steps(shape.radius_meters(), latitude);
    let cell = |steps: u8| -> (Bits, Neighbors, Area) {
        // The centre is within the limits, so it encodes and decodes.
        let hash =
            hash::encode(LONG_RANGE, LAT_RANGE, longitude, latitude, steps).unwrap_or(Bits {
                bits: 0,
                step: steps,
            });
        let area = hash::decode(LONG_RANGE, LAT_RANGE, hash).unwrap_or_default();
        (hash, hash::neighbors(hash), area)
    };
    let (mut hash, mut nb, mut area) = cell(steps);
    // Is the step small enough at the edges of the covered area? (Near a cell's edge a
    // neighbour can be too close to the centre to cover the shape.)
    let decoded = |b: Bits| hash::decode(LONG_RANGE, LAT_RANGE, b).unwrap_or_default();
    let decrease = decoded(nb.north).latitude.max < max_lat
        || decoded(nb.south).latitude.min > min_lat
        || decoded(nb.east).longitude.max < max_lon
        || decoded(nb.west).longitude.min > min_lon;
    if steps > 1 && decrease {
        steps -= 1;
        (hash, nb, area) = cell(steps);
    }
    // Exclude the neighbours beyond the bounding box on a side the centre cell covers.
    if steps >= 2 {
        let south = area.latitude.min < min_lat;
        let north = area.latitude.max > max_lat;
        let west = area.longitude.min < min_lon;
        let east = area.longitude.max > max_lon;
        let drop = |b: &mut Bits, gone: bool| {
            if gone {
                *b = Bits::ZERO;
            }
        };
        drop(&mut nb.south, south);
        drop(&mut nb.north, north);
        drop(&mut nb.west, west);
        drop(&mut nb.east, east);
        drop(&mut nb.south_west, south || west);
        drop(&mut nb.south_east, south || east);
        drop(&mut nb.north_west, north || west);
        drop(&mut nb.north_east, north || east);
    }
    [
        hash,
        nb.north,
        nb.south,
        nb.east,
        nb.west,
        nb.north_east,
        nb.north_west,
        nb.south_east,
        nb.south_west,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        assert_eq!(estimate_steps(0.0, 0.0), 26);
        assert_eq!(estimate_steps(f64::INFINITY, 0.0), 1);
        assert_eq!(estimate_steps(1000.0, 0.0), 14);
        assert_eq!(estimate_steps(1000.0, 70.0), 13);
        assert_eq!(estimate_steps(1000.0, -85.0), 12);
    }
}
