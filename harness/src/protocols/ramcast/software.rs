//! The software profile of RamCast's prototype, fitted by `harness calibrate paper`.

use crate::calibrate::PaperSoftware;
use transport::runtime::sim::Software;

/// RamCast's Java prototype (jVerbs over DiSNI 2.1, Java SE 11; RamCast section 5.1).
pub(crate) const PAPER_SOFTWARE: &[PaperSoftware] = &[RAMCAST_JAVA];

/// `ramcast-java`: fitted to RamCast Fig. 4's 64 B maximum throughput. TRAM's prototype, which
/// also ran RamCast, is fitted to the same number ([`crate::protocols::tram::software`]) and takes
/// its target's value, unit, prices and posting from here.
pub(crate) const RAMCAST_JAVA: PaperSoftware = PaperSoftware {
    name: "ramcast-java",
    description:
        "RamCast's Java prototype (jVerbs/DiSNI 2.1, Oracle Java SE 11; RamCast section 5.1)",
    target: "RamCast Fig. 4, maximum throughput, 1 group of 3, 64 B messages, on xl170-cx4 \
             (ramcast-middleware2021.txt section 5.3: ~250 k msg/s)",
    published: 250_000.0,
    unit: "msg/s",
    shape: "measured",
    prices: crate::calibrate::Prices::PerMessage,
    posting: crate::calibrate::DeclaredPosting {
        discipline: "batch",
        protocols: &[],
        source: "RamCast section 4: 'for multi-group messages, we employ selective signaling \
                 ... by only checking for a CE after pushing a number of writes': posted \
                 together, awaited together. Not 'each': TRAM section 3 calls awaiting every write \
                 its baseline, but a RamCast that awaits every write tops out at 44 k msg/s in one \
                 group (`figure tram-fig2`'s probe), far below the 250 k msg/s it published",
    },
    simulate: fig4,
};

fn fig4(software: &Software, progress: &(dyn Fn(&str) + Sync)) -> Result<f64, String> {
    super::figures::fig4_max_throughput_64b(crate::testbed::RAMCAST, software, progress)
}
