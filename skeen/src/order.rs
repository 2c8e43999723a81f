//! Skeen's ordering at one group's server, Tasks 2-4, with no I/O at all: the server
//! ([`crate::server`]) feeds it messages and proposals and sends what it returns.
//!
//! # Timestamps
//!
//! A [`Stamp`] is the server's logical clock with its group in the low [`GROUP_BITS`] bits
//! (Lamport's tie-break by process): `stamp = clock << 6 | group`. A group's clock grows by one
//! at each proposal, so no two proposals, of any groups for any messages, carry the same stamp,
//! and since a final timestamp is one of its message's proposals no two messages share one
//! either. That makes the final stamp an order timestamp in the workbench's sense
//! ([`multicast::Delivery::order`]: the same everywhere, strictly increasing along every
//! server's deliveries). Task 4 still compares `(stamp, message id)` pairs, as the algorithm is
//! usually written; with unique stamps the id never decides.
//!
//! # Task 4, why it is safe
//!
//! A message `m` becomes deliverable at server `s` when its final stamp `F` is below the
//! current lower bound of every other message pending at `s`. The lower bound of a message `p`
//! `s` proposed for but has not finalised is the largest proposal for `p` that `s` holds (its
//! own included): `p`'s final stamp is the maximum of all proposals, so it is at least that.
//! A message `s` has not proposed for yet will get a proposal above `s`'s clock, and `s`'s clock
//! is at least `F`'s (Task 3 raises it to every final stamp before anything is delivered), so
//! its final stamp is above `F`. Hence every message `s` delivers after `m` has a larger final
//! stamp than `m`: every server delivers in final-stamp order, which is one total order.
//!
//! The pending messages sit in a [`BTreeSet`] ordered by `(lower bound, id)`; Task 4 delivers
//! from its front while the front is final.

use bytes::Bytes;
use multicast::{Delivery, DestSet, GroupId, MsgId};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

/// Bits of a [`Stamp`] that name the proposing group (enough for [`multicast::MAX_GROUPS`]).
pub const GROUP_BITS: u32 = 6;

/// A timestamp: a group's logical clock and the group, `clock << 6 | group`, compared as one
/// number (clock first, then group).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(pub u64);

/// The highest clock a proposal may carry: half of a stamp's clock bits, so that no clock a
/// proposal raises this server's to can wrap the stamps it proposes next.
pub const MAX_CLOCK: u64 = 1 << (63 - GROUP_BITS);

impl Stamp {
    /// Group `g`'s stamp at clock value `clock`.
    pub const fn new(clock: u64, g: GroupId) -> Stamp {
        Stamp(clock << GROUP_BITS | g.0 as u64)
    }

    /// The clock value.
    pub const fn clock(self) -> u64 {
        self.0 >> GROUP_BITS
    }

    /// The proposing group.
    pub const fn group(self) -> GroupId {
        GroupId((self.0 & ((1 << GROUP_BITS) - 1)) as u8)
    }
}

/// `clock.group`, e.g. `12.3`.
impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.clock(), self.group().0)
    }
}

/// A message the server holds and has not delivered.
#[derive(Clone, Debug)]
struct Entry {
    dst: DestSet,
    payload: Bytes,
    /// Groups whose proposal the server holds (its own included once it proposed).
    heard: DestSet,
    /// The largest proposal held: the message's key in the pending set, a lower bound of its
    /// final stamp, and the final stamp once every destination proposed.
    max: Stamp,
    /// Task 3 done: `max` is the final stamp.
    is_final: bool,
}

/// Why an input was ignored (it cannot come from a correct process; counted, never trusted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// A message whose destinations do not include this group, or name none.
    NotADestination,
    /// A message this server already holds or delivered.
    Duplicate,
    /// A proposal from a group that is not a destination of its message, a second one, or one
    /// whose clock is past [`MAX_CLOCK`].
    StrayProposal,
}

/// What [`Order::receive`] did with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// Task 2: the local proposal, to send to the other destinations (none for a single-group
    /// message, which is final at once).
    Proposed(Stamp),
    /// Not taken.
    Ignored(Ignored),
}

/// One group's Skeen state.
#[derive(Debug)]
pub struct Order {
    group: GroupId,
    /// The logical clock: the last proposal's, raised to every final stamp (Task 3).
    clock: u64,
    /// Messages proposed and not delivered.
    held: BTreeMap<MsgId, Entry>,
    /// Pending messages by `(lower bound, id)` (Task 4's order).
    pending: BTreeSet<(Stamp, MsgId)>,
    /// Proposals that arrived before their message (another destination's server received it
    /// first): kept, folded in when the message comes.
    early: BTreeMap<MsgId, Vec<Stamp>>,
    /// Each client's last delivered sequence number, to refuse a duplicate without keeping
    /// every id (a closed-loop client multicasts its messages one after the other).
    last_delivered: BTreeMap<u32, u64>,
    ready: VecDeque<Delivery>,
    ignored: u64,
    /// Proposals that ever arrived before their message.
    early_total: u64,
}

impl Order {
    /// Group `group`'s state, clock at 0.
    pub fn new(group: GroupId) -> Order {
        Order {
            group,
            clock: 0,
            held: BTreeMap::new(),
            pending: BTreeSet::new(),
            early: BTreeMap::new(),
            last_delivered: BTreeMap::new(),
            ready: VecDeque::new(),
            ignored: 0,
            early_total: 0,
        }
    }

    /// The group.
    pub fn group(&self) -> GroupId {
        self.group
    }

    /// The logical clock.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Messages held and not delivered yet.
    pub fn pending(&self) -> usize {
        self.held.len()
    }

    /// Proposals held for messages not received yet.
    pub fn early_proposals(&self) -> usize {
        self.early.values().map(Vec::len).sum()
    }

    /// Proposals that ever arrived before their message.
    pub fn early_total(&self) -> u64 {
        self.early_total
    }

    /// Inputs ignored so far ([`Ignored`]).
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    fn ignore(&mut self, why: Ignored) -> Ignored {
        self.ignored += 1;
        why
    }

    fn delivered_before(&self, id: MsgId) -> bool {
        self.last_delivered
            .get(&id.client)
            .is_some_and(|&seq| id.seq <= seq)
    }

    /// Task 2: message `id` to `dst` arrived from its client. The server proposes
    /// `clock + 1` (and moves its clock there) and the message is pending; a single-group
    /// message is final at once (Task 3). Proposals that came first are folded in.
    pub fn receive(&mut self, id: MsgId, dst: DestSet, payload: Bytes) -> Received {
        if !dst.contains(self.group) {
            return Received::Ignored(self.ignore(Ignored::NotADestination));
        }
        if self.held.contains_key(&id) || self.delivered_before(id) {
            return Received::Ignored(self.ignore(Ignored::Duplicate));
        }
        // Task 2: lts = clock + 1, clock := lts.
        self.clock += 1;
        let lts = Stamp::new(self.clock, self.group);
        let mut entry = Entry {
            dst,
            payload,
            heard: DestSet::of([self.group]).expect("a destination group"),
            max: lts,
            is_final: false,
        };
        for ts in self.early.remove(&id).into_iter().flatten() {
            if dst.contains(ts.group()) && !entry.heard.contains(ts.group()) {
                entry.heard = DestSet::from_bits(entry.heard.bits() | 1 << ts.group().0);
                entry.max = entry.max.max(ts);
            } else {
                self.ignored += 1;
            }
        }
        self.pending.insert((entry.max, id));
        self.held.insert(id, entry);
        self.try_finalize(id);
        self.deliver();
        Received::Proposed(lts)
    }

    /// Task 3's input: group `ts.group()`'s proposal `ts` for message `id`. Returns what was
    /// wrong with it, if anything.
    pub fn propose(&mut self, id: MsgId, ts: Stamp) -> Result<(), Ignored> {
        // A correct server's clock counts its messages and never nears the stamp's 58 bits; a
        // clock this high would wrap the next stamp below every delivered one.
        if ts.clock() >= MAX_CLOCK {
            return Err(self.ignore(Ignored::StrayProposal));
        }
        let g = ts.group();
        let Some(entry) = self.held.get_mut(&id) else {
            if self.delivered_before(id) || g == self.group {
                return Err(self.ignore(Ignored::StrayProposal));
            }
            // The message has not arrived from its client yet: this server has not proposed,
            // so nothing it delivers meanwhile can be ordered after it (see the module docs).
            self.early.entry(id).or_default().push(ts);
            self.early_total += 1;
            return Ok(());
        };
        if !entry.dst.contains(g) || entry.heard.contains(g) {
            return Err(self.ignore(Ignored::StrayProposal));
        }
        entry.heard = DestSet::from_bits(entry.heard.bits() | 1 << g.0);
        if ts > entry.max {
            // The lower bound rose: the message moves back in the pending order.
            self.pending.remove(&(entry.max, id));
            entry.max = ts;
            self.pending.insert((ts, id));
        }
        self.try_finalize(id);
        self.deliver();
        Ok(())
    }

    /// Task 3: with the proposals of every destination, the final stamp is the largest and
    /// the clock rises to it.
    fn try_finalize(&mut self, id: MsgId) {
        let entry = self.held.get_mut(&id).expect("held");
        if entry.is_final || entry.heard != entry.dst {
            return;
        }
        entry.is_final = true;
        // clock := max(clock, final): every later proposal of this group is above the final
        // stamp (Task 4's argument).
        self.clock = self.clock.max(entry.max.clock());
    }

    /// Task 4: delivers, in order, each final message whose `(final stamp, id)` is below the
    /// `(lower bound, id)` of every other pending message: the front of the pending order,
    /// while it is final.
    fn deliver(&mut self) {
        while let Some(&(ts, id)) = self.pending.first() {
            if !self.held[&id].is_final {
                break;
            }
            self.pending.pop_first();
            let entry = self.held.remove(&id).expect("held");
            let last = self.last_delivered.entry(id.client).or_insert(id.seq);
            *last = (*last).max(id.seq);
            self.ready.push_back(Delivery {
                msg: id,
                dst: entry.dst,
                payload: entry.payload,
                order: Some(ts.0),
            });
        }
    }

    /// The next delivered message, in delivery order.
    pub fn poll_delivery(&mut self) -> Option<Delivery> {
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(client: u32, seq: u64) -> MsgId {
        MsgId { client, seq }
    }

    fn dst(groups: &[u8]) -> DestSet {
        DestSet::of(groups.iter().map(|&g| GroupId(g))).unwrap()
    }

    fn drain(o: &mut Order) -> Vec<(MsgId, u64)> {
        std::iter::from_fn(|| o.poll_delivery())
            .map(|d| (d.msg, d.order.unwrap()))
            .collect()
    }

    #[test]
    fn stamps_order_by_clock_then_group() {
        let a = Stamp::new(3, GroupId(5));
        assert_eq!((a.clock(), a.group()), (3, GroupId(5)));
        assert!(
            a < Stamp::new(3, GroupId(6)) && Stamp::new(3, GroupId(63)) < Stamp::new(4, GroupId(0))
        );
        assert_eq!(a.to_string(), "3.5");
    }

    /// A proposal whose clock is past [`MAX_CLOCK`] (no correct server's) is ignored: taking it
    /// would raise this server's clock until its next stamp wrapped below delivered ones.
    #[test]
    fn a_proposal_with_a_clock_near_the_stamps_limit_is_ignored() {
        let mut o = Order::new(GroupId(0));
        let a = m(10, 0);
        assert!(matches!(
            o.receive(a, dst(&[0, 1]), Bytes::new()),
            Received::Proposed(_)
        ));
        let huge = Stamp::new(MAX_CLOCK, GroupId(1));
        assert_eq!(o.propose(a, huge), Err(Ignored::StrayProposal));
        assert_eq!(o.clock(), 1);
        assert!(o.propose(a, Stamp::new(MAX_CLOCK - 1, GroupId(1))).is_ok());
        assert_eq!(drain(&mut o).len(), 1);
        let next = m(10, 1);
        assert_eq!(
            o.receive(next, dst(&[0]), Bytes::new()),
            Received::Proposed(Stamp::new(MAX_CLOCK, GroupId(0)))
        );
    }

    /// The delivery rule: a final message waits behind a pending one whose final stamp may
    /// still come out smaller, and goes once that one is ordered after it.
    #[test]
    fn a_message_that_may_get_a_smaller_final_stamp_holds_a_final_one_back() {
        let mut o = Order::new(GroupId(0));
        // a (to groups 0 and 1) gets local proposal 1.0; b (to group 0 alone) 2.0, final.
        let a = m(10, 0);
        let b = m(11, 0);
        assert_eq!(
            o.receive(a, dst(&[0, 1]), Bytes::new()),
            Received::Proposed(Stamp::new(1, GroupId(0)))
        );
        assert_eq!(
            o.receive(b, dst(&[0]), Bytes::new()),
            Received::Proposed(Stamp::new(2, GroupId(0)))
        );
        // b is final at 2.0, but a may still end at 1.x < 2.0: b is held back.
        assert!(drain(&mut o).is_empty());
        assert_eq!(o.pending(), 2);
        // Group 1 proposes 5.1 for a: a's final stamp is 5.1 > 2.0, so b goes first, then a.
        o.propose(a, Stamp::new(5, GroupId(1))).unwrap();
        assert_eq!(
            drain(&mut o),
            vec![
                (b, Stamp::new(2, GroupId(0)).0),
                (a, Stamp::new(5, GroupId(1)).0)
            ]
        );
        // The clock rose to the final stamp: the next proposal is above it.
        assert_eq!(o.clock(), 5);
        let c = m(12, 0);
        assert_eq!(
            o.receive(c, dst(&[0]), Bytes::new()),
            Received::Proposed(Stamp::new(6, GroupId(0)))
        );
        assert_eq!(drain(&mut o).len(), 1);
    }

    /// The other way round: a pending message whose final stamp comes out smaller is
    /// delivered first, and releases the final one behind it.
    #[test]
    fn a_smaller_final_stamp_goes_first() {
        let mut o = Order::new(GroupId(1));
        let a = m(10, 0);
        let b = m(11, 0);
        o.receive(a, dst(&[0, 1]), Bytes::new()); // 1.1
        o.receive(b, dst(&[1]), Bytes::new()); // 2.1, final
        o.propose(a, Stamp::new(1, GroupId(0))).unwrap(); // a final at 1.1
        let order: Vec<MsgId> = drain(&mut o).into_iter().map(|(id, _)| id).collect();
        assert_eq!(order, vec![a, b]);
    }

    /// A proposal that beats its message is kept and folded in; a duplicate message, a
    /// stray proposal and a message to other groups are ignored and counted.
    #[test]
    fn early_proposals_are_kept_and_bad_inputs_ignored() {
        let mut o = Order::new(GroupId(0));
        let a = m(10, 0);
        o.propose(a, Stamp::new(7, GroupId(2))).unwrap();
        assert_eq!(o.early_proposals(), 1);
        assert_eq!(
            o.receive(a, dst(&[0, 2]), Bytes::new()),
            Received::Proposed(Stamp::new(1, GroupId(0)))
        );
        assert_eq!(o.early_proposals(), 0);
        assert_eq!(drain(&mut o), vec![(a, Stamp::new(7, GroupId(2)).0)]);
        assert_eq!(o.clock(), 7);
        assert_eq!(
            o.receive(a, dst(&[0, 2]), Bytes::new()),
            Received::Ignored(Ignored::Duplicate)
        );
        assert_eq!(
            o.receive(m(10, 1), dst(&[1]), Bytes::new()),
            Received::Ignored(Ignored::NotADestination)
        );
        let b = m(10, 1);
        o.receive(b, dst(&[0, 1]), Bytes::new());
        assert_eq!(
            o.propose(b, Stamp::new(3, GroupId(2))),
            Err(Ignored::StrayProposal)
        );
        o.propose(b, Stamp::new(3, GroupId(1))).unwrap();
        assert_eq!(
            o.propose(b, Stamp::new(4, GroupId(1))),
            Err(Ignored::StrayProposal)
        );
        assert_eq!(o.ignored(), 4);
        assert_eq!(drain(&mut o).len(), 1);
    }

    /// Three groups, messages to every pair, proposals delivered in a scrambled order: every
    /// group delivers the messages they share in one order, by final stamp.
    #[test]
    fn groups_agree_whatever_order_proposals_arrive_in() {
        let pairs = [[0u8, 1], [1, 2], [0, 2], [0, 1], [1, 2], [0, 2]];
        let ids: Vec<MsgId> = (0..pairs.len() as u32).map(|i| m(100 + i, 0)).collect();
        let mut groups: Vec<Order> = (0..3).map(|g| Order::new(GroupId(g))).collect();
        // Each group receives its messages in a different order (reversed for group 1).
        let mut proposals = Vec::new();
        for g in 0..3u8 {
            let mut mine: Vec<usize> = (0..ids.len()).filter(|&i| pairs[i].contains(&g)).collect();
            if g == 1 {
                mine.reverse();
            }
            for i in mine {
                match groups[g as usize].receive(ids[i], dst(&pairs[i]), Bytes::new()) {
                    Received::Proposed(ts) => proposals.push((i, g, ts)),
                    Received::Ignored(why) => panic!("{why:?}"),
                }
            }
        }
        // Proposals arrive last first.
        for &(i, from, ts) in proposals.iter().rev() {
            for &to in pairs[i].iter().filter(|&&to| to != from) {
                groups[to as usize].propose(ids[i], ts).unwrap();
            }
        }
        let logs: Vec<Vec<(MsgId, u64)>> = groups.iter_mut().map(drain).collect();
        for (g, log) in logs.iter().enumerate() {
            assert_eq!(log.len(), 4, "group {g}: {log:?}");
            assert!(
                log.windows(2).all(|w| w[0].1 < w[1].1),
                "group {g}: {log:?}"
            );
        }
        for a in 0..3 {
            for b in 0..3 {
                let common: Vec<_> = logs[a].iter().filter(|x| logs[b].contains(x)).collect();
                let common_b: Vec<_> = logs[b].iter().filter(|x| logs[a].contains(x)).collect();
                assert_eq!(common, common_b);
            }
        }
    }
}
