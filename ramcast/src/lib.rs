//! RamCast (Le, Eslahi-Kelorazi, Coelho, Pedone; Middleware 2021): genuine atomic multicast
//! over RDMA writes, written as sans-IO state machines that run on every runtime of
//! [`transport`].
//!
//! | paper | here |
//! |---|---|
//! | Algorithm 1, data structures | [`layout`] (memory), [`server`] (local state), [`stamp`] |
//! | Algorithm 2, normal case | [`client`] (Task 1, `Relay`), [`normal`] (Tasks 2-6) |
//! | Algorithm 3, failures | [`failures`] (failure detector, Tasks 7-10), [`wire`] |
//! | section 3.7 fast path and recycling | [`normal`] (fast path), [`client`] and [`server`] (LDM, LSGM) |
//! | section 4 canaries, inlining, selective signaling | [`layout`] (slot codec), `RamcastServer::write` |
//!
//! # Choices the paper leaves open, and departures it needed
//!
//! - **Slot pointers.** The `s`-th message a client sends to group `h` uses slot `s mod slots`
//!   at every member of `h`, so `ptr[h][q]` is one number per group ([`layout`]).
//! - **Recycling.** The response write to the client carries the server's LDM; a group's LSGM
//!   is its members' lowest LDM. A client reuses a slot once the message in it was delivered by
//!   all its destinations, in every destination group (the paper's condition), so no process
//!   writes about it any more. Without checkpoints, a member that has not delivered the message
//!   holding a slot back and stays silent for `timing.evict` while a client is blocked is no
//!   longer waited for; if it was alive it finds a lapped slot and halts (it exits, and counts
//!   as faulty). We chose eviction over quorum-based recycling with state transfer: recycling
//!   at a quorum would lap every slow-but-correct member in normal operation and make state
//!   transfer part of the fast path. `evict` is how long recycling may depend on a crashed
//!   member: the sweeps draw it per seed, a third of runs at the failure detectors' scale
//!   (`relay` + 2-4 suspicion timeouts), the rest 3-10 ms; `Timing::SIM` keeps 20 ms so that
//!   overloaded runs (milliseconds of queueing) never evict a live member.
//! - **Acknowledgement banks.** Consecutive laps of a slot use alternate banks of
//!   acknowledgement words, so a late acknowledgement of the previous message never overwrites
//!   one of the current message.
//! - **Client suspicion (Task 10).** A server suspects a message's client when the message
//!   stayed undecided for `timing.relay`, doubling the timeout at each relay of the same
//!   message (up to 2^10: a message still undecided after a relay does not flood its
//!   destinations every timeout), and relays it with a two-sided message; the receiver
//!   stores it only in a slot its client may still use, so a late relay never overwrites a newer
//!   message. Relaying for a live client is safe but not free: measurements use
//!   [`Timing::MEASURE`], whose timeout is long against the queueing of a saturated run.
//! - **Task 4 forwards the round with the timestamp**, and Task 5 counts the acknowledgements of
//!   the round of the proposal it holds. Forwarding `tmp` alone lets a follower pair an old
//!   round's timestamp with acknowledgements of a new leader's different one.
//! - **Clocks see every timestamp** a server reads (any group) and every final timestamp, not
//!   only its own group's: a new leader must never propose below a timestamp some process may
//!   already have delivered.
//! - **The leader copies the message into its followers' `M` before its proposal** (same queue
//!   pair, so the copy lands first). Without it the fast path is not uniform: a client that
//!   crashed after writing only to the leader, and a leader that crashed after delivering, leave
//!   a delivered message no correct process has (the paper's proof of uniform agreement covers
//!   messages ordered by acknowledgements only). It also means a follower normally holds a
//!   message before its proposal. Not always: `M` is writable by every process, and a deposed
//!   leader's delayed copy of an entry two laps older can overwrite a newer entry of the same
//!   ring slot after the current leader's copy and proposal landed (seed 257, see below).
//! - **Task 6 also waits on proposals for messages not read yet** (`unread_bound` in
//!   `server.rs`): a member delivers no message while a `T` entry of its group below that
//!   message's final timestamp sits in a client slot it has not taken out of `M`. The paper's
//!   Task 6 looks only at messages in `M`; with the overwrite above (found by the first sweep
//!   with latency variance and software cost, seed 257) it let a member deliver past a message
//!   every other member delivered first. A member in that state now waits for the entry
//!   (delivered again by a later catch-up) instead of misordering.
//! - **Task 7 and 9 at the new leader.** The leader becomes active only once it has a quorum of
//!   replies from every group (so its clock is above every decided timestamp), proposes every
//!   pending slot again in its round (with the adopted timestamp where one may have been
//!   chosen, see "Completed rounds"), and forwards other groups' proposals again. A leader that learns another group's new leader sends it
//!   its own proposals again.
//! - **A follower acknowledges Task 9's proposals of delivered slots on the announcement.**
//!   A new leader proposes by write the slots it has not delivered; a follower that delivered
//!   one in an earlier round (with acknowledgements the new leader never got) must acknowledge
//!   it in the new round, or the new leader may lack a quorum and hold that message, and every
//!   one behind it, undelivered. Delivered slots are checked a few per poll
//!   (`sweep_delivered`), and a follower with nothing pending is polled about once per
//!   heartbeat, so that took up to `clients * slots / 4` heartbeats (17 ms, harness seed 299 of
//!   `check --protocol heron`). `Complete(round)` follows every Task 9 proposal on the same
//!   queue pair, so a follower sweeps its whole window once when it receives it ([`recovery`]).
//! - **Another group's leader forwards Task 9's proposals of delivered slots on the
//!   announcement.** Task 9 proposes by write to the leaders of the other destination groups
//!   too, and Task 4 forwards to a leader's followers only the proposals of messages it has not
//!   delivered. A leader that delivered one (with acknowledgements of the crashed leader's round
//!   that its followers did not all get) holds the new round's proposal in `T`, while its
//!   followers hold the new round's acknowledgements and the old round's proposal: they cannot
//!   order the message, nor anything behind it, until the leader forwards the proposal. The
//!   paper is silent here (its Task 4 is for MCAST messages only); this crate forwards a
//!   delivered slot's proposals by message ([`recovery`]), from the sweep over delivered slots,
//!   4 per poll, so it took `clients * slots / 4` polls (6.8 ms, harness seed 1388 of
//!   `check --protocol heron`). The new leader now sends `Complete(round)` to the other
//!   groups' leaders as well, after its Task 9 proposals on the same queue pair (and again
//!   after a reconnect, behind the proposals it re-sends), and a leader that receives it sweeps
//!   its whole window once. It does not touch the receiver's `completed`, which is about its
//!   own group.
//! - **MY_STATE reports memory, not only processed state.** Before answering CATCH_UP a server
//!   takes every entry and proposal that has landed (Protected Memory Paxos: a landed write is
//!   an accepted one).
//! - **Delivered slots are caught up by message** ([`recovery`]): a new leader proposes again
//!   the slots it delivered, with their chosen timestamps, and members acknowledge them, so a
//!   member that missed a round still orders; this travels as two-sided messages because the
//!   slots may already be reused elsewhere. An item that arrives before its slot's entry (a
//!   member waking from a pause reads the new leaders' catch-ups in any order) is kept until
//!   the entry is taken, never dropped: the new round's acknowledgements are sent once (seed
//!   3490).
//! - **Control messages survive broken queue pairs.** They are signaled; one flushed by a queue
//!   pair in error is sent again after the reconnect.
//! - **Entries are taken again just before delivery.** On real threads memory changes during a
//!   poll; a proposal read mid-poll implies entries that landed after the poll first looked.
//! - **Final timestamps (Task 5).** A group's timestamp is folded into `M[c,i].tmp` only once
//!   a quorum of the group acknowledged it in one round, as Algorithm 2 l.26-28 says: that
//!   timestamp is the group's chosen one (Paxos: every later round proposes it again). A
//!   proposal of a round superseded before a quorum took it is never folded in. Folding every
//!   proposal a server held (as this crate did before issue 11) breaks agreement on the final
//!   timestamp: a deposed leader's proposal that reached another group's leader but none of
//!   its own followers is seen by the other group only, and the next leader, which never saw
//!   it, may choose a smaller one (`normal::tests`, scenario D4 of the audit). Folding only
//!   chosen timestamps keeps `tmp` of an undecided message a lower bound of its final
//!   timestamp (the maximum of the chosen ones), which is what Task 6 needs; the price is that
//!   an undecided message with no chosen timestamp yet holds back deliveries behind it.
//! - **Failure detector.** Leaders write a heartbeat counter into their followers' `CTL`
//!   region; the next leader is the next rank ([`failures`]). Heartbeats go on the control
//!   queue pair ([`transport::Qp::Control`]), so they never queue behind message copies; a
//!   leader beats between the slots of a long poll, and a follower reads heartbeats at the
//!   start of its poll, so neither side's own busy poll looks like a dead leader. Before
//!   issue 11, 8 groups x 128 clients x 16 KB and 1 group x 32 clients x 32 KB changed every
//!   leader and ordered nothing.
//!
//! - **Completed rounds (Task 9).** Task 9 as written adopts, per slot, the highest-round
//!   proposal a quorum reports. That is Paxos, and keeps every slot's timestamp agreed, but
//!   Skeen's order needs more: a value no quorum ever saw may be adopted rounds later, below a
//!   timestamp an intermediate round already delivered without knowing the message
//!   (`tests/sim.rs`, `a_stale_rounds_timestamp_is_never_adopted_below_a_delivered_one`). So a
//!   new leader, after posting every proposal of its Task 9 (and queuing the catch-up of its
//!   delivered slots), sends each follower `Complete(round)` before any fresh timestamp; a
//!   follower keeps the highest such round, `completed`, and MY_STATE reports it. Task 9 then
//!   adopts a value only if its round is at least the highest `completed` among the replies of
//!   its own group, and proposes a fresh timestamp otherwise. Why this is safe: a member that
//!   reports `completed = R` received `Complete(R)` from R's leader on the queue pair that
//!   carried that leader's Task 9 proposals before it (a refused proposal puts the pair in
//!   error and flushes the announcement), so it holds every value round R adopted, at round R
//!   or higher; a value older than R is therefore one R's quorum did not report, so no quorum
//!   accepted it before R, and none can after: it was never chosen and a fresh timestamp is
//!   allowed. Why this is enough: a fresh timestamp of round R that some process delivered was
//!   accepted by a quorum after the announcement landed, so any later quorum includes a member
//!   reporting `completed >= R` and the stale value is replaced by one above the new leader's
//!   clock. Two details make "landed before" mean "reported": a member answers CATCH_UP only
//!   after handling every message received before it moved `T`'s permission, and proposals go
//!   out in timestamp order (Task 9's first), so a follower that holds a proposal holds every
//!   smaller one of its leader's. After a reconnect the follower is owed the announcement
//!   again, behind the re-sent proposals.
//! - **Scans skip slots that did not change (simulation speed only).** Every poll reads each
//!   client's next slot of `M`, the `T` entries and acknowledgements of each pending slot, and a
//!   few delivered slots. On the simulator, which says exactly which bytes landed
//!   ([`transport::Nic::take_changes`]), a scan skips a slot whose memory, state and server
//!   fields (role, rounds, leaders) are unchanged since it last looked: it would have read the
//!   same words and decided nothing. Elsewhere every poll scans everything. The modelled CPU
//!   cost of a poll is unchanged and runs are identical event for event with and without the
//!   hint (`harness check --check-determinism` runs each seed both ways). Module `rescan`.
//! - **Work reports** ([`transport::Work`], priced by the simulator's software profile): a
//!   `Scan` per client's next slot in each pass over the buffers, per pending slot in each pass
//!   of Tasks 3-5 and per delivered slot swept, whatever the hint skips; a `Decode` and a
//!   `Copy` of its bytes per entry taken out of `M`; an `Order` when a message becomes ORDERED
//!   (the fast path included); a `Scan` per unread client slot looked at once per delivery
//!   pass (Task 6's `unread_bound`); a `Deliver` per delivery. A client reports a `Copy` of each
//!   entry it encodes (once per destination group) and a `Scan` per server's response pair in
//!   each poll.
//!
//! # Known limits
//! - One multicast in flight per client (the papers' closed-loop clients).
//! - No state transfer: a member excluded from recycling halts instead of catching up.
//! - Under the software profile `none` (every figure so far) the simulator charges no
//!   per-message software cost, unlike the paper's Java prototype; see
//!   `results/ramcast-fig4/summary.md`. Other profiles price the work reports above.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
pub mod config;
pub mod failures;
pub mod layout;
pub mod normal;
pub mod recovery;
mod rescan;
#[cfg(test)]
mod scripted;
pub mod server;
pub mod stamp;
pub mod wire;

/// The hardware profile of RamCast's testbed, on which its runs and checks default: CloudLab
/// xl170 nodes, ConnectX-4 (RamCast section 5).
pub const TESTBED: &str = "xl170-cx4";
/// Seeded checking runs of the protocol under injected faults (`harness check`), and the
/// runs that once failed, pinned as lines ([`sweep`]).
#[cfg(any(test, feature = "check"))]
pub mod check;
mod observed;
pub use client::RamcastClient;
pub use config::{Config, ConfigError, Timing};
pub use server::RamcastServer;
pub use stamp::Stamp;

use multicast::{LoadSpec, Node};

/// A RamCast process of a run.
pub type RamcastNode = Node<RamcastServer, RamcastClient>;

/// Every process of a run of `cfg`, servers first then closed-loop clients running `load`;
/// client `i`'s workload stream derives from `seed`. `log` keeps deliveries and multicasts for
/// the delivery log.
pub fn nodes(cfg: &Config, load: LoadSpec, seed: u64, log: bool) -> Vec<RamcastNode> {
    multicast::deploy(cfg, load, seed, log, RamcastServer::new, RamcastClient::new)
}
