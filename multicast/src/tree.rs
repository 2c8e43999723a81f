//! Overlay trees over the groups, as tree-based atomic multicast protocols (TRAM, ByzCast) use
//! them: a rooted tree given as a parent array, with the paper vocabulary computed from it, the
//! least common ancestor (lca) of a destination set and the reach of a group.
//!
//! It lives here, not in a protocol crate, because the workload needs it too: the "genuine"
//! workload of TRAM's Fig. 6 draws destinations adjacent in the tree ([`Tree::draw_adjacent`]).

use crate::{DestSet, GroupId, MAX_GROUPS};
use std::fmt;
use std::str::FromStr;
use transport::Rng;

/// A rooted tree over groups `0..len`, fixed for a run.
#[derive(Clone, PartialEq, Eq)]
pub struct Tree {
    len: u8,
    /// `parent[g]`, `u8::MAX` for the root.
    parent: Vec<u8>,
    /// `reach[g]`: the groups reachable from `g` downwards, `g` included.
    reach: Vec<u64>,
    root: u8,
}

/// Why a parent array is not a tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// The array is empty or too long.
    #[error("a tree needs 1..={MAX_GROUPS} groups, the parent array has {0} entries")]
    Size(usize),
    /// No entry is -1.
    #[error("no root: exactly one entry of the parent array must be -1")]
    NoRoot,
    /// Several entries are -1.
    #[error("groups {0} and {1} are both roots (-1): a tree has exactly one")]
    TwoRoots(usize, usize),
    /// An entry names a group that does not exist.
    #[error("the parent of group {group} is {parent}, which is not a group (0..{len}, or -1 for the root)")]
    OutOfRange {
        /// The group.
        group: usize,
        /// Its parent entry.
        parent: i64,
        /// Number of groups.
        len: usize,
    },
    /// Following parents from a group never reaches the root.
    #[error("group {0} is on a cycle of the parent array: following parents from it never reaches the root")]
    Cycle(usize),
    /// The text is not a parent array or a preset name.
    #[error("`{0}` is not a tree: use base, breadth, depth, simple, or a parent array such as [-1,0,0,1]")]
    Syntax(String),
}

/// The named trees of TRAM's Fig. 4 and its public prototype.
pub const PRESETS: [(&str, &[i64]); 4] = [
    ("base", &[-1, 0, 1, 1, 2, 2, 3, 3]),
    ("breadth", &[-1, 0, 0, 0, 0, 0, 0, 0]),
    ("depth", &[-1, 0, 1, 2, 3, 4, 5, 6]),
    ("simple", &[-1, 0, 0]),
];

impl Tree {
    /// The tree of a parent array (`-1` for the root).
    pub fn from_parents(parents: &[i64]) -> Result<Tree, TreeError> {
        let len = parents.len();
        if len == 0 || len > MAX_GROUPS {
            return Err(TreeError::Size(len));
        }
        let mut parent = vec![u8::MAX; len];
        let mut root = None;
        for (g, &p) in parents.iter().enumerate() {
            if p == -1 {
                if let Some(r) = root {
                    return Err(TreeError::TwoRoots(r, g));
                }
                root = Some(g);
            } else if p < 0 || p as usize >= len {
                return Err(TreeError::OutOfRange {
                    group: g,
                    parent: p,
                    len,
                });
            } else {
                parent[g] = p as u8;
            }
        }
        let root = root.ok_or(TreeError::NoRoot)?;
        let mut reach = vec![0u64; len];
        for g in 0..len {
            // Walk up from g: every group on the way reaches g. More than `len` steps is a cycle.
            let mut at = g;
            for step in 0..=len {
                if step == len {
                    return Err(TreeError::Cycle(g));
                }
                reach[at] |= 1 << g;
                if at == root {
                    break;
                }
                at = parent[at] as usize;
            }
        }
        Ok(Tree {
            len: len as u8,
            parent,
            reach,
            root: root as u8,
        })
    }

    /// A preset by name, if it is one.
    pub fn preset(name: &str) -> Option<Tree> {
        PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| Tree::from_parents(p).expect("presets are trees"))
    }

    /// Number of groups.
    pub fn groups(&self) -> usize {
        self.len as usize
    }

    /// The root group.
    pub fn root(&self) -> GroupId {
        GroupId(self.root)
    }

    /// The parent of `g`, `None` for the root.
    pub fn parent(&self, g: GroupId) -> Option<GroupId> {
        (g.0 != self.root).then(|| GroupId(self.parent[g.0 as usize]))
    }

    /// The children of `g`, in increasing order.
    pub fn children(&self, g: GroupId) -> impl Iterator<Item = GroupId> + '_ {
        (0..self.len)
            .filter(move |&c| c != self.root && self.parent[c as usize] == g.0)
            .map(GroupId)
    }

    /// The reach of `g`: every group reachable from `g` downwards, `g` included.
    pub fn reach(&self, g: GroupId) -> DestSet {
        DestSet::from_bits(self.reach[g.0 as usize])
    }

    /// The least common ancestor of `dst`: the group closest to the root from which every
    /// destination is reached downwards, i.e. the deepest group whose reach contains `dst`.
    pub fn lca(&self, dst: DestSet) -> GroupId {
        let want = dst.bits();
        let mut at = self.root;
        // Descend while a single child's reach still covers every destination.
        'down: loop {
            for c in self.children(GroupId(at)) {
                if self.reach[c.0 as usize] & want == want {
                    at = c.0;
                    continue 'down;
                }
            }
            return GroupId(at);
        }
    }

    /// Draws `k` groups that form a connected part of the tree (TRAM's "genuine" workload of
    /// Fig. 6, every group that orders a message is one of its destinations): a random group,
    /// grown by random neighbours (parent or child) until `k` groups.
    pub fn draw_adjacent(&self, k: usize, rng: &mut Rng) -> DestSet {
        let n = self.groups();
        let k = k.clamp(1, n);
        let mut set = 1u64 << rng.below(n as u64);
        while (set.count_ones() as usize) < k {
            let mut frontier = 0u64;
            for g in DestSet::from_bits(set).groups() {
                if let Some(p) = self.parent(g) {
                    frontier |= 1 << p.0;
                }
                for c in self.children(g) {
                    frontier |= 1 << c.0;
                }
            }
            let candidates: Vec<GroupId> = DestSet::from_bits(frontier & !set).groups().collect();
            set |= 1 << candidates[rng.below(candidates.len() as u64) as usize].0;
        }
        DestSet::from_bits(set)
    }

    /// The parent array (`-1` for the root).
    pub fn parents(&self) -> Vec<i64> {
        (0..self.len)
            .map(|g| {
                if g == self.root {
                    -1
                } else {
                    self.parent[g as usize] as i64
                }
            })
            .collect()
    }

    /// The preset name of this tree, if it is one.
    pub fn preset_name(&self) -> Option<&'static str> {
        PRESETS
            .iter()
            .find(|(_, p)| *p == self.parents().as_slice())
            .map(|(n, _)| *n)
    }
}

/// `breadth`, or `[-1,0,0,1]` for a tree that is not a preset.
impl fmt::Display for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.preset_name() {
            Some(n) => f.write_str(n),
            None => {
                let p: Vec<String> = self.parents().iter().map(|p| p.to_string()).collect();
                write!(f, "[{}]", p.join(","))
            }
        }
    }
}

impl fmt::Debug for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tree({self})")
    }
}

/// A preset name or a parent array `[-1,0,0,1]` (brackets optional).
impl FromStr for Tree {
    type Err = TreeError;
    fn from_str(s: &str) -> Result<Self, TreeError> {
        if let Some(t) = Tree::preset(s.trim()) {
            return Ok(t);
        }
        let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
        let parents: Result<Vec<i64>, _> = inner.split(',').map(|p| p.trim().parse()).collect();
        match parents {
            Ok(p) => Tree::from_parents(&p),
            Err(_) => Err(TreeError::Syntax(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(gs: &[u8]) -> DestSet {
        DestSet::of(gs.iter().map(|&g| GroupId(g))).unwrap()
    }

    #[test]
    fn lca_and_reach_of_the_base_tree() {
        let t: Tree = "base".parse().unwrap();
        assert_eq!(t.root(), GroupId(0));
        assert_eq!(t.reach(GroupId(1)), set(&[1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(t.reach(GroupId(3)), set(&[3, 6, 7]));
        assert_eq!(t.lca(set(&[6, 7])), GroupId(3));
        assert_eq!(t.lca(set(&[4, 6])), GroupId(1));
        assert_eq!(t.lca(set(&[3])), GroupId(3));
        assert_eq!(t.lca(set(&[0, 7])), GroupId(0));
        assert_eq!(
            t.children(GroupId(1)).collect::<Vec<_>>(),
            [GroupId(2), GroupId(3)]
        );
        assert_eq!(t.parent(GroupId(0)), None);
        assert_eq!(t.to_string(), "base");
        let custom: Tree = "[-1, 0, 0, 1]".parse().unwrap();
        assert_eq!(custom.to_string(), "[-1,0,0,1]");
        assert_eq!(custom.lca(set(&[2, 3])), GroupId(0));
    }

    #[test]
    fn parent_arrays_that_are_not_trees_say_why() {
        let err = |s: &str| s.parse::<Tree>().unwrap_err().to_string();
        assert!(err("[-1,2,1]").contains("cycle"), "{}", err("[-1,2,1]"));
        assert!(err("[-1,-1,0]").contains("both roots"));
        assert!(err("[0,0]").contains("no root") || err("[0,0]").contains("cycle"));
        assert!(err("[1,2,0]").contains("no root"));
        assert!(err("[-1,5]").contains("not a group"));
        assert!(err("[-1,-3]").contains("not a group"));
        assert!(err("wide").contains("not a tree"));
    }

    #[test]
    fn adjacent_destinations_are_connected_and_their_lca_is_one_of_them() {
        let mut rng = Rng::from_seed(9);
        for name in ["base", "breadth", "depth"] {
            let t = Tree::preset(name).unwrap();
            for k in 1..=8 {
                for _ in 0..40 {
                    let d = t.draw_adjacent(k, &mut rng);
                    assert_eq!(d.len(), k);
                    let lca = t.lca(d);
                    assert!(d.contains(lca), "{name} {d}");
                    // Connected: every destination but the lca has its parent in the set.
                    for g in d.groups().filter(|&g| g != lca) {
                        assert!(d.contains(t.parent(g).unwrap()), "{name} {d}");
                    }
                }
            }
        }
    }
}
