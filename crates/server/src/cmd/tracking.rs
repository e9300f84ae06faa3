//! CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR and CLIENT TRACKINGINFO (client-side
//! caching; the machinery is [`crate::tracking`]), with Redis 7.0's checks in its order.

use super::args::{self, is, SYNTAX_ERR};
use super::{Ctx, Handler};
use crate::clients::flag;
use crate::tracking::{self, client::prefix_collision, Options};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("client|tracking", client_tracking),
    ("client|caching", caching),
    ("client|getredir", getredir),
    ("client|trackinginfo", trackinginfo),
];

/// Parse the options after ON|OFF, or reply Redis's error. The REDIRECT client must
/// exist now (it may go away later).
fn parse_options(ctx: &mut Ctx, argv: &[&[u8]]) -> Option<Options> {
    let mut o = Options::default();
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let a = argv[j];
        if is(a, "redirect") && more {
            j += 1;
            if o.redirect != 0 {
                ctx.out
                    .error("ERR A client can only redirect to a single other client");
                return None;
            }
            let id = match args::int(argv[j]) {
                Ok(id) => id,
                Err(e) => {
                    ctx.out.error(e);
                    return None;
                }
            };
            o.redirect = id as u64;
            if id <= 0 || ctx.srv.clients.get(id as u64).is_none() {
                ctx.out
                    .error("ERR The client ID you want redirect to does not exist");
                return None;
            }
        } else if is(a, "bcast") {
            o.bcast = true;
        } else if is(a, "optin") {
            o.optin = true;
        } else if is(a, "optout") {
            o.optout = true;
        } else if is(a, "noloop") {
            o.noloop = true;
        } else if is(a, "prefix") && more {
            j += 1;
            o.prefixes.push(argv[j].to_vec());
        } else {
            ctx.out.error(SYNTAX_ERR);
            return None;
        }
        j += 1;
    }
    Some(o)
}

/// Redis's checks before enabling: the options among themselves and against the mode
/// the client is in.
fn check_enable(ctx: &Ctx, o: &Options) -> Result<(), Vec<u8>> {
    let info = &ctx.client.info;
    if !o.bcast && !o.prefixes.is_empty() {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    if info.has(flag::TRACKING) && info.has(flag::TRACKING_BCAST) != o.bcast {
        return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if o.bcast && (o.optin || o.optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if o.optin && o.optout {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    if (o.optin && info.has(flag::TRACKING_OPTOUT)) || (o.optout && info.has(flag::TRACKING_OPTIN))
    {
        return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if o.bcast {
        if let Some(e) = prefix_collision(&info.tracking.prefixes(), &o.prefixes) {
            return Err(e);
        }
    }
    Ok(())
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP]
fn client_tracking(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(opts) = parse_options(ctx, argv) else {
        return;
    };
    if is(argv[2], "on") {
        if let Err(e) = check_enable(ctx, &opts) {
            return ctx.out.error_bytes(&e);
        }
        let to = match opts.redirect {
            0 => None,
            id => ctx.srv.clients.get(id),
        };
        tracking::enable(ctx.srv, &ctx.client.info, &opts, to.as_ref());
    } else if is(argv[2], "off") {
        tracking::disable(ctx.srv, &ctx.client.info);
    } else {
        return ctx.out.error(SYNTAX_ERR);
    }
    ctx.out.ok();
}

/// CLIENT CACHING YES|NO: track (OPTIN) or skip (OPTOUT) the next command's keys.
fn caching(ctx: &mut Ctx, argv: &[&[u8]]) {
    let info = &ctx.client.info;
    if !info.has(flag::TRACKING) {
        return ctx.out.error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    }
    if is(argv[2], "yes") {
        if !info.has(flag::TRACKING_OPTIN) {
            return ctx.out.error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
    } else if is(argv[2], "no") {
        if !info.has(flag::TRACKING_OPTOUT) {
            return ctx.out.error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
    } else {
        return ctx.out.error(SYNTAX_ERR);
    }
    info.set_flag(flag::TRACKING_CACHING, true);
    ctx.out.ok();
}

fn getredir(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.int(tracking::redirect_shown(&ctx.client.info));
}

/// CLIENT TRACKINGINFO: flags, redirect and prefixes, as Redis lists them.
fn trackinginfo(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let info = &ctx.client.info;
    let f = info.flags.load(std::sync::atomic::Ordering::Relaxed);
    let on = |bit: u32| f & bit != 0;
    let mut flags: Vec<&[u8]> = vec![if on(flag::TRACKING) { b"on" } else { b"off" }];
    // (mode, its name, what CLIENT CACHING set in it shows as), in Redis's order.
    for (bit, name, caching) in [
        (flag::TRACKING_BCAST, &b"bcast"[..], None),
        (flag::TRACKING_OPTIN, b"optin", Some(&b"caching-yes"[..])),
        (flag::TRACKING_OPTOUT, b"optout", Some(b"caching-no")),
        (flag::TRACKING_NOLOOP, b"noloop", None),
        (flag::TRACKING_BROKEN_REDIR, b"broken_redirect", None),
    ] {
        if on(bit) {
            flags.push(name);
            if let Some(c) = caching.filter(|_| on(flag::TRACKING_CACHING)) {
                flags.push(c);
            }
        }
    }
    let redirect = tracking::redirect_shown(info);
    let prefixes = info.tracking.prefixes();
    ctx.out.map(3);
    ctx.out.bulk(b"flags");
    ctx.out.set(flags.len());
    for fl in flags {
        ctx.out.bulk(fl);
    }
    ctx.out.bulk(b"redirect");
    ctx.out.int(redirect);
    ctx.out.bulk(b"prefixes");
    ctx.out.array(prefixes.len());
    for p in &prefixes {
        ctx.out.bulk(p);
    }
}
