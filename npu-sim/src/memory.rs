//! The machine's memory: GM tensors (shared) and each core's tiers, with a record of which
//! bytes have ever been written (for the uninitialised-read check).

use crate::expand::{Pattern, Space};
use crate::machine::Machine;
use crate::program::{elements, Program, Tier};

/// Bytes and written-marks of one address space.
#[derive(Clone, Debug)]
struct Store {
    bytes: Vec<u8>,
    written: Vec<bool>,
}

impl Store {
    fn new(len: usize, initialised: bool) -> Store {
        Store {
            bytes: vec![0; len],
            written: vec![initialised; len],
        }
    }
}

/// All memory of a run.
#[derive(Clone, Debug)]
pub struct Memory {
    gm: Vec<Store>,
    cores: Vec<Vec<Store>>,
}

fn tier_slot(t: Tier) -> usize {
    Tier::ALL.iter().position(|x| *x == t).unwrap_or(0)
}

impl Memory {
    /// Memory for a program: GM tensors from `inputs` (None: zero and unwritten), tiers zero and
    /// unwritten.
    pub fn new(p: &Program, m: &Machine, inputs: Vec<Option<Vec<u8>>>) -> Memory {
        let gm = p
            .tensors
            .iter()
            .zip(inputs)
            .map(|(t, data)| {
                let len = (elements(&t.shape) * t.dtype.size()) as usize;
                match data {
                    Some(bytes) => Store {
                        written: vec![true; len],
                        bytes,
                    },
                    None => Store::new(len, false),
                }
            })
            .collect();
        let core = Tier::ALL
            .iter()
            .map(|t| Store::new(m.tier(*t).map_or(0, |s| s.capacity as usize), false))
            .collect();
        Memory {
            gm,
            cores: vec![core; m.cores as usize],
        }
    }

    fn store(&self, core: u32, space: Space) -> &Store {
        match space {
            Space::Gm(t) => &self.gm[t.0 as usize],
            Space::Tier(t) => &self.cores[core as usize][tier_slot(t)],
        }
    }

    fn store_mut(&mut self, core: u32, space: Space) -> &mut Store {
        match space {
            Space::Gm(t) => &mut self.gm[t.0 as usize],
            Space::Tier(t) => &mut self.cores[core as usize][tier_slot(t)],
        }
    }

    /// Bytes `addr..addr+len` of a space.
    pub fn read(&self, core: u32, space: Space, addr: u64, len: u64) -> &[u8] {
        &self.store(core, space).bytes[addr as usize..(addr + len) as usize]
    }

    /// Writes bytes at `addr` and marks them written.
    pub fn write(&mut self, core: u32, space: Space, addr: u64, data: &[u8]) {
        let s = self.store_mut(core, space);
        let r = addr as usize..addr as usize + data.len();
        s.bytes[r.clone()].copy_from_slice(data);
        s.written[r].fill(true);
    }

    /// The first byte of the pattern never written, if any.
    pub fn first_unwritten(&self, core: u32, space: Space, pattern: &Pattern) -> Option<u64> {
        let w = &self.store(core, space).written;
        pattern.runs().find_map(|r| {
            w[r.start as usize..r.end as usize]
                .iter()
                .position(|x| !x)
                .map(|i| r.start + i as u64)
        })
    }

    /// Whether any byte of a GM tensor holds a value (given as an input, or written).
    pub fn holds_any(&self, t: crate::program::TensorId) -> bool {
        self.gm[t.0 as usize].written.contains(&true)
    }

    /// The whole contents of a GM tensor.
    pub fn tensor(&self, t: crate::program::TensorId) -> &[u8] {
        &self.gm[t.0 as usize].bytes
    }
}
