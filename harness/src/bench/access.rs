//! `harness bench access`'s report ([`engine::access`] measures it).

pub(crate) use engine::access::*;
use engine::perftest::Rig;

/// Prints a probe's result as a table.
pub(crate) fn print(costs: &AccessCosts, runtime: &Rig) {
    println!(
        "access changes and reconnects on runtime {} ({}), microseconds",
        runtime.name(),
        runtime.profile_name
    );
    println!(
        " {:<44} {:>10} {:>12} {:>10} {:>10}",
        "", "t_min", "t_typical", "99%", "99.9%"
    );
    for (what, s) in [
        ("access change, one region per peer (fast)", &costs.fast),
        ("access change, a region among several (slow)", &costs.slow),
        ("reconnect after a refused write", &costs.reconnect),
    ] {
        println!(
            " {what:<44} {:>10.2} {:>12.2} {:>10.2} {:>10.2}",
            s.min, s.typical, s.p99, s.p999
        );
    }
}
