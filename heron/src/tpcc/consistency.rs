//! The specification's consistency conditions 1-4 (clause 3.3.2), checked on a database state
//! (every object, as the oracle's replay or the replicas hold it).

use super::schema::{field as f, get, MAX_LINES};
use super::Tpcc;
use crate::app::ObjectId;
use std::collections::BTreeMap;

/// The conditions that do not hold in `state`, each naming the warehouse and district.
pub fn check(app: &Tpcc, state: &BTreeMap<ObjectId, Vec<u8>>) -> Vec<String> {
    let k = &app.keys;
    let s = app.scale;
    let mut bad = Vec::new();
    for w in 0..app.warehouses {
        let Some(warehouse) = state.get(&k.warehouse(w)) else {
            continue;
        };
        // 3.3.2.1: W_YTD = sum(D_YTD).
        let d_ytd: i64 = (0..s.districts)
            .map(|d| get(&state[&k.district(w, d)], f::D_YTD))
            .sum();
        if get(warehouse, f::W_YTD) != d_ytd {
            bad.push(format!(
                "3.3.2.1 warehouse {w}: W_YTD {} but the districts' D_YTD sum to {d_ytd}",
                get(warehouse, f::W_YTD)
            ));
        }
        for d in 0..s.districts {
            let next = get(&state[&k.district(w, d)], f::D_NEXT_O_ID) as u64;
            let mut max_o = 0;
            let mut new_orders = Vec::new();
            let mut lines_counted = 0;
            let mut lines_ordered = 0;
            for o in 1..=s.capacity {
                let ol_cnt = get(&state[&k.order(w, d, o)], f::O_OL_CNT);
                if ol_cnt > 0 {
                    max_o = o;
                    lines_ordered += ol_cnt;
                }
                if get(&state[&k.new_order(w, d, o)], f::NO_PRESENT) == 1 {
                    new_orders.push(o);
                }
                lines_counted += (0..MAX_LINES)
                    .filter(|&l| get(&state[&k.order_line(w, d, o, l)], f::OL_ITEM) > 0)
                    .count() as i64;
            }
            // 3.3.2.2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
            let max_no = new_orders.last().copied();
            if next - 1 != max_o || max_no.is_some_and(|m| m != max_o) {
                bad.push(format!(
                    "3.3.2.2 warehouse {w} district {d}: D_NEXT_O_ID - 1 = {}, max(O_ID) = {max_o}, max(NO_O_ID) = {max_no:?}",
                    next - 1
                ));
            }
            // 3.3.2.3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER.
            if let (Some(&lo), Some(&hi)) = (new_orders.first(), new_orders.last()) {
                if hi - lo + 1 != new_orders.len() as u64 {
                    bad.push(format!(
                        "3.3.2.3 warehouse {w} district {d}: NEW-ORDER holds {} rows from {lo} to {hi}",
                        new_orders.len()
                    ));
                }
            }
            // 3.3.2.4: sum(O_OL_CNT) = rows in ORDER-LINE.
            if lines_ordered != lines_counted {
                bad.push(format!(
                    "3.3.2.4 warehouse {w} district {d}: the orders count {lines_ordered} lines, ORDER-LINE holds {lines_counted}"
                ));
            }
        }
    }
    bad
}

/// Districts whose order or history rows are all used ([`Scale::capacity`](super::Scale)):
/// their New-Orders or Payments answered [`Status::Full`](super::Status) and changed nothing.
pub fn full_districts(app: &Tpcc, state: &BTreeMap<ObjectId, Vec<u8>>) -> usize {
    let k = &app.keys;
    let cap = app.scale.capacity as i64;
    (0..app.warehouses)
        .flat_map(|w| (0..app.scale.districts).map(move |d| (w, d)))
        .filter_map(|(w, d)| state.get(&k.district(w, d)))
        .filter(|r| get(r, f::D_NEXT_O_ID) > cap || get(r, f::D_NEXT_H) >= cap)
        .count()
}
