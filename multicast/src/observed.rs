//! What a protocol's server reports to whoever runs it, beyond [`Server`](crate::Server): the
//! harness's runs sum its counters, and a checking sweep judges and tallies with the rest.
//! Each protocol implements it beside its server, so a runner names no protocol's type.

/// What a runner asks of a protocol's server beyond [`Server`](crate::Server).
pub trait Observed {
    /// Whether its group's leadership ever moved away from the initial leader through it.
    fn changed_leader(&self) -> bool;
    /// Its writes refused because it had been deposed (the revoke race).
    fn refused_writes(&self) -> u64;
    /// The protocol's own count that a checking sweep tallies under the protocol's label
    /// (RamCast's relayed messages, Ridge's filled slots).
    fn extra(&self) -> u64 {
        0
    }
    /// The protocol's own counters, by name, which a run sums over its servers (Ridge's
    /// optimistic deliveries and mistakes) and the protocol reads back.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Deliveries of a kind of its own, in order, where it kept them (runs with a delivery
    /// log), and the name of that kind (Ridge: `optimistic`): written beside the delivery log,
    /// never in it.
    fn own_log(&self) -> Option<(&'static str, Vec<crate::MsgId>)> {
        None
    }
    /// Its state in one line, for the report of a failing run.
    fn state<N: transport::Nic>(&self, nic: &N) -> String;
}
