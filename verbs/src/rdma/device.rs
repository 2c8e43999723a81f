//! Opening a device: the port and its MTU, the RoCE v2 GID, registering memory, creating queue
//! pairs, and the limits a node reports.

use super::{VerbsConfig, HEADER};
use crate::access::Rights;
use crate::device::{DeviceChoice, DeviceError, DeviceInfo, NoDevice};
use crate::provider::{Context, DeviceCaps, GidKind, LinkLayer, Provider, QpCaps};
use transport::runtime::shared_memory::Words;
use transport::NicLimits;

/// Opens the chosen device of `provider`, describes its port and reads its limits.
pub(super) fn open_device<V: Provider>(
    provider: &V,
    choice: &DeviceChoice,
) -> Result<(V::Ctx, DeviceInfo, DeviceCaps), DeviceError> {
    let names = provider.devices().map_err(|e| {
        let why = if std::path::Path::new("/sys/class/infiniband").exists() {
            "is rdma-core installed (libibverbs1, ibverbs-providers)?"
        } else {
            "the kernel exposes no RDMA device (/sys/class/infiniband is absent: no RDMA driver is loaded; SoftRoCE needs the rdma_rxe module, see scripts/softroce.sh)"
        };
        NoDevice::new(format!("{e}: {why}"))
    })?;
    let name = match &choice.name {
        None => names.first().cloned().ok_or_else(|| {
            NoDevice::new(
                "ibv_get_device_list found none (scripts/softroce.sh creates a SoftRoCE device on an Ethernet interface)",
            )
        })?,
        Some(n) if names.contains(n) => n.clone(),
        Some(n) => {
            return Err(NoDevice::new(format!(
                "no device named {n} (there are: {})",
                names.join(", ")
            ))
            .into())
        }
    };
    // It is there: from here on a refusal is an error, not a reason to skip.
    let ctx = provider
        .open(&name)
        .map_err(|e| DeviceError::Unusable(format!("{name} does not open: {e}")))?;
    let caps = ctx
        .query_device()
        .map_err(|e| NoDevice::new(format!("{name}: {e}")))?;
    if choice.port > caps.phys_port_cnt {
        return Err(NoDevice::new(format!(
            "{name} has {} port(s), RDMA_PORT={} names none",
            caps.phys_port_cnt, choice.port
        ))
        .into());
    }
    let port = ctx
        .query_port(choice.port)
        .map_err(|e| NoDevice::new(format!("{name}: {e}")))?;
    if !port.active {
        return Err(NoDevice::new(format!(
            "port {} of {name} is {}, not active (is its link up?)",
            choice.port, port.state
        ))
        .into());
    }
    let gid_index = match choice.gid_index {
        Some(i) => i,
        None if port.link_layer == LinkLayer::Ethernet => {
            roce_v2_gid(&ctx, choice.port).unwrap_or(0)
        }
        None => 0,
    };
    let gid = ctx.query_gid(choice.port, gid_index).map_err(|e| {
        NoDevice::new(format!(
            "{name} port {}: no GID at index {gid_index} ({e})",
            choice.port
        ))
    })?;
    let roce_v2 = ctx.gid_table().is_ok_and(|t| {
        t.iter()
            .any(|e| e.port == choice.port && e.index == gid_index && e.kind == GidKind::RoceV2)
    });
    let info = DeviceInfo {
        name,
        port: choice.port,
        link_layer: format!("{:?}", port.link_layer),
        lid: port.lid,
        gid_index,
        gid,
        roce_v2,
        mtu: port.active_mtu,
        firmware: caps.firmware.clone(),
    };
    Ok((ctx, info, caps))
}

/// The first RoCE v2 GID of `port` that is routable (not link-local, fe80::/10), else the
/// first RoCE v2 one: what perftest users pass as `-x` on RoCE.
fn roce_v2_gid(ctx: &impl Context, port: u8) -> Option<u32> {
    let table = ctx.gid_table().ok()?;
    let v2: Vec<_> = table
        .iter()
        .filter(|e| e.port == port && e.kind == GidKind::RoceV2)
        .filter(|e| e.gid != [0; 16])
        .collect();
    let link_local = |g: &[u8; 16]| g[0] == 0xfe && g[1] & 0xc0 == 0x80;
    v2.iter()
        .find(|e| !link_local(&e.gid))
        .or(v2.first())
        .map(|e| e.index)
}

/// Finds the chosen device of `provider` and checks its port is active.
pub fn discover_with<V: Provider>(
    provider: &V,
    choice: &DeviceChoice,
) -> Result<DeviceInfo, DeviceError> {
    open_device(provider, choice).map(|(_, info, _)| info)
}

/// Registers all of `mem` (memory this node owns for the run) with local write and `rights`.
pub(super) fn register<C: Context>(ctx: &C, mem: &Words, rights: Rights) -> Result<C::Mr, String> {
    ctx.reg_mr(mem, rights).map_err(|e| e.to_string())
}

/// `errno` of an argument the device refuses.
const EINVAL: i32 = 22;

/// An RC queue pair on `cq` with the configured depths and the largest inline limit the device
/// grants, from `*inline` down (halving): `*inline` is left at the limit granted.
pub(super) fn create_qp<C: Context>(
    ctx: &C,
    cq: &C::Cq,
    cfg: &VerbsConfig,
    inline: &mut u32,
) -> Result<C::Qp, String> {
    loop {
        let caps = QpCaps {
            max_send_wr: cfg.send_depth as u32,
            max_recv_wr: cfg.recv_depth as u32,
            max_inline: *inline,
        };
        match ctx.create_qp(cq, caps) {
            Ok(qp) => return Ok(qp),
            // The device grants less inline data (EINVAL, the only refusal that means it; a
            // library that lost the errno gets the benefit of the doubt): ask for less.
            Err(e) if *inline > 0 && matches!(e.errno, None | Some(EINVAL)) => *inline /= 2,
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The limits a node of a run with `cfg` on `provider` reports to its process (the inline
/// limit is what the device grants a queue pair), found by creating one queue pair.
pub fn probe_limits<V: Provider>(
    provider: &V,
    cfg: &VerbsConfig,
) -> Result<NicLimits, DeviceError> {
    let (ctx, info, caps) = open_device(provider, &cfg.device)?;
    let refused = |e: String| DeviceError::Unusable(format!("{}: {e}", info.name));
    let cfg = &super::budget::fit(cfg, &caps, 1).map_err(refused)?;
    let cq = ctx.create_cq(64).map_err(|e| refused(e.to_string()))?;
    let mut inline = cfg.inline.min(caps.max_inline);
    create_qp(&ctx, &cq, cfg, &mut inline).map_err(refused)?;
    Ok(NicLimits {
        inline_max: inline as usize,
        send_max: cfg.recv_size - HEADER,
    })
}
