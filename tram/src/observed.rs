//! What a runner observes of a TRAM server ([`multicast::Observed`]): reigns, refused writes, its state for a failing run's report.

use crate::TramServer;
use multicast::Observed;

impl Observed for TramServer {
    fn changed_leader(&self) -> bool {
        // The initial leader's first reign is not a change.
        self.reigns() > 1 || (self.reigns() == 1 && !self.initial())
    }
    fn refused_writes(&self) -> u64 {
        TramServer::refused_writes(self)
    }
    fn state<N: transport::Nic>(&self, _nic: &N) -> String {
        self.describe()
    }
}
