//! What a command's key lookups do with a key found past its TTL (Redis's
//! `expireIfNeeded` and its flags), chosen per command by the server's dispatcher.

/// What one lookup does with a key found past its TTL.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum OnExpired {
    /// Delete it (recorded `expired`, so it is propagated as a DEL): a master's way.
    #[default]
    Delete,
    /// Answer as if it were gone and leave it in place: a replica (its master's DEL
    /// deletes it), or any server while clients are paused.
    Hide,
    /// Treat it as live: a replica running its master's stream, which decides.
    Keep,
}

/// How a command's lookups treat keys past their TTL, reads and writes apart (a writable
/// replica deletes on a write's lookup, only hides on a read's).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Expiry {
    pub read: OnExpired,
    pub write: OnExpired,
}

impl Expiry {
    const fn new(read: OnExpired, write: OnExpired) -> Expiry {
        Expiry { read, write }
    }

    /// A master's: expired keys are deleted where they are met.
    pub const DELETE: Expiry = Expiry::new(OnExpired::Delete, OnExpired::Delete);
    /// A read-only replica's, or anyone's while clients are paused.
    pub const HIDE: Expiry = Expiry::new(OnExpired::Hide, OnExpired::Hide);
    /// A writable replica's: hidden on reads, deleted before a write.
    pub const HIDE_READS: Expiry = Expiry::new(OnExpired::Hide, OnExpired::Delete);
    /// The master's stream on a replica: nothing is expired.
    pub const KEEP: Expiry = Expiry::new(OnExpired::Keep, OnExpired::Keep);
}
