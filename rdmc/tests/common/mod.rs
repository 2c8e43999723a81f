//! What RDMC's runtime tests share: a group and its members, draining a member's events and
//! reading the messages among them.

use bytes::Bytes;
use rdmc::{Algorithm, Delivered, Event, GroupConfig, RdmcNode};
use transport::{Nanos, ProcessId};

/// Every event `p` has pending, in order.
pub(crate) fn events(p: &mut RdmcNode) -> Vec<Event> {
    std::iter::from_fn(|| p.poll_event()).collect()
}

/// The bytes of every message delivered among `events`, in delivery order.
pub(crate) fn delivered(events: &[Event]) -> Vec<Bytes> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Completed {
                data: Delivered::Data(data),
                ..
            } => Some(data.to_bytes()),
            _ => None,
        })
        .collect()
}

/// Group `id` of processes p0 .. p`n-1` in racks of three, sending with `alg` in blocks of
/// `block` bytes into receive buffers of `buffer_bytes`.
pub(crate) fn racked_group(
    id: u32,
    alg: Algorithm,
    n: usize,
    block: usize,
    buffer_bytes: usize,
) -> GroupConfig {
    GroupConfig {
        id,
        members: (0..n as u32).map(ProcessId).collect(),
        algorithm: alg,
        racks: (0..n as u32).map(|i| i % 3).collect(),
        block_size: block,
        buffer_bytes,
    }
}

/// The node of each of `group`'s processes p0 .. p`n-1`, probing a silent peer every `probe`.
pub(crate) fn members(group: &GroupConfig, probe: Nanos) -> Vec<RdmcNode> {
    (0..group.members.len() as u32)
        .map(|p| RdmcNode::new(ProcessId(p), std::slice::from_ref(group), probe).unwrap())
        .collect()
}
