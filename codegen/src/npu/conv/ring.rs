//! Rings of two flag ids between a producing and a consuming pipe: the producer waits for
//! a "free" flag before it writes a slot and sets a "full" flag after; the consumer waits
//! for "full" and sets "free" when done. Both sides name a use of the ring by a counter
//! expression, the same on both sides; its parity picks the id (strict semantics: a flag
//! holds one event, so a slot's next "full" comes only after the consumer took the last).
//! The "free" flags are set twice before the program and waited for at its end.

use npu_sim::builder::Builder;
use npu_sim::program::{Expr, Pipe};

/// A ring between two pipes on ids `base` and `base + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    /// The producing pipe.
    pub from: Pipe,
    /// The consuming pipe.
    pub to: Pipe,
    /// The first of its two flag ids.
    pub base: i64,
}

impl Ring {
    fn id(&self, k: &Expr) -> Expr {
        k.clone() % 2 + self.base
    }

    /// Both slots free, before the program.
    pub fn open(&self, b: &mut Builder) {
        b.set_flag(self.to, self.from, self.base);
        b.set_flag(self.to, self.from, self.base + 1);
    }

    /// Both slots' last "free" taken, at the program's end.
    pub fn close(&self, b: &mut Builder) {
        b.wait_flag(self.to, self.from, self.base);
        b.wait_flag(self.to, self.from, self.base + 1);
    }

    /// The producer waits until use `k`'s slot is free.
    pub fn acquire(&self, b: &mut Builder, k: &Expr) {
        b.wait_flag(self.to, self.from, self.id(k));
    }

    /// The producer hands use `k` over.
    pub fn publish(&self, b: &mut Builder, k: &Expr) {
        b.set_flag(self.from, self.to, self.id(k));
    }

    /// The consumer waits for use `k`.
    pub fn take(&self, b: &mut Builder, k: &Expr) {
        b.wait_flag(self.from, self.to, self.id(k));
    }

    /// The consumer is done with use `k`.
    pub fn release(&self, b: &mut Builder, k: &Expr) {
        b.set_flag(self.to, self.from, self.id(k));
    }
}
