//! Work completions of a real NIC mapped onto the model's [`Status`], and the health of a
//! queue pair that the mapping needs.
//!
//! ibverbs reports a status code per work completion (`enum ibv_wc_status`). The model knows
//! four outcomes, and the mapping is the runtime's contract with the protocols:
//! - `IBV_WC_SUCCESS` is [`Status::Success`];
//! - the responder refused the request (`REM_ACCESS_ERR`: no rights on the memory region or
//!   the queue pair; `REM_INV_REQ_ERR`: the request fell outside the region the rkey names,
//!   which after a re-registration is the same refusal) is [`Status::AccessDenied`];
//! - the peer did not answer (transport retries exhausted, receiver-not-ready retries
//!   exhausted, response timeout, a bad or aborted response, a fatal error) is
//!   [`Status::PeerUnreachable`];
//! - `WR_FLUSH_ERR`, a request flushed from a queue pair already in error, takes the cause of
//!   that error: [`Status::PeerUnreachable`] behind an unreachable peer (the model completes
//!   everything outstanding towards a crashed peer that way), [`Status::Flushed`] otherwise;
//! - errors the NIC raises against this process's own request (`LOC_*_ERR`, `REM_OP_ERR`,
//!   `MW_BIND_ERR`, ...) mean the runtime built a bad work request. The op had no effect and the
//!   queue pair is in error, which is [`Status::Flushed`]; the runtime also says so on stderr
//!   ([`Mapped::runtime_fault`]), because it is a bug to fix, not a condition to handle.
//!
//! An error completion carries only its work request id and status (its opcode, length and
//! immediate are undefined), so the runtime keeps every posted op's kind and peer itself (see
//! [`crate::signal`]).

use transport::Status;

/// The status codes of `enum ibv_wc_status` (rdma-core's `verbs.h`; stable since the first
/// release). With the `rdma` feature a test checks them against the library's bindings.
#[allow(missing_docs, reason = "the names are ibverbs' own")]
pub mod code {
    pub const SUCCESS: u32 = 0;
    pub const LOC_LEN_ERR: u32 = 1;
    pub const LOC_QP_OP_ERR: u32 = 2;
    pub const LOC_EEC_OP_ERR: u32 = 3;
    pub const LOC_PROT_ERR: u32 = 4;
    pub const WR_FLUSH_ERR: u32 = 5;
    pub const MW_BIND_ERR: u32 = 6;
    pub const BAD_RESP_ERR: u32 = 7;
    pub const LOC_ACCESS_ERR: u32 = 8;
    pub const REM_INV_REQ_ERR: u32 = 9;
    pub const REM_ACCESS_ERR: u32 = 10;
    pub const REM_OP_ERR: u32 = 11;
    pub const RETRY_EXC_ERR: u32 = 12;
    pub const RNR_RETRY_EXC_ERR: u32 = 13;
    pub const LOC_RDD_VIOL_ERR: u32 = 14;
    pub const REM_INV_RD_REQ_ERR: u32 = 15;
    pub const REM_ABORT_ERR: u32 = 16;
    pub const INV_EECN_ERR: u32 = 17;
    pub const INV_EEC_STATE_ERR: u32 = 18;
    pub const FATAL_ERR: u32 = 19;
    pub const RESP_TIMEOUT_ERR: u32 = 20;
    pub const GENERAL_ERR: u32 = 21;
    pub const TM_ERR: u32 = 22;
    pub const TM_RNDV_INCOMPLETE: u32 = 23;
}

/// ibverbs' name of a status code, for messages.
pub fn code_name(status: u32) -> &'static str {
    const NAMES: [&str; 24] = [
        "IBV_WC_SUCCESS",
        "IBV_WC_LOC_LEN_ERR",
        "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR",
        "IBV_WC_LOC_PROT_ERR",
        "IBV_WC_WR_FLUSH_ERR",
        "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR",
        "IBV_WC_LOC_ACCESS_ERR",
        "IBV_WC_REM_INV_REQ_ERR",
        "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR",
        "IBV_WC_RETRY_EXC_ERR",
        "IBV_WC_RNR_RETRY_EXC_ERR",
        "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR",
        "IBV_WC_REM_ABORT_ERR",
        "IBV_WC_INV_EECN_ERR",
        "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR",
        "IBV_WC_RESP_TIMEOUT_ERR",
        "IBV_WC_GENERAL_ERR",
        "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE",
    ];
    NAMES
        .get(status as usize)
        .copied()
        .unwrap_or("unknown ibv_wc_status")
}

/// Whether a queue pair to a peer carries ops, and if not, why it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Health {
    /// Ready to send.
    #[default]
    Up,
    /// In error since an op failed with this status (never `Success`): every op posted or
    /// flushed until a reconnect ends with [`Health::flushed`].
    Broken(Status),
}

impl Health {
    /// What an op flushed from (or posted to) this queue pair ends with: behind an unreachable
    /// peer everything is unreachable, as the model reports for a crashed peer; behind any
    /// other error it is flushed.
    pub fn flushed(self) -> Status {
        match self {
            Health::Broken(Status::PeerUnreachable) => Status::PeerUnreachable,
            _ => Status::Flushed,
        }
    }
}

/// A work completion's status as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// The op's outcome.
    pub status: Status,
    /// Set when the NIC rejected a request this runtime built (a bug in the runtime, which the
    /// caller reports): ibverbs' name of the code.
    pub runtime_fault: Option<&'static str>,
}

/// Maps a completion with ibverbs status `wc_status` on a queue pair in state `health`, and
/// moves `health` to what the queue pair is after it (the first error breaks it).
pub fn map_status(wc_status: u32, health: &mut Health) -> Mapped {
    use code::*;
    let (status, runtime_fault) = match wc_status {
        SUCCESS => (Status::Success, None),
        REM_ACCESS_ERR | REM_INV_REQ_ERR => (Status::AccessDenied, None),
        RETRY_EXC_ERR | RNR_RETRY_EXC_ERR | RESP_TIMEOUT_ERR | BAD_RESP_ERR | REM_ABORT_ERR
        | FATAL_ERR | GENERAL_ERR => (Status::PeerUnreachable, None),
        WR_FLUSH_ERR => (health.flushed(), None),
        other => (Status::Flushed, Some(code_name(other))),
    };
    if status != Status::Success && *health == Health::Up {
        *health = Health::Broken(status);
    }
    Mapped {
        status,
        runtime_fault,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_all(codes: &[u32]) -> Vec<Status> {
        let mut h = Health::Up;
        codes
            .iter()
            .map(|&c| map_status(c, &mut h).status)
            .collect()
    }

    #[test]
    fn a_refused_write_breaks_the_pair_and_flushes_what_follows() {
        use code::*;
        let mut h = Health::Up;
        assert_eq!(map_status(SUCCESS, &mut h).status, Status::Success);
        assert_eq!(h, Health::Up);
        assert_eq!(
            map_status(REM_ACCESS_ERR, &mut h).status,
            Status::AccessDenied
        );
        assert_eq!(h, Health::Broken(Status::AccessDenied));
        assert_eq!(map_status(WR_FLUSH_ERR, &mut h).status, Status::Flushed);
        // A later refusal does not change why the pair broke.
        assert_eq!(
            map_status(REM_INV_REQ_ERR, &mut h).status,
            Status::AccessDenied
        );
        assert_eq!(h, Health::Broken(Status::AccessDenied));
    }

    #[test]
    fn everything_behind_an_unreachable_peer_is_unreachable() {
        use code::*;
        for first in [
            RETRY_EXC_ERR,
            RNR_RETRY_EXC_ERR,
            RESP_TIMEOUT_ERR,
            FATAL_ERR,
        ] {
            assert_eq!(
                map_all(&[SUCCESS, first, WR_FLUSH_ERR, WR_FLUSH_ERR]),
                vec![
                    Status::Success,
                    Status::PeerUnreachable,
                    Status::PeerUnreachable,
                    Status::PeerUnreachable
                ],
                "{}",
                code_name(first)
            );
        }
    }

    #[test]
    fn a_flush_on_a_healthy_pair_is_flushed_and_breaks_it() {
        let mut h = Health::Up;
        assert_eq!(
            map_status(code::WR_FLUSH_ERR, &mut h).status,
            Status::Flushed
        );
        assert_eq!(h, Health::Broken(Status::Flushed));
        assert_eq!(h.flushed(), Status::Flushed);
    }

    #[test]
    fn errors_against_our_own_requests_are_flagged_as_runtime_faults() {
        use code::*;
        for c in [
            LOC_LEN_ERR,
            LOC_QP_OP_ERR,
            LOC_PROT_ERR,
            LOC_ACCESS_ERR,
            REM_OP_ERR,
            99,
        ] {
            let m = map_status(c, &mut Health::Up);
            assert_eq!(m.status, Status::Flushed, "{}", code_name(c));
            assert!(m.runtime_fault.is_some(), "{}", code_name(c));
        }
        assert_eq!(code_name(99), "unknown ibv_wc_status");
        for c in [SUCCESS, REM_ACCESS_ERR, RETRY_EXC_ERR, WR_FLUSH_ERR] {
            assert_eq!(map_status(c, &mut Health::Up).runtime_fault, None);
        }
    }

    #[test]
    fn every_code_has_its_ibverbs_name() {
        assert_eq!(code_name(code::SUCCESS), "IBV_WC_SUCCESS");
        assert_eq!(code_name(code::REM_ACCESS_ERR), "IBV_WC_REM_ACCESS_ERR");
        assert_eq!(
            code_name(code::TM_RNDV_INCOMPLETE),
            "IBV_WC_TM_RNDV_INCOMPLETE"
        );
    }

    /// Our codes are the library's: built only where the bindings are.
    #[cfg(feature = "rdma")]
    #[test]
    fn the_codes_are_the_bindings_codes() {
        use rdma_mummy_sys::ibv_wc_status as s;
        assert_eq!(code::SUCCESS, s::IBV_WC_SUCCESS);
        assert_eq!(code::WR_FLUSH_ERR, s::IBV_WC_WR_FLUSH_ERR);
        assert_eq!(code::REM_INV_REQ_ERR, s::IBV_WC_REM_INV_REQ_ERR);
        assert_eq!(code::REM_ACCESS_ERR, s::IBV_WC_REM_ACCESS_ERR);
        assert_eq!(code::REM_OP_ERR, s::IBV_WC_REM_OP_ERR);
        assert_eq!(code::RETRY_EXC_ERR, s::IBV_WC_RETRY_EXC_ERR);
        assert_eq!(code::RNR_RETRY_EXC_ERR, s::IBV_WC_RNR_RETRY_EXC_ERR);
        assert_eq!(code::FATAL_ERR, s::IBV_WC_FATAL_ERR);
        assert_eq!(code::RESP_TIMEOUT_ERR, s::IBV_WC_RESP_TIMEOUT_ERR);
        assert_eq!(code::TM_RNDV_INCOMPLETE, s::IBV_WC_TM_RNDV_INCOMPLETE);
    }
}
