//! What a runner observes of a Skeen server ([`multicast::Observed`]): no leader and no revoke, so only its state for a failing run's report.

use crate::SkeenServer;
use multicast::Observed;

impl Observed for SkeenServer {
    /// Skeen has no leader.
    fn changed_leader(&self) -> bool {
        false
    }
    /// Nothing revokes anything.
    fn refused_writes(&self) -> u64 {
        0
    }
    fn state<N: transport::Nic>(&self, _nic: &N) -> String {
        self.describe()
    }
}
