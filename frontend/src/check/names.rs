//! Statement names: user labels, and `S<k>` for the others.

use std::collections::HashSet;

/// Hands out statement names in textual order.
#[derive(Debug)]
pub struct Namer {
    /// Every name given or reserved by a label.
    taken: HashSet<String>,
    /// How many statements have been named (the `k` of the next `S<k>`).
    count: usize,
}

impl Namer {
    /// A namer that will not hand out any of `labels` except to the statement carrying it.
    pub fn new(labels: impl IntoIterator<Item = String>) -> Namer {
        Namer {
            taken: labels.into_iter().collect(),
            count: 0,
        }
    }

    /// The name of the next statement: its label, or `S<k>` (made unique).
    pub fn name(&mut self, label: Option<&str>) -> String {
        let name = match label {
            Some(l) => l.to_string(),
            None => self.unique(format!("S{}", self.count)),
        };
        self.count += 1;
        name
    }

    /// The name of the init statement of a reduction labelled `label`: `<label>_init`, or the
    /// next automatic name.
    pub fn init_name(&mut self, label: Option<&str>) -> String {
        let name = match label {
            Some(l) => self.unique(format!("{l}_init")),
            None => self.unique(format!("S{}", self.count)),
        };
        self.count += 1;
        name
    }

    /// `base`, or `base_1`, `base_2`, ... whichever is free first; then reserved.
    fn unique(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut k = 0;
        while self.taken.contains(&name) {
            k += 1;
            name = format!("{base}_{k}");
        }
        self.taken.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_names_avoid_labels() {
        let mut n = Namer::new(["S1".to_string(), "red".to_string()]);
        assert_eq!(n.name(None), "S0");
        assert_eq!(n.name(None), "S1_1");
        assert_eq!(n.init_name(Some("red")), "red_init");
        assert_eq!(n.name(Some("red")), "red");
        assert_eq!(n.name(None), "S4");
    }
}
