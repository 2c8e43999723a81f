//! Opening a device: the port and its MTU, the RoCE v2 GID, registering memory, creating queue
//! pairs, and the limits a node reports.

use super::{VerbsConfig, HEADER};
use crate::access::Rights;
use crate::device::{DeviceChoice, DeviceInfo, NoDevice};
use sideway::ibverbs::address::GidType;
use sideway::ibverbs::completion::BasicCompletionQueue;
use sideway::ibverbs::device::{DeviceInfo as _, DeviceList};
use sideway::ibverbs::device_context::{DeviceContext, LinkLayer, Mtu, PortState};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{BasicQueuePair, QueuePairType};
use sideway::ibverbs::AccessFlags;
use std::net::Ipv6Addr;
use std::sync::Arc;
use transport::runtime::shared_memory::Words;
use transport::NicLimits;

pub(super) fn mtu_bytes(m: Mtu) -> u32 {
    match m {
        Mtu::Mtu256 => 256,
        Mtu::Mtu512 => 512,
        Mtu::Mtu1024 => 1024,
        Mtu::Mtu2048 => 2048,
        Mtu::Mtu4096 => 4096,
    }
}

/// Opens the chosen device and describes its port.
pub(super) fn open_device(
    choice: &DeviceChoice,
) -> Result<(Arc<DeviceContext>, DeviceInfo, Mtu), NoDevice> {
    let list = DeviceList::new().map_err(|e| {
        let why = if std::path::Path::new("/sys/class/infiniband").exists() {
            "is rdma-core installed (libibverbs1, ibverbs-providers)?"
        } else {
            "the kernel exposes no RDMA device (/sys/class/infiniband is absent: no RDMA driver is loaded; SoftRoCE needs the rdma_rxe module, see scripts/softroce.sh)"
        };
        NoDevice::new(format!("ibv_get_device_list failed ({e}): {why}"))
    })?;
    if list.is_empty() {
        return Err(NoDevice::new(
            "ibv_get_device_list found none (scripts/softroce.sh creates a SoftRoCE device on an Ethernet interface)",
        ));
    }
    let names: Vec<String> = list.iter().map(|d| d.name()).collect();
    let device = match &choice.name {
        None => list.get(0).expect("the list is not empty"),
        Some(n) => list.iter().find(|d| d.name() == *n).ok_or_else(|| {
            NoDevice::new(format!(
                "no device named {n} (there are: {})",
                names.join(", ")
            ))
        })?,
    };
    let name = device.name();
    let ctx = device
        .open()
        .map_err(|e| NoDevice::new(format!("{name} does not open: {e}")))?;
    let attr = ctx
        .query_device()
        .map_err(|e| NoDevice::new(format!("{name}: ibv_query_device failed: {e}")))?;
    if choice.port > attr.phys_port_cnt() {
        return Err(NoDevice::new(format!(
            "{name} has {} port(s), RDMA_PORT={} names none",
            attr.phys_port_cnt(),
            choice.port
        )));
    }
    let port = ctx
        .query_port(choice.port)
        .map_err(|e| NoDevice::new(format!("{name}: ibv_query_port failed: {e}")))?;
    if port.port_state() != PortState::Active {
        return Err(NoDevice::new(format!(
            "port {} of {name} is {:?}, not active (is its link up?)",
            choice.port,
            port.port_state()
        )));
    }
    let link = port.link_layer();
    let gid_index = match choice.gid_index {
        Some(i) => i,
        None if link == LinkLayer::Ethernet => roce_v2_gid(&ctx, choice.port).unwrap_or(0),
        None => 0,
    };
    let gid = ctx.query_gid(choice.port, gid_index).map_err(|e| {
        NoDevice::new(format!(
            "{name} port {}: no GID at index {gid_index} ({e})",
            choice.port
        ))
    })?;
    let mtu = port.active_mtu();
    let info = DeviceInfo {
        name,
        port: choice.port,
        link_layer: format!("{link:?}"),
        lid: port.lid(),
        gid_index,
        gid: Ipv6Addr::from(gid).octets(),
        mtu: mtu_bytes(mtu),
        firmware: attr.firmware_version(),
    };
    Ok((ctx, info, mtu))
}

/// The first RoCE v2 GID of `port` that is routable (not link-local), else the first RoCE v2
/// one: what perftest users pass as `-x` on RoCE.
pub(super) fn roce_v2_gid(ctx: &DeviceContext, port: u8) -> Option<u32> {
    let table = ctx.query_gid_table().ok()?;
    let v2: Vec<_> = table
        .iter()
        .filter(|e| e.port_num() == port as u32 && e.gid_type() == GidType::RoceV2)
        .filter(|e| !e.gid().is_zero())
        .collect();
    v2.iter()
        .find(|e| !e.gid().is_unicast_link_local())
        .or(v2.first())
        .map(|e| e.gid_index())
}

/// See [`crate::device::discover`].
pub(crate) fn discover(choice: &DeviceChoice) -> Result<DeviceInfo, NoDevice> {
    open_device(choice).map(|(_, info, _)| info)
}

pub(super) fn flags_of(rights: Rights) -> AccessFlags {
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
pub(super) fn qp_flags_of(rights: Rights) -> AccessFlags {
    flags_of(rights) & !AccessFlags::LocalWrite
}

/// Registers `len` bytes at `addr` (memory this node owns for the run).
pub(super) fn register(
    pd: &Arc<ProtectionDomain>,
    mem: &Words,
    rights: Rights,
) -> Result<Arc<MemoryRegion>, String> {
    // SAFETY: `mem` is a heap allocation of `mem.capacity()` bytes that the node keeps, at
    // the same address, for as long as the registration (the node drops registrations first).
    unsafe { pd.reg_mr(mem.addr(), mem.capacity(), flags_of(rights)) }
        .map_err(|e| format!("ibv_reg_mr of {} bytes failed: {e}", mem.capacity()))
}

/// An RC queue pair on `cq` with the configured depths and the largest inline limit the device
/// grants, from `*inline` down (halving): `*inline` is left at the limit granted.
pub(super) fn create_qp(
    pd: &Arc<ProtectionDomain>,
    cq: &Arc<BasicCompletionQueue>,
    cfg: &VerbsConfig,
    inline: &mut u32,
) -> Result<BasicQueuePair, String> {
    loop {
        let built = pd
            .create_qp_builder()
            .setup_qp_type(QueuePairType::ReliableConnection)
            .setup_max_send_wr(cfg.send_depth as u32)
            .setup_max_recv_wr(cfg.recv_depth as u32)
            .setup_max_send_sge(1)
            .setup_max_recv_sge(1)
            .setup_max_inline_data(*inline)
            .setup_send_cq(cq.clone())
            .setup_recv_cq(cq.clone())
            .build();
        match built {
            Ok(qp) => return Ok(qp),
            // The device grants less inline data: ask for less.
            Err(_) if *inline > 0 => *inline /= 2,
            Err(e) => return Err(format!("ibv_create_qp failed: {e}")),
        }
    }
}

/// The limits a node of a run with `cfg` reports to its process (the inline limit is what the
/// device grants a queue pair), found by creating one queue pair.
pub fn probe_limits(cfg: &VerbsConfig) -> Result<NicLimits, NoDevice> {
    let (ctx, info, _) = open_device(&cfg.device)?;
    let refused = |what: &str, e: String| NoDevice::new(format!("{}: {what}: {e}", info.name));
    let pd = ctx
        .alloc_pd()
        .map_err(|e| refused("ibv_alloc_pd", e.to_string()))?;
    let cq = ctx
        .create_cq_builder()
        .setup_cqe(64)
        .build()
        .map_err(|e| refused("ibv_create_cq", e.to_string()))?;
    let mut inline = cfg.inline;
    create_qp(&pd, &cq, cfg, &mut inline).map_err(|e| refused("a queue pair", e))?;
    Ok(NicLimits {
        inline_max: inline as usize,
        send_max: cfg.recv_size - HEADER,
    })
}
