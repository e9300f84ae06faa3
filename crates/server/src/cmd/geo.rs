//! Geo commands (geo.c): GEOADD, GEOPOS, GEODIST, GEOHASH, and the searches GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their _RO forms. Geo values are
//! sorted sets scored with 52-bit geohashes: GEOADD runs ZADD (and propagates as ZADD,
//! as Redis does), the searches walk the sorted set's score ranges. The arithmetic lives
//! in [`crate::geo`].

use super::args::{self, NOT_FLOAT, NOT_INT, SYNTAX_ERR};
use super::zsets::{self, add::zadd, parse_score, store_result};
use super::{coll, Ctx, Handler};
use crate::geo::area::{Extent, Shape};
use crate::geo::distance;
use crate::geo::format::{invalid_pair, reply_distance, reply_position};
use crate::geo::hash::{self, c_i64, LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN};
use crate::geo::search::{self, Order, Point};
use engine::coll::ZSet;
use engine::Locked;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("geoadd", geoadd),
    ("geopos", geopos),
    ("geodist", geodist),
    ("geohash", geohash),
    ("georadius", search_command),
    ("georadius_ro", search_command),
    ("georadiusbymember", search_command),
    ("georadiusbymember_ro", search_command),
    ("geosearch", search_command),
    ("geosearchstore", search_command),
];

const UNKNOWN_MEMBER: &str = "ERR could not decode requested zset member";

/// A longitude and a latitude argument (extractLongLatOrReply).
fn long_lat(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], String> {
    let lon = parse_score(lon).ok_or(NOT_FLOAT)?;
    let lat = parse_score(lat).ok_or(NOT_FLOAT)?;
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return Err(invalid_pair(lon, lat));
    }
    Ok([lon, lat])
}

/// A unit argument: meters per unit (extractUnitOrReply).
fn unit(arg: &[u8]) -> Result<f64, &'static str> {
    if args::is(arg, "m") {
        Ok(1.0)
    } else if args::is(arg, "km") {
        Ok(1000.0)
    } else if args::is(arg, "ft") {
        Ok(0.3048)
    } else if args::is(arg, "mi") {
        Ok(1609.34)
    } else {
        Err("ERR unsupported unit provided. please use M, KM, FT, MI")
    }
}

/// A number argument (getDoubleFromObjectOrReply with its own error message).
fn number(arg: &[u8], not_a_number: &'static str) -> Result<f64, &'static str> {
    parse_score(arg).ok_or(not_a_number)
}

/// `radius unit` (extractDistanceOrReply): the extent and meters per unit.
fn radius(argv: &[&[u8]]) -> Result<(Extent, f64), &'static str> {
    let r = number(argv[0], "ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative");
    }
    Ok((Extent::Radius(r), unit(argv[1])?))
}

/// `width height unit` (extractBoxOrReply).
fn bybox(argv: &[&[u8]]) -> Result<(Extent, f64), &'static str> {
    let width = number(argv[0], "ERR need numeric width")?;
    let height = number(argv[1], "ERR need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative");
    }
    Ok((Extent::Box { width, height }, unit(argv[2])?))
}

/// The position of `member` in the sorted set at `key` (None without either), read
/// without counting a keyspace hit.
fn member_position(keys: &mut Locked, key: &[u8], member: &[u8]) -> Option<[f64; 2]> {
    let z = coll::peek::<ZSet>(keys, key).ok()??;
    z.score(member).map(hash::decode_score)
}

/// GEOADD key [NX|XX] [CH] lon lat member [...]: checked, then run as ZADD with each
/// point's score (and propagated as that ZADD).
pub fn geoadd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (mut nx, mut xx) = (false, false);
    let mut longidx = 2;
    while longidx < argv.len() {
        let a = argv[longidx];
        if args::is(a, "nx") {
            nx = true;
        } else if args::is(a, "xx") {
            xx = true;
        } else if !args::is(a, "ch") {
            break;
        }
        longidx += 1;
    }
    let points = &argv[longidx..];
    if !points.len().is_multiple_of(3) || (xx && nx) {
        return ctx.out.error(SYNTAX_ERR);
    }
    let mut scores = Vec::with_capacity(points.len() / 3);
    for p in points.chunks(3) {
        match long_lat(p[0], p[1]) {
            Ok([lon, lat]) => {
                let score = hash::score_of(lon, lat).unwrap_or(0);
                scores.push(score.to_string().into_bytes());
            }
            Err(e) => return ctx.out.error(&e),
        }
    }
    let mut zargv: Vec<&[u8]> = Vec::with_capacity(longidx + scores.len() * 2);
    zargv.push(b"zadd");
    zargv.extend_from_slice(&argv[1..longidx]);
    for (score, p) in scores.iter().zip(points.chunks(3)) {
        zargv.push(score);
        zargv.push(p[2]);
    }
    let dirty = ctx.keys.changes.dirty();
    zadd(ctx, &zargv);
    if ctx.keys.changes.dirty() > dirty {
        ctx.propagate.replace(&zargv);
    }
}

/// A reply per member of the sorted set at `key` (GEOPOS, GEOHASH): `f` gets each
/// member's score, None for a missing member or key.
fn per_member(ctx: &mut Ctx, argv: &[&[u8]], f: impl Fn(&mut resp::ReplyBuf, Option<f64>)) {
    let z = match zsets::read(ctx.keys, argv[1]) {
        Ok(z) => z,
        Err(e) => return ctx.out.error(e),
    };
    ctx.out.array(argv.len() - 2);
    for m in &argv[2..] {
        f(ctx.out, z.and_then(|z| z.score(m)));
    }
}

/// GEOPOS key member [...]: each member's [lon, lat], or a null array.
pub fn geopos(ctx: &mut Ctx, argv: &[&[u8]]) {
    per_member(ctx, argv, |out, score| match score {
        Some(score) => reply_position(out, hash::decode_score(score)),
        None => out.null_array(),
    });
}

/// GEOHASH key member [...]: each member's 11-character geohash, or a null.
pub fn geohash(ctx: &mut Ctx, argv: &[&[u8]]) {
    per_member(ctx, argv, |out, score| match score {
        Some(score) => out.bulk(&hash::geohash_string(score)),
        None => out.null(),
    });
}

/// GEODIST key member1 member2 [unit].
pub fn geodist(ctx: &mut Ctx, argv: &[&[u8]]) {
    let to_meter = match argv.len() {
        5 => match unit(argv[4]) {
            Ok(u) => u,
            Err(e) => return ctx.out.error(e),
        },
        4 => 1.0,
        _ => return ctx.out.error(SYNTAX_ERR),
    };
    let z = match zsets::read(ctx.keys, argv[1]) {
        Ok(Some(z)) => z,
        Ok(None) => return ctx.out.null(),
        Err(e) => return ctx.out.error(e),
    };
    match (z.score(argv[2]), z.score(argv[3])) {
        (Some(s1), Some(s2)) => {
            let [x1, y1] = hash::decode_score(s1);
            let [x2, y2] = hash::decode_score(s2);
            reply_distance(ctx.out, distance::distance(x1, y1, x2, y2) / to_meter);
        }
        _ => ctx.out.null(),
    }
}

/// Which search command runs (georadiusGeneric's flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO] key lon lat radius unit ...
    Coords { ro: bool },
    /// GEORADIUSBYMEMBER[_RO] key member radius unit ...
    Member { ro: bool },
    /// GEOSEARCH key ... / GEOSEARCHSTORE dst key ...
    Search { store: bool },
}

impl Form {
    /// The form of the command named `name`, and the index of its source key.
    fn of(name: &[u8]) -> (Form, usize) {
        let name = name.to_ascii_lowercase();
        match &name[..] {
            b"georadius" => (Form::Coords { ro: false }, 1),
            b"georadius_ro" => (Form::Coords { ro: true }, 1),
            b"georadiusbymember" => (Form::Member { ro: false }, 1),
            b"georadiusbymember_ro" => (Form::Member { ro: true }, 1),
            b"geosearchstore" => (Form::Search { store: true }, 2),
            _ => (Form::Search { store: false }, 1),
        }
    }

    fn geosearch(self) -> bool {
        matches!(self, Form::Search { .. })
    }
    /// Do STORE/STOREDIST key take a key (GEORADIUS and GEORADIUSBYMEMBER)?
    fn store_options(self) -> bool {
        matches!(
            self,
            Form::Coords { ro: false } | Form::Member { ro: false }
        )
    }
}

/// What a search asks for, once its arguments are read.
struct Request<'a> {
    shape: Shape,
    store: Option<&'a [u8]>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    any: bool,
    count: usize,
    order: Order,
}

/// georadiusGeneric's argument reading, in its order and with its errors. Without a
/// source key (`exists` false) members are not looked up (FROMMEMBER) and
/// GEORADIUSBYMEMBER's radius is not read, as in Redis.
fn parse_search<'a>(
    keys: &mut Locked,
    argv: &[&'a [u8]],
    src: &[u8],
    exists: bool,
    form: Form,
) -> Result<Request<'a>, String> {
    let mut shape = Shape {
        extent: Extent::Radius(0.0),
        xy: [0.0, 0.0],
        conversion: 0.0,
    };
    let mut store = None;
    let base = match form {
        Form::Coords { .. } => {
            shape.xy = long_lat(argv[2], argv[3])?;
            (shape.extent, shape.conversion) = radius(&argv[4..6])?;
            6
        }
        Form::Member { .. } if !exists => 5,
        Form::Member { .. } => {
            shape.xy = member_position(keys, src, argv[2]).ok_or(UNKNOWN_MEMBER)?;
            (shape.extent, shape.conversion) = radius(&argv[3..5])?;
            5
        }
        Form::Search { store: false } => 2,
        Form::Search { store: true } => {
            store = Some(argv[1]);
            3
        }
    };
    let mut r = Request {
        shape,
        store,
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        any: false,
        count: 0,
        order: Order::None,
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox_) = (false, false, false, false);
    let opts = &argv[base.min(argv.len())..];
    let remaining = opts.len();
    let mut i = 0;
    while i < remaining {
        let a = opts[i];
        if args::is(a, "withdist") {
            r.withdist = true;
        } else if args::is(a, "withhash") {
            r.withhash = true;
        } else if args::is(a, "withcoord") {
            r.withcoord = true;
        } else if args::is(a, "any") {
            r.any = true;
        } else if args::is(a, "asc") {
            r.order = Order::Asc;
        } else if args::is(a, "desc") {
            r.order = Order::Desc;
        } else if args::is(a, "count") && i + 1 < remaining {
            let n = args::int(opts[i + 1]).map_err(|_| NOT_INT)?;
            if n <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            r.count = n as usize;
            i += 1;
        } else if (args::is(a, "store") || args::is(a, "storedist"))
            && i + 1 < remaining
            && form.store_options()
        {
            r.store = Some(opts[i + 1]);
            r.storedist = args::is(a, "storedist");
            i += 1;
        } else if args::is(a, "storedist") && form == (Form::Search { store: true }) {
            r.storedist = true;
        } else if args::is(a, "frommember") && i + 1 < remaining && form.geosearch() && !fromloc {
            if exists {
                r.shape.xy = member_position(keys, src, opts[i + 1]).ok_or(UNKNOWN_MEMBER)?;
            }
            frommember = true;
            i += 1;
        } else if args::is(a, "fromlonlat") && i + 2 < remaining && form.geosearch() && !frommember
        {
            r.shape.xy = long_lat(opts[i + 1], opts[i + 2])?;
            fromloc = true;
            i += 2;
        } else if args::is(a, "byradius") && i + 2 < remaining && form.geosearch() && !bybox_ {
            (r.shape.extent, r.shape.conversion) = radius(&opts[i + 1..i + 3])?;
            byradius = true;
            i += 2;
        } else if args::is(a, "bybox") && i + 3 < remaining && form.geosearch() && !byradius {
            (r.shape.extent, r.shape.conversion) = bybox(&opts[i + 1..i + 4])?;
            bybox_ = true;
            i += 3;
        } else {
            return Err(SYNTAX_ERR.into());
        }
        i += 1;
    }
    if r.store.is_some() && (r.withdist || r.withhash || r.withcoord) {
        let what = if form == (Form::Search { store: true }) {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ));
    }
    let name = String::from_utf8_lossy(argv[0]);
    if form.geosearch() && !(frommember || fromloc) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        ));
    }
    if form.geosearch() && !(byradius || bybox_) {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        ));
    }
    if r.any && r.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    Ok(r)
}

/// georadiusGeneric: every search command.
pub fn search_command(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (form, src_at) = Form::of(argv[0]);
    let src = argv[src_at];
    let exists = match zsets::read(ctx.keys, src) {
        Ok(z) => z.is_some(),
        Err(e) => return ctx.out.error(e),
    };
    let mut r = match parse_search(ctx.keys, argv, src, exists, form) {
        Ok(r) => r,
        Err(e) => return ctx.out.error(&e),
    };
    if !exists {
        match r.store {
            Some(dst) => store_result(ctx, dst, ZSet::new(), "del"),
            None => ctx.out.array(0),
        }
        return;
    }
    // COUNT without ANY returns the nearest ones: sorted ascending unless told otherwise.
    if r.count != 0 && r.order == Order::None && !r.any {
        r.order = Order::Asc;
    }
    let limit = if r.any { r.count } else { 0 };
    let mut points = match coll::peek::<ZSet>(ctx.keys, src) {
        Ok(Some(z)) => search::find(z, &r.shape, limit),
        _ => Vec::new(),
    };
    if points.is_empty() && r.store.is_none() {
        return ctx.out.array(0);
    }
    let returned = if r.count == 0 {
        points.len()
    } else {
        points.len().min(r.count)
    };
    search::sort_points(&mut points, r.order, returned);
    points.truncate(returned);
    search::to_unit(&mut points, r.shape.conversion);
    match r.store {
        None => reply_points(ctx, &points, &r),
        Some(dst) => store_points(ctx, dst, points, &r, form),
    }
}

fn reply_points(ctx: &mut Ctx, points: &[Point], r: &Request) {
    let options = usize::from(r.withdist) + usize::from(r.withhash) + usize::from(r.withcoord);
    ctx.out.array(points.len());
    for p in points {
        if options > 0 {
            ctx.out.array(options + 1);
        }
        ctx.out.bulk(&p.member);
        if r.withdist {
            reply_distance(ctx.out, p.dist);
        }
        if r.withhash {
            ctx.out.int(c_i64(p.score));
        }
        if r.withcoord {
            reply_position(ctx.out, p.xy);
        }
    }
}

/// The results as a sorted set at `dst` (scored by geohash, or by distance with
/// STOREDIST); `dst` is deleted when there are none. Each stored member counts in the
/// dirty counter, as in Redis.
fn store_points(ctx: &mut Ctx, dst: &[u8], points: Vec<Point>, r: &Request, form: Form) {
    let n = points.len();
    // Distinct members: the cells searched never overlap.
    let pairs: Vec<(Vec<u8>, f64)> = points
        .into_iter()
        .map(|p| (p.member, if r.storedist { p.dist } else { p.score }))
        .collect();
    let event = if form.geosearch() {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    let z = ZSet::from_pairs(pairs, &ctx.srv.config.hot.coll_limits());
    store_result(ctx, dst, z, event);
    if n > 1 {
        ctx.keys.add_dirty(n as u64 - 1);
    }
}
