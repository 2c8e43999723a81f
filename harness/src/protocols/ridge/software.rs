//! The software profile of Ridge's prototype, fitted by `harness calibrate paper`.

use crate::calibrate::PaperSoftware;

/// Ridge's Java prototype (Oracle Java SE 8 over TCP; Ridge section 6.1). Its one absolute
/// number is a bandwidth: 64 KB messages reach ~0.8 Gb/s on the 1 Gb/s LAN (Fig. 1). A message
/// spends about 560 us on the wire there, so per-message prices cannot move it; what separates
/// a Java server over TCP sockets from our code at that size is per byte (serialisation,
/// stream buffers), and the factor scales the copy price too.
pub(crate) const PAPER_SOFTWARE: &[PaperSoftware] = &[PaperSoftware {
    name: "ridge-java",
    description: "Ridge's Java prototype (Oracle Java SE 8 over TCP; Ridge section 6.1)",
    target: "Ridge Fig. 1, maximum throughput, one group, 64 KB messages, on lan-1g (fitted at 8 \
             destinations; ridge-2015.txt section 6.2: ~0.8 Gb/s, flat as destinations grow)",
    published: 0.8,
    unit: "Gb/s",
    shape: "measured",
    prices: crate::calibrate::Prices::WithCopies,
    posting: crate::calibrate::DeclaredPosting {
        discipline: "collective",
        protocols: &[],
        source: "Ridge section 6.1: Java over TCP sockets; a send returns once the kernel holds \
                 the bytes, and nothing awaits a peer's acknowledgement",
    },
    simulate: super::evaluation::fig1_ridge_64kb_gbps,
}];
