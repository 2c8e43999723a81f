//! Dissemination schedules: which block each member sends and receives at each step (section 3
//! and Appendix A). Members are indexed `0..n` in the group's member order; member 0 is the
//! root. A schedule is a pure function of `(n, blocks, member)`: each member computes only its
//! own transfers, and the same step numbers on both ends of a transfer name the same block, so
//! a receiver knows where each block lands before it arrives.
//!
//! | algorithm | steps for `k` blocks, `n` members |
//! |---|---|
//! | sequential send | `k (n - 1)` |
//! | chain send | `k + n - 2` |
//! | binomial tree | `k ceil(log2 n)` |
//! | binomial pipeline | `k + L - 1` if `n = 2^L`, else `k + L` with `L = floor(log2 n)` |
//!
//! Steps are asynchronous: a member moves to its next step when its own transfers of this step
//! are done (and, for sends, the target said it is ready), so members run ahead of each other
//! as far as their own transfers allow.

use std::collections::BTreeSet;

/// One block moving between two members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The other member (target of a send, source of a receive).
    pub peer: usize,
    /// The block.
    pub block: usize,
}

/// What one member does in one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// The block this member sends, if any.
    pub send: Option<Transfer>,
    /// The block this member receives, if any.
    pub recv: Option<Transfer>,
}

/// The dissemination algorithms of section 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// The root sends the whole message to each receiver in turn.
    Sequential,
    /// A bucket brigade: each member relays blocks to the next.
    Chain,
    /// Whole-message binomial tree: a member relays once it has everything.
    BinomialTree,
    /// Ganesan and Seshadri's binomial pipeline on a hypercube (Appendix A).
    BinomialPipeline,
    /// For racks (section 3.1): a chain among one leader per rack, then a binomial pipeline
    /// inside each rack.
    HybridChain,
    /// For racks: a binomial pipeline among the rack leaders, then one inside each rack.
    HybridPipeline,
}

impl Algorithm {
    /// Every algorithm, for sweeps.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Sequential,
        Algorithm::Chain,
        Algorithm::BinomialTree,
        Algorithm::BinomialPipeline,
        Algorithm::HybridChain,
        Algorithm::HybridPipeline,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sequential => "sequential",
            Algorithm::Chain => "chain",
            Algorithm::BinomialTree => "tree",
            Algorithm::BinomialPipeline => "pipeline",
            Algorithm::HybridChain => "hybrid-chain",
            Algorithm::HybridPipeline => "hybrid-pipeline",
        }
    }

    /// Whether the algorithm follows a rack map (the hybrids).
    pub fn uses_racks(self) -> bool {
        matches!(self, Algorithm::HybridChain | Algorithm::HybridPipeline)
    }

    /// Member `me`'s steps for a message of `blocks` blocks in a group of `n`, all in one rack.
    pub fn steps(self, n: usize, blocks: usize, me: usize) -> Vec<Step> {
        self.steps_in_racks(&vec![0; n], blocks, me)
    }

    /// Member `me`'s steps for a message of `blocks` blocks; `racks[i]` is member `i`'s rack
    /// (only the hybrid algorithms look at it).
    pub fn steps_in_racks(self, racks: &[u32], blocks: usize, me: usize) -> Vec<Step> {
        let n = racks.len();
        assert!(me < n && blocks > 0, "member {me} of {n}, {blocks} blocks");
        match self {
            Algorithm::Sequential => sequential(n, blocks, me),
            Algorithm::Chain => chain(n, blocks, me),
            Algorithm::BinomialTree => tree(n, blocks, me),
            Algorithm::BinomialPipeline => Pipeline::new(n, blocks).steps(me),
            Algorithm::HybridChain => hybrid(Algorithm::Chain, racks, blocks, me),
            Algorithm::HybridPipeline => hybrid(Algorithm::BinomialPipeline, racks, blocks, me),
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Algorithm, String> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                format!("unknown algorithm `{s}`: use one of {}", names.join(", "))
            })
    }
}

/// Section 3.1's hybrid: `leaders` among one leader per rack (the first member of each rack in
/// member order, so the root leads its rack), then a binomial pipeline inside each rack from
/// its leader. Steps are numbered alike at every member: a non-leader's list starts with the
/// leaders' phase as empty steps, so both ends of a transfer name it by the same step.
fn hybrid(leaders: Algorithm, racks: &[u32], k: usize, me: usize) -> Vec<Step> {
    let mut rack_ids: Vec<u32> = Vec::new();
    for &r in racks {
        if !rack_ids.contains(&r) {
            rack_ids.push(r);
        }
    }
    let members_of =
        |r: u32| -> Vec<usize> { (0..racks.len()).filter(|&i| racks[i] == r).collect() };
    let heads: Vec<usize> = rack_ids.iter().map(|&r| members_of(r)[0]).collect();
    let map = |steps: Vec<Step>, ids: &[usize]| -> Vec<Step> {
        steps
            .into_iter()
            .map(|s| Step {
                send: s.send.map(|t| Transfer {
                    peer: ids[t.peer],
                    block: t.block,
                }),
                recv: s.recv.map(|t| Transfer {
                    peer: ids[t.peer],
                    block: t.block,
                }),
            })
            .collect()
    };
    let phase1_len = leaders.steps(heads.len(), k, 0).len();
    let mut steps = match heads.iter().position(|&h| h == me) {
        Some(i) => map(leaders.steps(heads.len(), k, i), &heads),
        None => vec![Step::default(); phase1_len],
    };
    let rack = members_of(racks[me]);
    let pos = rack.iter().position(|&m| m == me).expect("in its rack");
    steps.extend(map(Pipeline::new(rack.len(), k).steps(pos), &rack));
    steps
}

fn sequential(n: usize, k: usize, me: usize) -> Vec<Step> {
    (0..k * (n - 1))
        .map(|s| {
            let (target, block) = (1 + s / k, s % k);
            Step {
                send: (me == 0).then_some(Transfer {
                    peer: target,
                    block,
                }),
                recv: (me == target).then_some(Transfer { peer: 0, block }),
            }
        })
        .collect()
}

fn chain(n: usize, k: usize, me: usize) -> Vec<Step> {
    let total = if n > 1 { k + n - 2 } else { 0 };
    (0..total)
        .map(|s| Step {
            // Member i sends block s - i to i + 1; it received it from i - 1 at step s - 1.
            send: (me + 1 < n && s >= me && s - me < k).then(|| Transfer {
                peer: me + 1,
                block: s - me,
            }),
            recv: (me > 0 && s + 1 >= me && s + 1 - me < k).then(|| Transfer {
                peer: me - 1,
                block: s + 1 - me,
            }),
        })
        .collect()
}

fn log2_ceil(n: usize) -> usize {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
}

fn tree(n: usize, k: usize, me: usize) -> Vec<Step> {
    (0..k * log2_ceil(n))
        .map(|s| {
            // Stage j: every member below 2^j sends the whole message to the member 2^j above.
            let (stage, block) = (s / k, s % k);
            let span = 1usize << stage;
            Step {
                send: (me < span && me + span < n).then_some(Transfer {
                    peer: me + span,
                    block,
                }),
                recv: (me >= span && me < 2 * span).then(|| Transfer {
                    peer: me - span,
                    block,
                }),
            }
        })
        .collect()
}

/// The binomial pipeline of Appendix A.
///
/// **Hypercube.** With `N = 2^L <= n < 2^(L+1)`, members `0..N` occupy the vertices of an
/// `L`-cube; each member `m >= N` shares vertex `m + 1 - N` as its twin (the root's vertex 0
/// never has one). At vertex step `t` every vertex trades with its neighbour across dimension
/// `t mod L`. Block `b` leaves the root at step `b` towards vertex `1 << (b mod L)` and
/// spreads as a binomial tree over the next `L - 1` dimensions, reaching every vertex whose
/// bit `b mod L` is set; at step `b + L` those vertices hand it across dimension `b mod L`
/// again, to the other half. So the block vertex `u` receives at step `t` follows from `u`'s
/// bits alone (rotate `u` right by `t mod L`; see `Pipeline::vertex_incoming`): no global
/// state and no gossip, and the whole message is in every vertex after `k + L - 1` steps. With
/// one block this is a binomial tree. The root keeps sending its last block once it has sent
/// them all; a vertex may receive that block twice.
///
/// **Twins.** Inside a vertex with two members, the member holding the block the vertex sends
/// in a step sends it; the other receives the vertex's incoming block and passes its twin the
/// newest block the twin lacks. When the vertex neither sends nor receives, the twins trade
/// both ways. One extra step at the end lets the twins trade their last blocks: `k + L` steps.
/// Each member works this out by following its own vertex and its neighbours' (which of the
/// two receives), never the whole group.
#[derive(Clone, Debug)]
pub struct Pipeline {
    n: usize,
    k: usize,
    log: usize,
}

/// A vertex's two members' roles in one step.
#[derive(Clone, Copy, Debug, Default)]
struct Roles {
    /// The member that sends the vertex's outgoing block.
    sender: usize,
    /// The member that receives the vertex's incoming block.
    receiver: usize,
    /// Block passed from `receiver` to `sender` (or between twins in the last step).
    pass: Option<usize>,
    /// Block passed back from `sender` to `receiver` (only when the vertex is idle).
    back: Option<usize>,
}

/// The blocks one twin holds, while following a vertex's steps.
#[derive(Clone, Debug)]
struct Held {
    has: Vec<bool>,
    count: usize,
    /// Blocks this twin holds and the other does not.
    only: BTreeSet<usize>,
}

impl Held {
    fn new(k: usize) -> Held {
        Held {
            has: vec![false; k],
            count: 0,
            only: BTreeSet::new(),
        }
    }

    /// Twin `m` of the pair gets block `x`.
    fn give(pair: &mut [Held; 2], m: usize, x: usize) {
        if pair[m].has[x] {
            return;
        }
        pair[m].has[x] = true;
        pair[m].count += 1;
        if pair[1 - m].has[x] {
            pair[1 - m].only.remove(&x);
        } else {
            pair[m].only.insert(x);
        }
    }
}

impl Pipeline {
    /// The schedule of `k` blocks in a group of `n`.
    pub fn new(n: usize, k: usize) -> Pipeline {
        let log = (usize::BITS - 1 - n.max(1).leading_zeros()) as usize;
        Pipeline { n, k, log }
    }

    fn cube(&self) -> usize {
        1 << self.log
    }

    /// Steps of the hypercube part.
    fn vertex_steps(&self) -> usize {
        if self.log == 0 {
            0
        } else {
            self.k + self.log - 1
        }
    }

    /// Total steps: `k + L - 1`, plus one when some vertex holds twins.
    pub fn total_steps(&self) -> usize {
        self.vertex_steps() + usize::from(self.n > self.cube())
    }

    fn vertex_of(&self, m: usize) -> usize {
        if m < self.cube() {
            m
        } else {
            m + 1 - self.cube()
        }
    }

    fn twin_of(&self, v: usize) -> Option<usize> {
        let t = v + self.cube() - 1;
        (v > 0 && t < self.n).then_some(t)
    }

    /// The vertex `u` receives from at step `t` and the block, if any.
    fn vertex_incoming(&self, u: usize, t: usize) -> Option<(usize, usize)> {
        let l = self.log;
        if u == 0 || t >= self.vertex_steps() {
            return None;
        }
        let i = t % l;
        let from = u ^ (1 << i);
        // u's bits, rotated so bit i comes first.
        let mask = (1usize << l) - 1;
        let rotated = ((u >> i) | (u << (l - i))) & mask;
        if rotated & 1 == 0 {
            // The other half of dimension i: block t - L, handed across again.
            return (t >= l).then(|| (from, t - l));
        }
        match (1..l).find(|j| rotated >> j & 1 == 1) {
            // Block b spreads over dimensions b+1 .. b+L-1 from vertex 1 << (b mod L): u's
            // next set bit above i names how many steps ago it left the root.
            Some(j) => (t + j >= l).then(|| (from, (t + j - l).min(self.k - 1))),
            // u = 1 << i: straight from the root.
            None => Some((from, t.min(self.k - 1))),
        }
    }

    fn vertex_outgoing(&self, v: usize, t: usize) -> Option<(usize, usize)> {
        if self.log == 0 || t >= self.vertex_steps() {
            return None;
        }
        let to = v ^ (1 << (t % self.log));
        self.vertex_incoming(to, t).map(|(_, b)| (to, b))
    }

    /// Per step, the roles of the members of vertex `v` (one entry per step).
    fn roles(&self, v: usize) -> Vec<Roles> {
        let total = self.total_steps();
        let Some(twin) = self.twin_of(v) else {
            return vec![
                Roles {
                    sender: v,
                    receiver: v,
                    ..Roles::default()
                };
                total
            ];
        };
        let (a, b) = (v, twin);
        // What each twin holds, and (for the newest block one has and the other lacks) the
        // blocks only one of them holds: O(log k) per step even for thousands of blocks.
        let mut held = [Held::new(self.k), Held::new(self.k)];
        let idx = |m: usize| usize::from(m == b);
        let mut out = Vec::with_capacity(total);
        for t in 0..total {
            let incoming = self.vertex_incoming(v, t).map(|x| x.1);
            let outgoing = self.vertex_outgoing(v, t).map(|x| x.1);
            let (sender, receiver) = match outgoing {
                Some(blk) => {
                    // The member holding the block sends it; if both do, the one with fewer
                    // blocks, so the other has something to pass.
                    let a_sends =
                        held[0].has[blk] && (!held[1].has[blk] || held[0].count <= held[1].count);
                    if a_sends {
                        (a, b)
                    } else {
                        (b, a)
                    }
                }
                // Idle outward: the member lacking the incoming block receives it.
                None => match incoming {
                    Some(blk) if held[0].has[blk] => (a, b),
                    _ => (b, a),
                },
            };
            let (s, r) = (idx(sender), idx(receiver));
            let pass = held[r].only.last().copied();
            let back = (outgoing.is_none() && incoming.is_none())
                .then(|| held[s].only.last().copied())
                .flatten();
            if let Some(x) = pass {
                Held::give(&mut held, s, x);
            }
            if let Some(x) = back {
                Held::give(&mut held, r, x);
            }
            if let Some(x) = incoming {
                Held::give(&mut held, r, x);
            }
            out.push(Roles {
                sender,
                receiver,
                pass,
                back,
            });
        }
        out
    }

    /// Member `me`'s steps.
    pub fn steps(&self, me: usize) -> Vec<Step> {
        if self.k == 1 && self.n > self.cube() {
            return self.single_block_steps(me);
        }
        self.steps_from_roles(me)
    }

    /// The step and source of the first block `me` receives, in the schedule of `self`.
    fn first_receive(steps: &[Step]) -> Option<(usize, usize)> {
        steps
            .iter()
            .enumerate()
            .find_map(|(t, s)| s.recv.map(|r| (t, r.peer)))
    }

    /// One block with twins: the transfers of the two-block schedule that carry each member's
    /// *first* block, at the same steps. Without this, a twin's single block would come from
    /// its twin in the last step, while with more blocks its first block comes from another
    /// vertex; a member must know its first block's relay before it knows the message size.
    /// These transfers form a tree rooted at member 0 (each relay received before it sends)
    /// within `L + 1` steps.
    fn single_block_steps(&self, me: usize) -> Vec<Step> {
        let two = Pipeline::new(self.n, 2);
        let mine = two.steps_from_roles(me);
        let mut steps = vec![Step::default(); self.total_steps()];
        if let Some((t, peer)) = Self::first_receive(&mine) {
            steps[t].recv = Some(Transfer { peer, block: 0 });
        }
        for (t, s) in mine.iter().enumerate() {
            let Some(tx) = s.send else { continue };
            let theirs = two.steps_from_roles(tx.peer);
            if Self::first_receive(&theirs) == Some((t, me)) {
                steps[t].send = Some(Transfer {
                    peer: tx.peer,
                    block: 0,
                });
            }
        }
        steps
    }

    fn steps_from_roles(&self, me: usize) -> Vec<Step> {
        let total = self.total_steps();
        let v = self.vertex_of(me);
        let mine = self.roles(v);
        let twin = if me == v { self.twin_of(v) } else { Some(v) };
        // Neighbour vertices' roles, for who sends to us and whom we send to: computed once
        // per neighbour and read by step (a copy per step made this quadratic in the blocks).
        let mut neighbours: Vec<(usize, Vec<Roles>)> = Vec::new();
        let mut role_at = |u: usize, t: usize| -> Roles {
            let i = match neighbours.iter().position(|(w, _)| *w == u) {
                Some(i) => i,
                None => {
                    neighbours.push((u, self.roles(u)));
                    neighbours.len() - 1
                }
            };
            neighbours[i].1[t]
        };
        let mut steps = vec![Step::default(); total];
        for (t, step) in steps.iter_mut().enumerate() {
            let r = mine[t];
            if me == r.sender {
                if let Some((to, block)) = self.vertex_outgoing(v, t) {
                    step.send = Some(Transfer {
                        peer: role_at(to, t).receiver,
                        block,
                    });
                }
                if let (Some(block), Some(tw)) = (r.pass, twin) {
                    step.recv = Some(Transfer { peer: tw, block });
                }
                if let (Some(block), Some(tw)) = (r.back, twin) {
                    step.send = Some(Transfer { peer: tw, block });
                }
            }
            if me == r.receiver {
                if let Some((from, block)) = self.vertex_incoming(v, t) {
                    step.recv = Some(Transfer {
                        peer: role_at(from, t).sender,
                        block,
                    });
                }
                if let (Some(block), Some(tw)) = (r.pass, twin) {
                    step.send = Some(Transfer { peer: tw, block });
                }
                if let (Some(block), Some(tw)) = (r.back, twin) {
                    step.recv = Some(Transfer { peer: tw, block });
                }
            }
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs every member's schedule in lock-step and checks it: every send is matched by the
    /// receive of the same block at the same step, nobody sends a block it does not hold, and
    /// every member ends with every block. Returns the steps taken and each member's first
    /// block's source.
    fn run(alg: Algorithm, n: usize, k: usize) -> (usize, Vec<Option<usize>>) {
        let all: Vec<Vec<Step>> = (0..n).map(|m| alg.steps(n, k, m)).collect();
        let total = all.iter().map(Vec::len).max().unwrap_or(0);
        let mut has = vec![vec![false; k]; n];
        has[0] = vec![true; k];
        let mut first = vec![None; n];
        let mut last_active = 0;
        for t in 0..total {
            let mut arrivals = Vec::new();
            for (m, steps) in all.iter().enumerate() {
                let Some(s) = steps.get(t) else { continue };
                if let Some(tx) = s.send {
                    assert!(
                        has[m][tx.block],
                        "{alg:?} n={n} k={k}: member {m} sends block {} it lacks at step {t}",
                        tx.block
                    );
                    let rx = all[tx.peer][t].recv;
                    assert_eq!(
                        rx,
                        Some(Transfer {
                            peer: m,
                            block: tx.block
                        }),
                        "{alg:?} n={n} k={k} step {t}: {m} -> {}",
                        tx.peer
                    );
                    arrivals.push((tx.peer, tx.block, m));
                    last_active = t + 1;
                }
                if let Some(rx) = s.recv {
                    assert_eq!(
                        all[rx.peer][t].send,
                        Some(Transfer {
                            peer: m,
                            block: rx.block
                        }),
                        "{alg:?} n={n} k={k} step {t}: {} -> {m}",
                        rx.peer
                    );
                }
            }
            for (to, block, from) in arrivals {
                if first[to].is_none() {
                    first[to] = Some(from);
                }
                has[to][block] = true;
            }
        }
        for (m, h) in has.iter().enumerate() {
            assert!(
                h.iter().all(|x| *x),
                "{alg:?} n={n} k={k}: member {m} misses blocks"
            );
        }
        (last_active, first)
    }

    #[test]
    fn every_algorithm_delivers_every_block_to_every_member() {
        for alg in Algorithm::ALL {
            for n in 1..=33 {
                for k in [1, 2, 3, 7, 16] {
                    run(alg, n, k);
                }
            }
        }
    }

    #[test]
    fn hybrid_algorithms_deliver_across_racks() {
        // Racks of uneven sizes, interleaved in member order, the root's rack not first.
        let racks = [2, 0, 1, 0, 2, 2, 1, 0, 0, 2, 1];
        for alg in [Algorithm::HybridChain, Algorithm::HybridPipeline] {
            for k in [1, 2, 5, 9] {
                let all: Vec<Vec<Step>> = (0..racks.len())
                    .map(|m| alg.steps_in_racks(&racks, k, m))
                    .collect();
                let mut has = vec![vec![false; k]; racks.len()];
                has[0] = vec![true; k];
                for t in 0..all.iter().map(Vec::len).max().unwrap() {
                    let mut arrivals = Vec::new();
                    for (m, steps) in all.iter().enumerate() {
                        if let Some(tx) = steps.get(t).and_then(|s| s.send) {
                            assert!(has[m][tx.block], "{alg:?} k={k} step {t}: {m} lacks");
                            assert_eq!(
                                all[tx.peer][t].recv,
                                Some(Transfer {
                                    peer: m,
                                    block: tx.block
                                })
                            );
                            // Inter-rack transfers only between leaders.
                            if racks[m] != racks[tx.peer] {
                                assert!(racks[..m].iter().all(|&r| r != racks[m]));
                                assert!(racks[..tx.peer].iter().all(|&r| r != racks[tx.peer]));
                            }
                            arrivals.push((tx.peer, tx.block));
                        }
                    }
                    for (to, b) in arrivals {
                        has[to][b] = true;
                    }
                }
                assert!(has.iter().all(|h| h.iter().all(|x| *x)), "{alg:?} k={k}");
            }
        }
    }

    #[test]
    fn binomial_pipeline_takes_k_plus_log_steps() {
        for n in 2..=64usize {
            let l = (usize::BITS - 1 - n.leading_zeros()) as usize;
            for k in 1..=32 {
                let (steps, _) = run(Algorithm::BinomialPipeline, n, k);
                let want = if n.is_power_of_two() {
                    k + l - 1
                } else {
                    k + l
                };
                assert_eq!(steps, want, "n={n} k={k}");
            }
        }
    }

    #[test]
    fn every_algorithms_first_relay_is_the_same_for_every_block_count() {
        // A receiver asks its first relay for its first block before it knows the size.
        let first = |alg: Algorithm, racks: &[u32], k: usize, m: usize| {
            alg.steps_in_racks(racks, k, m)
                .iter()
                .find_map(|s| s.recv.map(|r| r.peer))
        };
        for alg in Algorithm::ALL {
            for n in 2..=40usize {
                for racks in [
                    (0..n as u32).map(|i| i % 3).collect::<Vec<u32>>(),
                    (0..n as u32).map(|i| i * 4 / n as u32).collect(),
                ] {
                    for m in 1..n {
                        let one = first(alg, &racks, 1, m);
                        assert!(one.is_some(), "{alg:?} n={n} member {m} receives nothing");
                        for k in [2, 3, 7, 16] {
                            assert_eq!(first(alg, &racks, k, m), one, "{alg:?} n={n} k={k} m={m}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_members_first_block_always_comes_from_the_same_relay() {
        for n in 2..=64 {
            let (_, first) = run(Algorithm::BinomialPipeline, n, 1);
            for k in 2..=32 {
                let (_, f) = run(Algorithm::BinomialPipeline, n, k);
                assert_eq!(f, first, "n={n} k={k}");
            }
        }
    }

    #[test]
    fn one_block_pipeline_is_a_binomial_tree() {
        for n in [2, 4, 8, 16, 32] {
            for m in 0..n {
                let p = Algorithm::BinomialPipeline.steps(n, 1, m);
                let t = Algorithm::BinomialTree.steps(n, 1, m);
                // Same number of steps, and every member receives the block exactly once.
                assert_eq!(p.len(), t.len(), "n={n}");
                let recvs = p.iter().filter(|s| s.recv.is_some()).count();
                assert_eq!(recvs, usize::from(m > 0), "n={n} member {m}");
            }
        }
    }
}
