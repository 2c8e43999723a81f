//! The run parameters the protocols' seeded checks ([`crate::Checkable::derive`]) draw alike,
//! each from the caller's stream. A seed's run is fixed by what the stream gives out in which
//! order: every draw here takes exactly the values its callers took when they drew it inline,
//! so each seed still derives the run it always did (the two destination draws differ only
//! in that order, which the protocols' earlier sweeps fixed).

use multicast::DestPolicy;
use transport::rng::Rng;
use transport::runtime::sim::TieBreak;
use transport::Nanos;

/// Replicas per group: 3 in seven runs of ten, else 5 (one draw).
pub fn replicas(rng: &mut Rng) -> usize {
    if rng.chance(0.7) {
        3
    } else {
        5
    }
}

/// Clients: 1 to 6 (one draw).
pub fn clients(rng: &mut Rng) -> usize {
    1 + rng.below(6) as usize
}

/// A multicast's payload: 8 to 157 bytes (one draw).
pub fn size(rng: &mut Rng) -> usize {
    8 + rng.below(150) as usize
}

/// How long faults may start for: 2 to 6 ms (one draw).
pub fn fault_phase(rng: &mut Rng) -> Nanos {
    Nanos(2_000_000 + rng.below(4_000_000))
}

/// How the simulator orders simultaneous events: at random or first in, first out, even odds
/// (one draw).
pub fn tie_break(rng: &mut Rng) -> TieBreak {
    if rng.chance(0.5) {
        TieBreak::Random
    } else {
        TieBreak::Fifo
    }
}

/// Where the clients multicast among `groups`: single, all or `random:K`, and with `mixed`
/// also `random:1..G` (where there are several groups, the count drawn per message). K (1 to
/// `groups`) is drawn after the policy, only for `random:K`.
pub fn dest_k_after(rng: &mut Rng, groups: usize, mixed: bool) -> DestPolicy {
    match rng.below(if mixed { 4 } else { 3 }) {
        0 => DestPolicy::Single,
        1 => DestPolicy::All,
        2 if mixed && groups > 1 => DestPolicy::Between(1, groups as u8),
        _ => DestPolicy::Random(1 + rng.below(groups as u64) as usize),
    }
}

/// Where the clients multicast among `groups`: single, all or `random:K`, and with `adjacent`
/// also `adjacent:K`. K (1 to `groups`) is drawn before the policy, whichever it is.
pub fn dest_k_first(rng: &mut Rng, groups: usize, adjacent: bool) -> DestPolicy {
    let k = 1 + rng.below(groups as u64) as usize;
    match rng.below(if adjacent { 4 } else { 3 }) {
        0 => DestPolicy::Single,
        1 => DestPolicy::All,
        3 => DestPolicy::Adjacent(k),
        _ => DestPolicy::Random(k),
    }
}
