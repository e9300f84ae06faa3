//! Lua scripting (EVAL, EVALSHA and their `_RO` forms, SCRIPT): the server-wide script
//! cache ([`cache`]), shebang flags ([`flags`]), one Lua 5.1 state per worker thread
//! ([`state`]) with Redis's `redis` API, libraries ([`libs`]) and sandbox, the conversions between Lua values
//! and RESP ([`convert`]), Redis's `math.random` generator ([`rand48`]), running a
//! script with its locks held ([`run`]) and the Lua debugger of SCRIPT DEBUG ([`ldb`]).

pub mod active;
pub mod busy;
pub mod cache;
pub mod call_c;
pub mod convert;
pub mod eval_globals;
pub mod flags;
pub mod functions;
pub mod functions_lua;
pub mod ldb;
pub mod libs;
pub mod raise;
pub mod rand48;
pub mod run;
pub mod state;
