//! The real verbs (feature `rdma`): [`crate::provider`]'s traits over the `sideway` crate, which
//! calls rdma-core's libibverbs. Nothing but the library calls lives here: which device, which
//! attributes and what an error means are decided above the seam, in code the fake fabric
//! ([`crate::fake`]) also runs.

use crate::access::Rights;
use crate::provider::{
    self, Address, AtomicCap, DeviceCaps, GidEntry, GidKind, LinkLayer, PortInfo, QpCaps, RecvWr,
    Src, Transition, VerbsError, Wc, Wr,
};
use sideway::ibverbs::address::{AddressHandleAttribute, Gid, GidType};
use sideway::ibverbs::completion::{BasicCompletionQueue, PollCompletionQueueError};
use sideway::ibverbs::device::{DeviceInfo as _, DeviceList};
use sideway::ibverbs::device_context::{
    AtomicCapability, DeviceContext, LinkLayer as SwLinkLayer, Mtu, PortState,
};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    BasicQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, QueuePairType,
    SetInlineData, SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;
use std::fmt;
use std::net::Ipv6Addr;
use std::sync::Arc;
use transport::runtime::shared_memory::Words;

/// The OS error number somewhere in `e`'s chain of causes (sideway wraps the `io::Error` of
/// every failed verb; its own messages drop the number). Some of its error kinds are
/// `#[error(transparent)]` over the `io::Error`, which hides it from `source()` but not from
/// their text: `... (os error N)`.
fn errno(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return io.raw_os_error();
        }
        if let Some(n) = os_error_in(&c.to_string()) {
            return Some(n);
        }
        cause = c.source();
    }
    None
}

/// `N` of the last `(os error N)` in `text`, as `io::Error` writes it.
fn os_error_in(text: &str) -> Option<i32> {
    let at = text.rfind("(os error ")?;
    let rest = &text[at + "(os error ".len()..];
    rest[..rest.find(')')?].parse().ok()
}

/// A [`VerbsError`] of `verb` from sideway's error `e`, keeping its errno and its message.
fn failed(verb: &'static str, e: impl std::error::Error + 'static, detail: String) -> VerbsError {
    let detail = if detail.is_empty() {
        e.to_string()
    } else {
        format!("{detail}: {e}")
    };
    VerbsError::new(verb, errno(&e), detail)
}

/// The devices rdma-core finds on this host.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sideway;

impl provider::Provider for Sideway {
    type Ctx = Ctx;

    fn devices(&self) -> Result<Vec<String>, VerbsError> {
        let list =
            DeviceList::new().map_err(|e| failed("ibv_get_device_list", e, String::new()))?;
        Ok(list.iter().map(|d| d.name()).collect())
    }

    fn open(&self, name: &str) -> Result<Ctx, VerbsError> {
        let list =
            DeviceList::new().map_err(|e| failed("ibv_get_device_list", e, String::new()))?;
        let device = list
            .iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| VerbsError::new("ibv_open_device", None, format!("no device {name}")))?;
        let ctx = device
            .open()
            .map_err(|e| failed("ibv_open_device", e, name.to_string()))?;
        let pd = ctx
            .alloc_pd()
            .map_err(|e| failed("ibv_alloc_pd", e, name.to_string()))?;
        Ok(Ctx { pd, ctx })
    }

    fn memlock_limit(&self) -> Option<u64> {
        crate::rdma::memlock_limit()
    }
}

/// An opened device and the node's protection domain on it.
pub struct Ctx {
    // The domain goes before the context it was allocated on.
    pd: Arc<ProtectionDomain>,
    ctx: Arc<DeviceContext>,
}

/// A registration.
pub struct Mr(Arc<MemoryRegion>);

/// A completion queue.
pub struct Cq(Arc<BasicCompletionQueue>);

/// An RC queue pair.
pub struct Qp(BasicQueuePair);

// sideway's handles are opaque: what identifies each is enough to debug by.
impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx").finish_non_exhaustive()
    }
}

impl fmt::Debug for Mr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mr").field("lkey", &self.0.lkey()).finish()
    }
}

impl fmt::Debug for Cq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cq").finish_non_exhaustive()
    }
}

impl fmt::Debug for Qp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Qp")
            .field("qpn", &self.0.qp_number())
            .finish()
    }
}

fn mtu_bytes(m: Mtu) -> u32 {
    match m {
        Mtu::Mtu256 => 256,
        Mtu::Mtu512 => 512,
        Mtu::Mtu1024 => 1024,
        Mtu::Mtu2048 => 2048,
        Mtu::Mtu4096 => 4096,
    }
}

fn mtu_of(bytes: u32) -> Mtu {
    match bytes {
        ..=256 => Mtu::Mtu256,
        257..=512 => Mtu::Mtu512,
        513..=1024 => Mtu::Mtu1024,
        1025..=2048 => Mtu::Mtu2048,
        _ => Mtu::Mtu4096,
    }
}

/// A registration's flags: local write always (reads and atomics land in it), plus `rights`.
fn flags_of(rights: Rights) -> AccessFlags {
    let mut f = AccessFlags::LocalWrite;
    if rights.read() {
        f |= AccessFlags::RemoteRead;
    }
    if rights.write() {
        f |= AccessFlags::RemoteWrite;
    }
    if rights.atomic() {
        f |= AccessFlags::RemoteAtomic;
    }
    f
}

/// A queue pair's access flags: only the remote bits mean anything there.
fn qp_flags_of(rights: Rights) -> AccessFlags {
    flags_of(rights) & !AccessFlags::LocalWrite
}

impl provider::Context for Ctx {
    type Mr = Mr;
    type Cq = Cq;
    type Qp = Qp;

    fn query_device(&self) -> Result<DeviceCaps, VerbsError> {
        let a = self
            .ctx
            .query_device()
            .map_err(|e| failed("ibv_query_device", e, String::new()))?;
        let count = |v: i32| v.max(0) as u32;
        Ok(DeviceCaps {
            phys_port_cnt: a.phys_port_cnt(),
            max_qp: count(a.max_qp()),
            max_qp_wr: count(a.max_qp_wr()),
            max_sge: count(a.max_sge()),
            max_cq: count(a.max_cq()),
            max_cqe: count(a.max_cqe()),
            max_mr: count(a.max_mr()),
            max_mr_size: a.max_mr_size(),
            max_qp_rd_atom: count(a.max_qp_rd_atom()),
            max_qp_init_rd_atom: count(a.max_qp_init_rd_atom()),
            atomic_cap: match a.atomic_capability() {
                AtomicCapability::None => AtomicCap::None,
                AtomicCapability::HostChannelAdapter => AtomicCap::Hca,
                AtomicCapability::Global => AtomicCap::Glob,
            },
            max_inline: u32::MAX,
            firmware: a.firmware_version(),
        })
    }

    fn query_port(&self, port: u8) -> Result<PortInfo, VerbsError> {
        let p = self
            .ctx
            .query_port(port)
            .map_err(|e| failed("ibv_query_port", e, format!("port {port}")))?;
        Ok(PortInfo {
            active: p.port_state() == PortState::Active,
            state: format!("{:?}", p.port_state()),
            link_layer: if p.link_layer() == SwLinkLayer::Ethernet {
                LinkLayer::Ethernet
            } else {
                LinkLayer::InfiniBand
            },
            active_mtu: mtu_bytes(p.active_mtu()),
            lid: p.lid(),
        })
    }

    fn query_gid(&self, port: u8, index: u32) -> Result<[u8; 16], VerbsError> {
        let gid = self
            .ctx
            .query_gid(port, index)
            .map_err(|e| failed("ibv_query_gid", e, format!("port {port} index {index}")))?;
        Ok(Ipv6Addr::from(gid).octets())
    }

    fn gid_table(&self) -> Result<Vec<GidEntry>, VerbsError> {
        let table = self
            .ctx
            .query_gid_table()
            .map_err(|e| failed("ibv_query_gid_table", e, String::new()))?;
        Ok(table
            .iter()
            .map(|e| GidEntry {
                port: e.port_num() as u8,
                index: e.gid_index(),
                gid: Ipv6Addr::from(e.gid()).octets(),
                kind: if e.gid_type() == GidType::RoceV2 {
                    GidKind::RoceV2
                } else {
                    GidKind::IbOrRoceV1
                },
            })
            .collect())
    }

    fn reg_mr(&self, mem: &Words, remote: Rights) -> Result<Mr, VerbsError> {
        // SAFETY: `mem` is a heap allocation of `mem.capacity()` bytes that the caller keeps, at
        // the same address, for as long as the registration (the trait's contract).
        unsafe { self.pd.reg_mr(mem.addr(), mem.capacity(), flags_of(remote)) }
            .map(Mr)
            .map_err(|e| failed("ibv_reg_mr", e, format!("{} bytes", mem.capacity())))
    }

    fn create_cq(&self, cqe: u32) -> Result<Cq, VerbsError> {
        self.ctx
            .create_cq_builder()
            .setup_cqe(cqe)
            .build()
            .map(Cq)
            .map_err(|e| failed("ibv_create_cq", e, format!("{cqe} entries")))
    }

    fn create_qp(&self, cq: &Cq, caps: QpCaps) -> Result<Qp, VerbsError> {
        self.pd
            .create_qp_builder()
            .setup_qp_type(QueuePairType::ReliableConnection)
            .setup_max_send_wr(caps.max_send_wr)
            .setup_max_recv_wr(caps.max_recv_wr)
            .setup_max_send_sge(1)
            .setup_max_recv_sge(1)
            .setup_max_inline_data(caps.max_inline)
            .setup_send_cq(cq.0.clone())
            .setup_recv_cq(cq.0.clone())
            .build()
            .map(Qp)
            .map_err(|e| failed("ibv_create_qp", e, format!("{caps:?}")))
    }
}

impl provider::MemoryRegion for Mr {
    fn lkey(&self) -> u32 {
        self.0.lkey()
    }

    fn rkey(&self) -> u32 {
        self.0.rkey()
    }
}

impl provider::CompletionQueue for Cq {
    fn poll(&self, out: &mut Vec<Wc>) -> Result<(), VerbsError> {
        loop {
            match self.0.start_poll() {
                Ok(poller) => out.extend(poller.map(|wc| Wc {
                    id: wc.wr_id(),
                    status: wc.status(),
                    byte_len: wc.byte_len(),
                })),
                Err(PollCompletionQueueError::CompletionQueueEmpty) => return Ok(()),
                Err(e) => return Err(failed("ibv_poll_cq", e, String::new())),
            }
        }
    }
}

/// The address handle of `a`.
fn address_handle(a: &Address) -> AddressHandleAttribute {
    let mut ah = AddressHandleAttribute::new();
    ah.setup_dest_lid(a.dest_lid)
        .setup_port(a.port)
        .setup_service_level(0)
        .setup_grh_src_gid_index(a.sgid_index as u8)
        .setup_grh_dest_gid(&Gid::from(Ipv6Addr::from(a.dgid)))
        .setup_grh_hop_limit(a.hop_limit);
    ah
}

/// The attributes of `t` (its state and exactly the masks the specification requires for it).
fn attributes(t: &Transition) -> QueuePairAttribute {
    let mut attr = QueuePairAttribute::new();
    match *t {
        Transition::Init { port, access } => {
            attr.setup_state(QueuePairState::Init)
                .setup_pkey_index(0)
                .setup_port(port)
                .setup_access_flags(qp_flags_of(access));
        }
        Transition::Rtr {
            path_mtu,
            dest_qpn,
            rq_psn,
            max_dest_rd_atomic,
            min_rnr_timer,
            address,
        } => {
            attr.setup_state(QueuePairState::ReadyToReceive)
                .setup_path_mtu(mtu_of(path_mtu))
                .setup_dest_qp_num(dest_qpn)
                .setup_rq_psn(rq_psn)
                .setup_max_dest_read_atomic(max_dest_rd_atomic)
                .setup_min_rnr_timer(min_rnr_timer)
                .setup_address_vector(&address_handle(&address));
        }
        Transition::Rts {
            sq_psn,
            timeout,
            retry_cnt,
            rnr_retry,
            max_rd_atomic,
        } => {
            attr.setup_state(QueuePairState::ReadyToSend)
                .setup_sq_psn(sq_psn)
                .setup_timeout(timeout)
                .setup_retry_cnt(retry_cnt)
                .setup_rnr_retry(rnr_retry)
                .setup_max_read_atomic(max_rd_atomic);
        }
        Transition::Access(rights) => {
            attr.setup_access_flags(qp_flags_of(rights));
        }
        Transition::Error => {
            attr.setup_state(QueuePairState::Error);
        }
        Transition::Reset => {
            attr.setup_state(QueuePairState::Reset);
        }
    }
    attr
}

impl provider::QueuePair for Qp {
    fn qp_num(&self) -> u32 {
        self.0.qp_number()
    }

    fn modify(&mut self, t: &Transition) -> Result<(), VerbsError> {
        self.0
            .modify(&attributes(t))
            .map_err(|e| failed("ibv_modify_qp", e, format!("{t:?}")))
    }

    fn post_send(&mut self, id: u64, signaled: bool, wr: Wr<'_>) -> Result<(), VerbsError> {
        let mut flags = WorkRequestFlags::none();
        if signaled {
            flags |= WorkRequestFlags::Signaled;
        }
        if wr.inline() {
            flags |= WorkRequestFlags::Inline;
        }
        let mut guard = self.0.start_post_send();
        let w = guard.construct_wr(id, flags);
        let (handle, src) = match wr {
            Wr::Write { rkey, raddr, src } => (w.setup_write(rkey, raddr), src),
            Wr::Send { src } => (w.setup_send(), src),
            Wr::Read { rkey, raddr, dst } => (w.setup_read(rkey, raddr), dst),
            Wr::Cas {
                rkey,
                raddr,
                expect,
                swap,
                dst,
            } => (w.setup_atomic_compare_swap(rkey, raddr, expect, swap), dst),
            Wr::Faa {
                rkey,
                raddr,
                add,
                dst,
            } => (w.setup_atomic_fetch_add(rkey, raddr, add), dst),
        };
        match src {
            Src::Inline(bytes) => handle.setup_inline_data(bytes),
            // SAFETY: the runtime names only registered memory it owns for the whole run
            // (staging, receive buffers or a region), within its bounds.
            Src::Sge { lkey, addr, len } => unsafe { handle.setup_sge(lkey, addr, len) },
        }
        guard
            .post()
            .map_err(|e| failed("ibv_post_send", e, String::new()))
    }

    fn post_recv(&mut self, wrs: &[RecvWr]) -> Result<(), VerbsError> {
        let mut guard = self.0.start_post_recv();
        for r in wrs {
            let h = guard.construct_wr(r.id);
            // SAFETY: as for sends: registered receive memory the runtime owns for as long as
            // its queue pair.
            unsafe { h.setup_sge(r.lkey, r.addr, r.len) };
        }
        guard
            .post()
            .map_err(|e| failed("ibv_post_recv", e, String::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_verb_keeps_its_errno() {
        let io = std::io::Error::from_raw_os_error(12);
        let e = failed("ibv_reg_mr", io, "4096 bytes".into());
        assert_eq!(e.errno, Some(12));
        let shown = e.to_string();
        assert!(
            shown.starts_with("ibv_reg_mr failed (4096 bytes"),
            "{shown}"
        );
        assert!(shown.contains("os error 12"), "{shown}");
    }

    #[test]
    fn an_errno_behind_a_transparent_wrapper_is_read_from_its_text() {
        assert_eq!(
            os_error_in("No such file or directory (os error 2)"),
            Some(2)
        );
        assert_eq!(os_error_in("failed to get device list"), None);
        assert_eq!(os_error_in("(os error x)"), None);
    }

    #[test]
    fn mtus_round_trip() {
        for m in [256, 512, 1024, 2048, 4096] {
            assert_eq!(mtu_bytes(mtu_of(m)), m);
        }
    }
}
