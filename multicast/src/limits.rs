//! The bounds the slot-buffer protocols (RamCast, TRAM) put alike on a deployment: replicas
//! per group, clients, and the size of a buffer slot. Each protocol's `ConfigError` carries a
//! [`LimitError`] for these, beside its own bounds (groups, slot counts).

/// A deployment outside the shared bounds ([`check_limits`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Replicas not 2f+1.
    #[error("replicas per group must be odd (2f+1) and at most 15, got {0}")]
    Replicas(usize),
    /// No clients, or too many.
    #[error("clients must be 1..=4096, got {0}")]
    Clients(usize),
    /// Bad slot size.
    #[error("slot size must be a multiple of 8 between 64 and 1048576 bytes, got {0}")]
    SlotBytes(usize),
}

/// Checks `replicas` per group, `clients` and `slot_bytes` per buffer slot, in that order.
pub fn check_limits(replicas: usize, clients: usize, slot_bytes: usize) -> Result<(), LimitError> {
    if replicas % 2 == 0 || replicas > 15 {
        return Err(LimitError::Replicas(replicas));
    }
    if !(1..=4096).contains(&clients) {
        return Err(LimitError::Clients(clients));
    }
    if slot_bytes % 8 != 0 || !(64..=1 << 20).contains(&slot_bytes) {
        return Err(LimitError::SlotBytes(slot_bytes));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bound refuses just outside it, and says so in the words a configuration error
    /// prints.
    #[test]
    fn each_bound_refuses_what_lies_outside_it() {
        assert_eq!(check_limits(3, 1, 64), Ok(()));
        assert_eq!(check_limits(15, 4096, 1 << 20), Ok(()));
        assert_eq!(check_limits(4, 1, 64), Err(LimitError::Replicas(4)));
        assert_eq!(check_limits(17, 1, 64), Err(LimitError::Replicas(17)));
        assert_eq!(check_limits(3, 0, 64), Err(LimitError::Clients(0)));
        assert_eq!(check_limits(3, 4097, 64), Err(LimitError::Clients(4097)));
        assert_eq!(check_limits(3, 1, 60), Err(LimitError::SlotBytes(60)));
        assert_eq!(check_limits(3, 1, 68), Err(LimitError::SlotBytes(68)));
        assert_eq!(
            LimitError::Clients(0).to_string(),
            "clients must be 1..=4096, got 0"
        );
    }
}
