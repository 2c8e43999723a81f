//! Algorithm 4: groups onto ensembles, the paper's `n + 1` mapping. A message to one group
//! `g_i` goes to ensemble `e_i`, a message to several groups to `e_all`; a process of group
//! `g_i` learns from `e_i` and `e_all` and drops what `e_all` brings that is not addressed to
//! its group. With one group no message has several destinations, so there is no `e_all`
//! (the paper's broadcast experiments, section 6.2): learners then wait on no idle ensemble.
//! Kept a value so other mappings can be tried later.

use multicast::{DestSet, GroupId};

/// An ensemble, by index: `0..groups` are the groups' own, `groups` is `e_all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnsembleId(pub u16);

/// The `n + 1` mapping of `groups` groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    groups: usize,
}

impl Mapping {
    /// The mapping of `groups` groups (`groups + 1` ensembles).
    pub fn new(groups: usize) -> Mapping {
        Mapping { groups }
    }

    /// How many ensembles there are: one per group, and `e_all` when there are several.
    pub fn ensembles(&self) -> usize {
        if self.groups > 1 {
            self.groups + 1
        } else {
            self.groups
        }
    }

    /// `e_all`.
    pub fn all(&self) -> EnsembleId {
        EnsembleId(self.groups as u16)
    }

    /// Task 1, lines 4-7: the ensemble a message to `dests` goes to; `None` for no destination.
    pub fn ensemble_of(&self, dests: DestSet) -> Option<EnsembleId> {
        let mut groups = dests.groups();
        let first = groups.next()?;
        Some(match groups.next() {
            None => EnsembleId(u16::from(first.0)),
            Some(_) => self.all(),
        })
    }

    /// Task 2: the ensembles a member of `g` learns from, in merge order (its own, then
    /// `e_all` if there is one).
    pub fn subscriptions(&self, g: GroupId) -> Vec<EnsembleId> {
        let mut subs = vec![EnsembleId(u16::from(g.0))];
        if self.groups > 1 {
            subs.push(self.all());
        }
        subs
    }

    /// Task 2: whether a message to `dests`, ensemble-delivered to a member of `g`, is
    /// delivered to it (`e_all` brings every multi-group message to every process).
    pub fn addressed(dests: DestSet, g: GroupId) -> bool {
        dests.contains(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(gs: &[u8]) -> DestSet {
        DestSet::of(gs.iter().map(|&g| GroupId(g))).unwrap()
    }

    #[test]
    fn one_group_uses_its_ensemble_several_use_e_all() {
        let m = Mapping::new(4);
        assert_eq!(m.ensembles(), 5);
        assert_eq!(m.ensemble_of(set(&[2])), Some(EnsembleId(2)));
        assert_eq!(m.ensemble_of(set(&[0, 3])), Some(EnsembleId(4)));
        assert_eq!(m.ensemble_of(DestSet::EMPTY), None);
        assert_eq!(m.subscriptions(GroupId(1)), [EnsembleId(1), EnsembleId(4)]);
        let one = Mapping::new(1);
        assert_eq!(one.ensembles(), 1);
        assert_eq!(one.subscriptions(GroupId(0)), [EnsembleId(0)]);
        assert!(Mapping::addressed(set(&[0, 3]), GroupId(3)));
        assert!(!Mapping::addressed(set(&[0, 3]), GroupId(1)));
    }
}
