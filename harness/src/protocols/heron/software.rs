//! The software profile of Heron's prototype, fitted by `harness calibrate paper heron-java`.

use crate::calibrate::{PaperSoftware, Prices};
use transport::runtime::sim::Software;

/// Heron's Java prototype over RamCast's (jVerbs/DiSNI 2.1, Java SE 11; the Heron thesis,
/// section 5.2). Its ordering layer is RamCast's prototype, whose prices `ramcast-java` fitted
/// to RamCast's own paper; what Heron adds is per row: reading, (de)serialising and writing the
/// application's objects (the thesis stores Stock and Customer serialized). So the fit keeps
/// RamCast's prices and sets the row price alone, on the one published number that isolates
/// execution. (Order-Status's 16.5 us, a light single-partition transaction, was tried first:
/// RamCast's fitted prices alone already give 16.7 us there, so it cannot price a row.)
pub(crate) const PAPER_SOFTWARE: &[PaperSoftware] = &[PaperSoftware {
    name: "heron-java",
    description: "Heron's Java prototype over RamCast's (jVerbs/DiSNI 2.1, Java SE 11; Heron thesis section 5.2)",
    target: "Heron thesis Fig. 5.4, the execution stage of a New-Order's average latency, 1 \
             client, New-Orders over 2 partitions, on xl170-cx4 (heron-thesis-2022.txt section \
             5.3.4: 'ordering and execution take 18 and 16 microseconds')",
    published: 16.0,
    unit: "us",
    shape: "ramcast-java",
    prices: Prices::Rows,
    posting: crate::calibrate::DeclaredPosting {
        discipline: "batch",
        protocols: &[],
        source: "Heron thesis section 4.3, RamCast's text again (Heron runs over its \
                 prototype): selective signalling, 'only checking for a CE after pushing a number \
                 of writes'",
    },
    simulate: new_order_execution,
}];

fn new_order_execution(
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<f64, String> {
    super::figures::new_order_execution(software, progress)
}
