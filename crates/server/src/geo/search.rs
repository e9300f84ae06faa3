//! A search of a sorted set of geohash scores (geo.c's membersOfAllNeighbors): the score
//! range of each cell is walked as ZRANGEBYSCORE walks it, and each point decoded and
//! kept if it lies within the shape, in the order met; then sorted as Redis sorts.

use super::area::{search_cells, Extent, Shape};
use super::distance::{within_radius, within_rectangle};
use super::hash::{decode_score, Bits};
use super::sort;
use crate::cmd::sort::order::pqsort;
use crate::cmd::zsets::{Interval, ScoreRange};
use engine::coll::ZSet;

/// A point found (geoPoint): its position, distance from the centre in meters (in the
/// request's unit once [`to_unit`] ran), score and member.
#[derive(Clone, Debug)]
pub struct Point {
    pub xy: [f64; 2],
    pub dist: f64,
    pub score: f64,
    pub member: Vec<u8>,
}

/// The order of a search's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    None,
    Asc,
    Desc,
}

/// Is the point of `score` within the shape (geoWithinShape)? Its position and distance.
fn within(shape: &Shape, score: f64) -> Option<([f64; 2], f64)> {
    let xy = decode_score(score);
    let [cx, cy] = shape.xy;
    let d = match shape.extent {
        Extent::Radius(r) => within_radius(cx, cy, xy[0], xy[1], r * shape.conversion)?,
        Extent::Box { width, height } => within_rectangle(
            width * shape.conversion,
            height * shape.conversion,
            cx,
            cy,
            xy[0],
            xy[1],
        )?,
    };
    Some((xy, d))
}

/// The points of `z` within `shape`; with `limit` > 0 (COUNT ... ANY) the search stops
/// as soon as that many were found.
pub fn find(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    let cells = search_cells(shape);
    let mut found = Vec::new();
    let full = |found: &Vec<Point>| limit > 0 && found.len() >= limit;
    let mut last: Option<Bits> = None;
    for (i, &cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // With huge radii adjacent cells can be the same one: skip a repeat of the last
        // cell searched (Redis never compares with the centre cell, index 0).
        if i > 0 && last == Some(cell) {
            continue;
        }
        if !found.is_empty() && full(&found) {
            break;
        }
        let min = cell.align52() as f64;
        let max = Bits {
            bits: cell.bits + 1,
            step: cell.step,
        }
        .align52() as f64;
        let range = Interval::Score(ScoreRange::new(min, false, max, true));
        range.walk_forward(z, |m, score| {
            if let Some((xy, dist)) = within(shape, score) {
                found.push(Point {
                    xy,
                    dist,
                    score,
                    member: m.to_vec(),
                });
            }
            found.is_empty() || !full(&found)
        });
        last = if i > 0 { Some(cell) } else { None };
    }
    found
}

/// Sort the points as Redis does: all of them with glibc's qsort when all are returned,
/// only the first `returned` with pqsort otherwise.
pub fn sort_points(points: &mut [Point], order: Order, returned: usize) {
    let asc = |a: &Point, b: &Point| -> i32 {
        if a.dist > b.dist {
            1
        } else if a.dist == b.dist {
            0
        } else {
            -1
        }
    };
    let cmp = |a: &Point, b: &Point| match order {
        Order::Desc => -asc(a, b),
        _ => asc(a, b),
    };
    if order == Order::None {
        return;
    }
    if returned == points.len() {
        sort::qsort(points, &cmp);
    } else {
        let mut ord = |a: &Point, b: &Point| cmp(a, b).cmp(&0);
        pqsort(points, 0, returned as i64 - 1, &mut ord);
    }
}

/// Distances from meters to the request's unit.
pub fn to_unit(points: &mut [Point], conversion: f64) {
    for p in points {
        p.dist /= conversion;
    }
}
