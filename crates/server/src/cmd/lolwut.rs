//! LOLWUT [VERSION v] [args...]: Redis 7.0.15's computer art (lolwut.c, lolwut5.c,
//! lolwut6.c). Without VERSION, or with a version other than 5 or 6, it is Redis's
//! "unstable" one: the version line only. Version 5 (Georg Nees's "Schotter") is
//! deterministic for its first two rows of squares and random below; version 6 (a
//! skyline) is random throughout: the random parts follow Redis's algorithm with another
//! random source, so only their shape matches Redis's, not their bytes.

use super::args;
use super::{Ctx, Handler};
use rand::Rng;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};

pub const COMMANDS: &[(&str, Handler)] = &[("lolwut", lolwut)];

/// C's RAND_MAX on glibc.
const RAND_MAX: i32 = i32::MAX;

/// C's rand(): 0..=RAND_MAX.
fn c_rand(rng: &mut impl Rng) -> i32 {
    rng.gen_range(0..=RAND_MAX)
}

fn lolwut(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut version = None;
    let mut rest = argv;
    if argv.len() >= 3 && args::is(argv[1], "version") {
        let v = match args::int(argv[2]) {
            Ok(v) => v,
            Err(e) => return ctx.out.error(e),
        };
        // Redis prints "%u.0.0" of the number as an unsigned int and looks at its digits.
        version = Some(v as u32);
        rest = &argv[2..];
    }
    let text = match version {
        Some(5) => schotter(rest),
        Some(6) => skyline(rest),
        _ => Ok(format!("Redis ver. {}\n", crate::REDIS_VERSION).into_bytes()),
    };
    match text {
        Ok(t) => ctx.out.verbatim(&t, "txt"),
        Err(e) => ctx.out.error(e),
    }
}

/// The optional numeric arguments after the command (or VERSION v), as getLongFromObject
/// reads them, each clamped to `1..=max` as Redis does.
fn numeric_args<const N: usize>(
    argv: &[&[u8]],
    defaults: [i64; N],
    max: [i64; N],
) -> Result<[i64; N], &'static str> {
    let mut v = defaults;
    for (i, slot) in v.iter_mut().enumerate() {
        if let Some(a) = argv.get(i + 1) {
            *slot = args::int(a)?;
        }
    }
    for (slot, m) in v.iter_mut().zip(max) {
        *slot = (*slot).clamp(1, m);
    }
    Ok(v)
}

/// lwCanvas: one byte per pixel, its colour.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

const NO_MEMORY: &str = "ERR LOLWUT canvas too large for the memory available";

impl Canvas {
    /// lwCreateCanvas; the (up to about 800 MB) pixels are allocated fallibly.
    fn new(width: i32, height: i32, bg: u8) -> Result<Canvas, &'static str> {
        let n = width.max(0) as usize * height.max(0) as usize;
        let mut pixels = Vec::new();
        pixels.try_reserve_exact(n).map_err(|_| NO_MEMORY)?;
        pixels.resize(n, bg);
        Ok(Canvas {
            width,
            height,
            pixels,
        })
    }

    fn set(&mut self, x: i32, y: i32, color: u8) {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return;
        }
        self.pixels[(x + y * self.width) as usize] = color;
    }

    fn get(&self, x: i32, y: i32) -> u8 {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return 0;
        }
        self.pixels[(x + y * self.width) as usize]
    }

    /// lwDrawLine (Bresenham).
    fn line(&mut self, mut x1: i32, mut y1: i32, x2: i32, y2: i32, color: u8) {
        let dx = (x2 - x1).abs();
        let dy = (y2 - y1).abs();
        let sx = if x1 < x2 { 1 } else { -1 };
        let sy = if y1 < y2 { 1 } else { -1 };
        let mut err = dx - dy;
        loop {
            self.set(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// lwDrawSquare, with C's float/double conversions where Redis has them.
    fn square(&mut self, x: i32, y: i32, size: f32, angle: f32, color: u8) {
        // Redis's literal, not SQRT_2: the rounding below must come out the same.
        #[allow(clippy::approx_constant)]
        let size = (f64::from(size) / 1.4142135623) as f32;
        let size = f64::from(size).round() as f32;
        let mut k = (FRAC_PI_4 + f64::from(angle)) as f32;
        let mut px = [0i32; 4];
        let mut py = [0i32; 4];
        for j in 0..4 {
            px[j] = (f64::from(k).sin() * f64::from(size) + f64::from(x)).round() as i32;
            py[j] = (f64::from(k).cos() * f64::from(size) + f64::from(y)).round() as i32;
            k = (f64::from(k) + FRAC_PI_2) as f32;
        }
        for j in 0..4 {
            self.line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], color);
        }
    }
}

/// LOLWUT VERSION 5 [cols [squares-per-row [squares-per-col]]] (lolwut5Command).
fn schotter(argv: &[&[u8]]) -> Result<Vec<u8>, &'static str> {
    let [cols, per_row, per_col] = numeric_args(argv, [66, 8, 12], [1000, 200, 200])?;
    let canvas = draw_schotter(cols as i32, per_row as i32, per_col as i32)?;
    let mut text = render_braille(&canvas);
    text.extend_from_slice(b"\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
    text.extend_from_slice(crate::REDIS_VERSION.as_bytes());
    text.push(b'\n');
    Ok(text)
}

/// lwDrawSchotter: rows of squares, turned and shifted more and more at random from the
/// third row down.
fn draw_schotter(cols: i32, per_row: i32, per_col: i32) -> Result<Canvas, &'static str> {
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Canvas::new(width, height, 0)?;
    let rng = &mut rand::thread_rng();
    // A random fraction of y / per_col, with a random sign.
    let shift =
        |rng: &mut rand::rngs::ThreadRng| c_rand(rng) as f32 / RAND_MAX as f32 / per_col as f32;
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            if y > 1 {
                let mut r = [0.0f32; 3];
                for v in r.iter_mut() {
                    *v = shift(rng) * y as f32;
                }
                for v in r.iter_mut() {
                    if c_rand(rng) % 2 != 0 {
                        *v = -*v;
                    }
                }
                angle = r[0];
                sx = (sx as f32 + r[1] * side / 3.0) as i32;
                sy = (sy as f32 + r[2] * side / 3.0) as i32;
            }
            canvas.square(sx, sy, side, angle, 1);
        }
    }
    Ok(canvas)
}

/// lolwut5's renderCanvas: each 2x4 block of pixels as one braille character (U+2800 +
/// the dot bits), lines of blocks separated by newlines (none after a last block line
/// that starts on the canvas's last row, as in Redis).
fn render_braille(canvas: &Canvas) -> Vec<u8> {
    let mut text = Vec::new();
    let on = |x, y| canvas.get(x, y) != 0;
    for y in (0..canvas.height).step_by(4) {
        for x in (0..canvas.width).step_by(2) {
            let dots = [
                (x, y),
                (x, y + 1),
                (x, y + 2),
                (x + 1, y),
                (x + 1, y + 1),
                (x + 1, y + 2),
                (x, y + 3),
                (x + 1, y + 3),
            ];
            let byte = dots
                .iter()
                .enumerate()
                .filter(|(_, &(px, py))| on(px, py))
                .fold(0u32, |b, (i, _)| b | 1 << i);
            let code = 0x2800 + byte;
            text.push(0xE0 | (code >> 12) as u8);
            text.push(0x80 | ((code >> 6) & 0x3F) as u8);
            text.push(0x80 | (code & 0x3F) as u8);
        }
        if y != canvas.height - 1 {
            text.push(b'\n');
        }
    }
    text
}

/// LOLWUT VERSION 6 [cols [rows]] (lolwut6Command).
fn skyline(argv: &[&[u8]]) -> Result<Vec<u8>, &'static str> {
    let [cols, rows] = numeric_args(argv, [80, 20], [1000, 1000])?;
    let mut canvas = Canvas::new(cols as i32, rows as i32, 3)?;
    draw_skyline(&mut canvas, &mut rand::thread_rng());
    let mut text = render_ansi(&canvas);
    text.extend_from_slice(
        b"\nDedicated to the 8 bit game developers of past and present.\n\
          Original 8 bit image from Plaguemon by hikikomori. Redis ver. ",
    );
    text.extend_from_slice(crate::REDIS_VERSION.as_bytes());
    text.push(b'\n');
    Ok(text)
}

/// lolwut6's renderCanvas: one space per pixel in its colour's ANSI escapes.
fn render_ansi(canvas: &Canvas) -> Vec<u8> {
    let mut text = Vec::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape: &[u8] = match canvas.get(x, y) {
                1 => b"0;90;100m",
                2 => b"0;37;47m",
                3 => b"0;97;107m",
                _ => b"0;30;40m",
            };
            text.extend_from_slice(b"\x1b[");
            text.extend_from_slice(escape);
            text.extend_from_slice(b" \x1b[0m");
        }
        if y != canvas.height - 1 {
            text.push(b'\n');
        }
    }
    text
}

struct Skyscraper {
    xoff: i32,
    width: i32,
    height: i32,
    windows: bool,
    color: u8,
}

/// generateSkyscraper.
fn draw_skyscraper(canvas: &mut Canvas, si: &Skyscraper, rng: &mut impl Rng) {
    let starty = canvas.height - 1;
    let endy = starty - si.height + 1;
    for y in (endy..=starty).rev() {
        for x in si.xoff..si.xoff + si.width {
            // The roof is four pixels less wide.
            if y == endy && (x <= si.xoff + 1 || x >= si.xoff + si.width - 2) {
                continue;
            }
            let mut color = si.color;
            if si.windows
                && x > si.xoff + 1
                && x < si.xoff + si.width - 2
                && y > endy + 1
                && y < starty - 1
            {
                let relx = x - (si.xoff + 1);
                let rely = y - (endy + 1);
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = 1 + (c_rand(rng) % 2) as u8;
                        if color != si.color {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.set(x, y, color);
        }
    }
}

/// generateSkyline: two rows of grey buildings behind, black ones with windows in front.
fn draw_skyline(canvas: &mut Canvas, rng: &mut impl Rng) {
    let h = canvas.height;
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += c_rand(rng) % 8;
            let width = 10 + c_rand(rng) % 9;
            let height = if color == 2 {
                h / 2 + (c_rand(rng) % h) / 2
            } else {
                h / 2 + (c_rand(rng) % h) / 3
            };
            let si = Skyscraper {
                xoff: offset,
                width,
                height,
                windows: false,
                color,
            };
            draw_skyscraper(canvas, &si, rng);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += c_rand(rng) % 8;
        let mut width = 5 + c_rand(rng) % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + (c_rand(rng) % h) / 2;
        let si = Skyscraper {
            xoff: offset,
            width,
            height,
            windows: true,
            color: 0,
        };
        draw_skyscraper(canvas, &si, rng);
        offset += width + 5;
    }
}
