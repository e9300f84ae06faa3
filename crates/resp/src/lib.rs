//! RESP protocol codec for Skein.
//!
//! * [`parse`]: incremental, zero-copy parsing of client requests (multibulk and inline),
//!   with Redis 7.0's limits and protocol error texts.
//! * [`encode`]: replies for RESP2 and RESP3.
//! * [`fmt`]: number formatting byte-compatible with Redis.

pub mod encode;
pub mod fmt;
pub mod parse;

pub use encode::{Proto, ReplyBuf};
pub use parse::{Limits, Parsed, ProtocolError, RequestParser};
