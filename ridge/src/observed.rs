//! What a runner observes of a Ridge server ([`multicast::Observed`]): restarts, filled slots, its optimistic deliveries as named counters and their order, its state for a failing run's report.

use crate::RidgeServer;
use multicast::Observed;

impl Observed for RidgeServer {
    fn changed_leader(&self) -> bool {
        self.restarted()
    }
    fn refused_writes(&self) -> u64 {
        // Ridge passes messages; nothing is revoked.
        0
    }
    fn extra(&self) -> u64 {
        self.filled()
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        RidgeServer::optimistic(self).map_or_else(Vec::new, |t| t.counters().to_vec())
    }
    fn own_log(&self) -> Option<(&'static str, Vec<multicast::MsgId>)> {
        RidgeServer::optimistic_log(self).map(|l| ("optimistic", l.to_vec()))
    }
    fn state<N: transport::Nic>(&self, _nic: &N) -> String {
        self.describe()
    }
}
