//! Networking: the acceptor threads and the worker event loops.

pub mod conn;
pub mod fdlimit;
pub mod lend;
pub mod listener;
pub mod mailbox;
pub mod stream;
pub mod tls;
pub mod tls_client;
pub mod tls_listen;
pub mod tls_stream;
pub mod worker;
