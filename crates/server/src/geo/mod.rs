//! Geo values: points stored in sorted sets, each scored with its 52-bit interleaved
//! geohash, as Redis 7.0 does it (geo.c, geohash.c, geohash_helper.c). The arithmetic is
//! Redis's, operation for operation, so that scores, positions, distances and search
//! results agree with Redis's to the last digit: the geohash bits ([`hash`]), distances
//! on the sphere ([`distance`]), the cells a search covers ([`area`]), walking a sorted
//! set's cells ([`search`]), glibc's qsort ([`sort`]) and its number formats
//! ([`format`]). The commands are `cmd::geo`.

pub mod area;
pub mod distance;
pub mod format;
pub mod hash;
pub mod search;
pub mod sort;
