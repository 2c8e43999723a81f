//! Which RDMA device to use, and whether there is one.
//!
//! A device is named by the environment, as perftest's `-d`, `-i` and `-x` name it:
//! `RDMA_DEVICE` (e.g. `rxe0`, `mlx5_0`; the first device if unset where one is required),
//! `RDMA_PORT` (default 1) and `RDMA_GID_INDEX` (default: the first RoCE v2 GID on an Ethernet
//! port, index 0 on InfiniBand). Every way of not having a device (a build without the `rdma`
//! feature, no rdma-core libraries, no device, a named device that is not there, a port that is
//! down) is a [`NoDevice`] whose message starts with [`NO_DEVICE`], and every verbs test skips
//! with that line. A device that is there but will not serve the run (it does not open, or its
//! limits are below what the run needs, with locked memory counted) is
//! [`DeviceError::Unusable`]: an error that names the fix, never a skip.

use std::fmt;

/// The line every "no device" report starts with.
pub const NO_DEVICE: &str = "no RDMA device";

/// A device, port and GID index, as named by the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceChoice {
    /// The device's name; `None`: the first one.
    pub name: Option<String>,
    /// The port (1-based, as ibverbs counts).
    pub port: u8,
    /// The GID index; `None`: chosen by link layer (see the module docs).
    pub gid_index: Option<u32>,
}

impl Default for DeviceChoice {
    /// The first device, port 1, the GID index by link layer.
    fn default() -> DeviceChoice {
        DeviceChoice {
            name: None,
            port: 1,
            gid_index: None,
        }
    }
}

impl DeviceChoice {
    /// The choice from `RDMA_DEVICE`, `RDMA_PORT` and `RDMA_GID_INDEX`.
    pub fn from_env() -> Result<DeviceChoice, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        DeviceChoice::parse(
            var("RDMA_DEVICE").as_deref(),
            var("RDMA_PORT").as_deref(),
            var("RDMA_GID_INDEX").as_deref(),
        )
    }

    /// The choice from the three values as strings (unset: `None`).
    pub fn parse(
        name: Option<&str>,
        port: Option<&str>,
        gid_index: Option<&str>,
    ) -> Result<DeviceChoice, String> {
        let port = match port {
            None => 1,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(format!(
                        "RDMA_PORT={p:?} is not a port number (1, 2, ...; ibv_devinfo lists them)"
                    ))
                }
            },
        };
        let gid_index = match gid_index {
            None => None,
            Some(g) => Some(g.parse::<u32>().map_err(|_| {
                format!("RDMA_GID_INDEX={g:?} is not a GID index (show_gids lists them)")
            })?),
        };
        Ok(DeviceChoice {
            name: name.map(str::to_owned),
            port,
            gid_index,
        })
    }
}

/// Why there is no device to run on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{NO_DEVICE}: {reason}")]
pub struct NoDevice {
    /// What is missing, and how to get it.
    pub reason: String,
}

impl NoDevice {
    /// A report with this reason.
    pub fn new(reason: impl Into<String>) -> NoDevice {
        NoDevice {
            reason: reason.into(),
        }
    }
}

/// Why a run cannot use a device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// There is none to use: tests skip, the harness refuses `--runtime verbs` with the reason.
    #[error(transparent)]
    Absent(#[from] NoDevice),
    /// The device is there but refuses what the run needs (it will not open, or its limits or
    /// the locked-memory limit are too small): what, and how to fix it.
    #[error("{0}")]
    Unusable(String),
}

/// What was found: enough to connect queue pairs and to say what ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name.
    pub name: String,
    /// The port used.
    pub port: u8,
    /// `InfiniBand` or `Ethernet` (RoCE, SoftRoCE).
    pub link_layer: String,
    /// The port's LID (0 on Ethernet).
    pub lid: u16,
    /// The GID index used.
    pub gid_index: u32,
    /// The GID at that index.
    pub gid: [u8; 16],
    /// Whether that GID is RoCE v2 (UDP/IP); both ends of a queue pair must agree.
    pub roce_v2: bool,
    /// The port's active MTU in bytes.
    pub mtu: u32,
    /// The device's firmware version.
    pub firmware: String,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} port {} ({}, MTU {}, LID {}, GID[{}] {}), firmware {}",
            self.name,
            self.port,
            self.link_layer,
            self.mtu,
            self.lid,
            self.gid_index,
            std::net::Ipv6Addr::from(self.gid),
            self.firmware
        )
    }
}

/// Finds the chosen device and checks its port is active.
pub fn discover(choice: &DeviceChoice) -> Result<DeviceInfo, DeviceError> {
    #[cfg(feature = "rdma")]
    {
        crate::rdma::discover_with(&crate::sideway::Sideway, choice)
    }
    #[cfg(not(feature = "rdma"))]
    {
        let _ = choice;
        Err(NoDevice::new(
            "this build has no ibverbs support: build with `--features rdma` (scripts/verbs-deps.sh installs CMake, libclang and rdma-core for it)",
        )
        .into())
    }
}

/// The device a test should run on: `Err` with the line to print and skip by when
/// `RDMA_DEVICE` is unset or names no device. Tests run on a device only when one is named, so
/// a machine with a NIC in production use is never touched by surprise.
///
/// # Panics
/// When the named device is there but unusable ([`DeviceError::Unusable`]): a test that asked
/// for a device fails rather than skips.
pub fn for_tests() -> Result<(DeviceChoice, DeviceInfo), NoDevice> {
    for_tests_with(discover)
}

/// [`for_tests`] with another way to discover (a fake fabric's).
pub fn for_tests_with(
    discover: impl FnOnce(&DeviceChoice) -> Result<DeviceInfo, DeviceError>,
) -> Result<(DeviceChoice, DeviceInfo), NoDevice> {
    let choice = DeviceChoice::from_env().map_err(NoDevice::new)?;
    if choice.name.is_none() {
        return Err(NoDevice::new(
            "RDMA_DEVICE is not set (name a device to run the verbs tests on it, e.g. RDMA_DEVICE=rxe0 after scripts/softroce.sh)",
        ));
    }
    match discover(&choice) {
        Ok(info) => Ok((choice, info)),
        Err(DeviceError::Absent(no)) => Err(no),
        Err(DeviceError::Unusable(why)) => {
            panic!("RDMA_DEVICE names a device the tests cannot use: {why}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_device_port_and_gid() {
        assert_eq!(
            DeviceChoice::parse(None, None, None).unwrap(),
            DeviceChoice {
                name: None,
                port: 1,
                gid_index: None
            }
        );
        let c = DeviceChoice::parse(Some("rxe0"), Some("2"), Some("1")).unwrap();
        assert_eq!(c.name.as_deref(), Some("rxe0"));
        assert_eq!((c.port, c.gid_index), (2, Some(1)));
        let e = DeviceChoice::parse(None, Some("0"), None).unwrap_err();
        assert!(e.contains("RDMA_PORT=\"0\""), "{e}");
        let e = DeviceChoice::parse(None, None, Some("x")).unwrap_err();
        assert!(e.contains("RDMA_GID_INDEX"), "{e}");
    }

    #[test]
    fn no_device_says_so_first() {
        let e = NoDevice::new("none here");
        assert_eq!(e.to_string(), "no RDMA device: none here");
    }

    #[cfg(not(feature = "rdma"))]
    #[test]
    fn a_build_without_ibverbs_finds_no_device() {
        let e = discover(&DeviceChoice::default()).unwrap_err();
        assert!(e.to_string().starts_with(NO_DEVICE), "{e}");
        assert!(e.to_string().contains("--features rdma"), "{e}");
    }

    /// On a machine without RDMA (this project's CI), discovery reports no device instead of
    /// failing; where a device is named and present, it is described.
    #[test]
    fn discovery_reports_a_device_or_no_device() {
        match discover(&DeviceChoice::from_env().unwrap_or_default()) {
            Ok(info) => {
                assert!(!info.name.is_empty());
                println!("found {info}");
            }
            Err(e) => {
                assert!(matches!(e, DeviceError::Absent(_)), "{e}");
                assert!(e.to_string().starts_with(NO_DEVICE), "{e}");
                println!("{e}");
            }
        }
    }
}
