//! What a runner observes of a RamCast server ([`multicast::Observed`]): leader changes, refused writes, relayed messages, its state for a failing run's report.

use crate::RamcastServer;
use multicast::Observed;

impl Observed for RamcastServer {
    fn changed_leader(&self) -> bool {
        self.current_round().time() > 0
    }
    fn refused_writes(&self) -> u64 {
        RamcastServer::refused_writes(self)
    }
    fn extra(&self) -> u64 {
        self.relayed_messages()
    }
    fn state<N: transport::Nic>(&self, nic: &N) -> String {
        format!(
            "{} | first pending: {}",
            self.describe(),
            self.describe_pending(nic)
        )
    }
}
