//! One NIC, two layers: the multicast protocol underneath and Heron above post on the same
//! queue pairs and share one completion queue, as an RDMA application and its ordering library
//! do in one process. [`Layered`] is the view the multicast layer polls through: completions of
//! Heron's work requests are set aside for Heron, everything else passes through unchanged,
//! except that the lower layer also sees Heron's flushed ones: they say a queue pair both layers
//! use is in error, and the multicast protocols repair their queue pairs when they see that.

use std::collections::{BTreeSet, VecDeque};
use transport::{
    Changes, Completion, Data, LocalAddr, Nanos, Nic, NicLimits, Op, OpError, ProcessId, Recv,
    RegionTable, Rng, Status, WrId,
};

/// A NIC seen by the lower layer: completions of the work requests Heron posted are set aside
/// for Heron. A multicast server runs under Heron if it is a [`transport::Process`] on this NIC
/// (every protocol of the workspace is, for every NIC).
#[derive(Debug)]
pub struct Layered<'a, N> {
    pub(crate) nic: &'a mut N,
    pub(crate) upper: &'a mut BTreeSet<WrId>,
    pub(crate) stash: &'a mut VecDeque<Completion>,
}

impl<N: Nic> Nic for Layered<'_, N> {
    fn id(&self) -> ProcessId {
        self.nic.id()
    }
    fn regions(&self) -> &RegionTable {
        self.nic.regions()
    }
    fn processes(&self) -> usize {
        self.nic.processes()
    }
    fn now(&self) -> Nanos {
        self.nic.now()
    }
    fn rng(&mut self) -> &mut Rng {
        self.nic.rng()
    }
    fn limits(&self) -> NicLimits {
        self.nic.limits()
    }
    fn read_local(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        self.nic.read_local(at, buf)
    }
    fn write_local(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        self.nic.write_local(at, data)
    }
    fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError> {
        self.nic.load_u64(at)
    }
    fn store_u64(&mut self, at: LocalAddr, value: u64) -> Result<(), OpError> {
        self.nic.store_u64(at, value)
    }
    fn read_data(&self, at: LocalAddr, len: usize) -> Result<Data, OpError> {
        self.nic.read_data(at, len)
    }
    fn take_changes(&mut self, into: &mut Changes) {
        self.nic.take_changes(into)
    }
    fn work(&mut self, kind: transport::Work, units: u64) {
        self.nic.work(kind, units)
    }
    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        self.nic.post(op)
    }
    fn poll_completion(&mut self) -> Option<Completion> {
        loop {
            let c = self.nic.poll_completion()?;
            if !self.upper.remove(&c.wr) {
                return Some(c);
            }
            self.stash.push_back(c);
            // A flushed work request of Heron's says the queue pair it shares with the lower
            // layer is in error: the lower layer sees it too, so it reconnects the pair.
            if c.status == Status::Flushed {
                return Some(c);
            }
        }
    }
    fn poll_recv(&mut self) -> Option<Recv> {
        self.nic.poll_recv()
    }
}
