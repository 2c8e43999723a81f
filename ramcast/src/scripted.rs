//! Fixtures of the unit tests that drive a server on a scripted NIC
//! ([`transport::recording::RecordingNic`]): every process's regions, another process's writes
//! landed, a catch-up received.

use crate::stamp::Stamp;
use crate::wire::Wire;
use crate::{Config, RamcastClient, RamcastServer};
use bytes::Bytes;
use multicast::GroupId;
use transport::recording::RecordingNic;
use transport::{LocalAddr, Nic, Op, Process, ProcessId, Recv, RegionSpec, WrId};

/// The regions of every process of `cfg`: the servers of each group in rank order, then the
/// clients.
pub(crate) fn specs(cfg: &std::sync::Arc<Config>) -> Vec<Vec<RegionSpec>> {
    let servers = (0..cfg.groups).flat_map(|g| {
        (0..cfg.replicas).map(move |r| {
            Process::<RecordingNic>::regions(&RamcastServer::new(cfg.clone(), GroupId(g as u8), r))
        })
    });
    let clients = (0..cfg.clients)
        .map(|i| Process::<RecordingNic>::regions(&RamcastClient::new(cfg.clone(), i)));
    servers.chain(clients).collect()
}

/// Lands in `nic`'s memory the writes among `ops` that go to process `to`.
pub(crate) fn land_writes(ops: Vec<(WrId, Op)>, to: ProcessId, nic: &mut RecordingNic) {
    for (_, op) in ops {
        if let Op::Write { dst, data, .. } = op {
            if dst.process == to {
                let at = LocalAddr::new(dst.region, dst.offset);
                nic.write_local(at, &data.to_bytes()).unwrap();
            }
        }
    }
}

/// Makes `from`'s CATCH_UP of `round` (Task 7) arrive at `nic`.
pub(crate) fn receive_catch_up(
    nic: &mut RecordingNic,
    cfg: &Config,
    from: ProcessId,
    round: Stamp,
) {
    let catch_up = Wire::CatchUp {
        round: round.0,
        fus: vec![0; cfg.clients],
    };
    receive(nic, from, &catch_up);
}

/// Makes `from`'s message `msg` arrive at `nic`.
pub(crate) fn receive(nic: &mut RecordingNic, from: ProcessId, msg: &Wire) {
    nic.push_recv(Recv::Message {
        from,
        data: Bytes::from(msg.encode()),
    });
}
