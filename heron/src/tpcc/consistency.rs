//! The specification's twelve consistency conditions (clause 3.3.2.1-3.3.2.12), checked on a
//! database state (every object, as the oracle's replay or the replicas hold it).
//!
//! A row "exists" here as [`schema`](super::schema) encodes it: an ORDER row with
//! O_OL_CNT > 0, a NEW-ORDER row with its flag set, an ORDER-LINE row with an item.
//! O_CARRIER_ID 0 and OL_DELIVERY_D unset stand for null. HISTORY rows are all kept (a
//! district's [`Scale::capacity`] of them, 48 bytes each), so conditions 8-10 sum them as the
//! specification does; an unused HISTORY row is all zeros and adds nothing.
//!
//! # Departure
//! Condition 11 reads `count(ORDER) - count(NEW-ORDER) = 2100` per district, which only the
//! freshly populated database meets: every Delivery removes a NEW-ORDER row and keeps its
//! ORDER row. The condition names the CUSTOMER table too, and each Delivery adds one to its
//! customer's C_DELIVERY_CNT (0 when populated), so it is checked here as `count(ORDER) -
//! count(NEW-ORDER) = delivered + sum(C_DELIVERY_CNT)` over the district's customers, with
//! `delivered` the initial delivered orders ([`Scale::delivered`]; 2100 at full scale): the
//! specification's equation on a populated database, and one every transaction keeps.
//!
//! [`Scale::capacity`]: super::Scale::capacity
//! [`Scale::delivered`]: super::Scale::delivered

use super::schema::{field as f, get, MAX_LINES};
use super::Tpcc;
use crate::app::ObjectId;
use std::collections::BTreeMap;

/// The conditions that do not hold in `state`, each starting with the condition's number
/// (`3.3.2.N`) and naming the rows (warehouse, district, and order, line or customer).
pub fn check(app: &Tpcc, state: &BTreeMap<ObjectId, Vec<u8>>) -> Vec<String> {
    let k = &app.keys;
    let mut bad = Vec::new();
    let (present, absent): (Vec<u64>, Vec<u64>) =
        (0..app.warehouses).partition(|&w| state.contains_key(&k.warehouse(w)));
    for w in absent {
        bad.push(format!(
            "3.3.2 warehouse {w}: none of its rows are in the state, so no condition on it was checked"
        ));
    }
    let paid = Payments::sum(app, state, &present);
    for w in present {
        warehouse(app, state, &paid, w, &mut bad);
    }
    bad
}

/// HISTORY's amounts summed by the district paid at (conditions 8 and 9) and by the customer
/// who paid (condition 10): a remote payment is filed at the district paid at, in another
/// warehouse than the customer's, so both sums span every warehouse.
struct Payments {
    /// By (H_W_ID, H_D_ID).
    at: BTreeMap<(i64, i64), i64>,
    /// By (H_C_W_ID, H_C_D_ID, H_C_ID).
    by: BTreeMap<(i64, i64, i64), i64>,
}

impl Payments {
    /// Every HISTORY row of `warehouses`.
    fn sum(app: &Tpcc, state: &BTreeMap<ObjectId, Vec<u8>>, warehouses: &[u64]) -> Payments {
        let s = app.scale;
        let mut p = Payments {
            at: BTreeMap::new(),
            by: BTreeMap::new(),
        };
        for &w in warehouses {
            for d in 0..s.districts {
                for h in 0..s.capacity {
                    let r = &state[&app.keys.history(w, d, h)];
                    let amount = get(r, f::H_AMOUNT);
                    *p.at
                        .entry((get(r, f::H_W_ID), get(r, f::H_D_ID)))
                        .or_default() += amount;
                    let customer = (get(r, f::H_C_W_ID), get(r, f::H_C_D_ID), get(r, f::H_C_ID));
                    *p.by.entry(customer).or_default() += amount;
                }
            }
        }
        p
    }

    /// Paid at warehouse `w`.
    fn at_warehouse(&self, w: u64) -> i64 {
        let w = w as i64;
        self.at
            .range((w, i64::MIN)..=(w, i64::MAX))
            .map(|(_, a)| a)
            .sum()
    }

    /// Paid at district `d` of `w`.
    fn at_district(&self, w: u64, d: u64) -> i64 {
        self.at.get(&(w as i64, d as i64)).copied().unwrap_or(0)
    }

    /// Paid by customer `c` of district `d` of `w`.
    fn by_customer(&self, w: u64, d: u64, c: u64) -> i64 {
        self.by
            .get(&(w as i64, d as i64, c as i64))
            .copied()
            .unwrap_or(0)
    }
}

/// The conditions on warehouse `w` and its districts.
fn warehouse(
    app: &Tpcc,
    state: &BTreeMap<ObjectId, Vec<u8>>,
    paid: &Payments,
    w: u64,
    bad: &mut Vec<String>,
) {
    let k = &app.keys;
    let w_ytd = get(&state[&k.warehouse(w)], f::W_YTD);
    // 3.3.2.1: W_YTD = sum(D_YTD).
    let d_ytd: i64 = (0..app.scale.districts)
        .map(|d| get(&state[&k.district(w, d)], f::D_YTD))
        .sum();
    if w_ytd != d_ytd {
        bad.push(format!(
            "3.3.2.1 warehouse {w}: W_YTD {w_ytd} but the districts' D_YTD sum to {d_ytd}"
        ));
    }
    // 3.3.2.8: W_YTD = sum(H_AMOUNT) paid at the warehouse.
    let h = paid.at_warehouse(w);
    if w_ytd != h {
        bad.push(format!(
            "3.3.2.8 warehouse {w}: W_YTD {w_ytd} but its HISTORY rows' H_AMOUNT sum to {h}"
        ));
    }
    for d in 0..app.scale.districts {
        district(app, state, paid, w, d, bad);
    }
}

/// The conditions on district `d` of `w`, its orders and its customers.
fn district(
    app: &Tpcc,
    state: &BTreeMap<ObjectId, Vec<u8>>,
    paid: &Payments,
    w: u64,
    d: u64,
    bad: &mut Vec<String>,
) {
    let k = &app.keys;
    let s = app.scale;
    let here = format!("warehouse {w} district {d}");
    let row = &state[&k.district(w, d)];
    let next = get(row, f::D_NEXT_O_ID) as u64;
    let mut orders = 0;
    let mut max_o = 0;
    let mut new_orders = Vec::new();
    let mut lines_counted = 0;
    let mut lines_ordered = 0;
    // Per customer, OL_AMOUNT of the delivered lines of their orders (conditions 10 and 12).
    let mut delivered = vec![0i64; s.customers as usize];
    for o in 1..=s.capacity {
        let order = &state[&k.order(w, d, o)];
        let ol_cnt = get(order, f::O_OL_CNT);
        let carrier = get(order, f::O_CARRIER_ID);
        let queued = get(&state[&k.new_order(w, d, o)], f::NO_PRESENT) == 1;
        if ol_cnt > 0 {
            orders += 1;
            max_o = o;
            lines_ordered += ol_cnt;
            // 3.3.2.5: O_CARRIER_ID is null iff the order has a NEW-ORDER row.
            if (carrier == 0) != queued {
                bad.push(format!(
                    "3.3.2.5 {here} order {o}: O_CARRIER_ID {carrier} but {} NEW-ORDER row",
                    if queued { "a" } else { "no" }
                ));
            }
        } else if queued {
            bad.push(format!(
                "3.3.2.5 {here} order {o}: a NEW-ORDER row and no ORDER row"
            ));
        }
        if queued {
            new_orders.push(o);
        }
        let owner = get(order, f::O_C_ID);
        if ol_cnt > 0 && !(0..s.customers as i64).contains(&owner) {
            bad.push(format!(
                "3.3.2.10 {here} order {o}: O_C_ID {owner} is no customer of the district"
            ));
        }
        let mut amount = 0;
        let mut lines = 0;
        for l in 0..MAX_LINES {
            let line = &state[&k.order_line(w, d, o, l)];
            if get(line, f::OL_ITEM) == 0 {
                continue;
            }
            lines += 1;
            // 3.3.2.7: OL_DELIVERY_D is null iff the order's O_CARRIER_ID is.
            let done = get(line, f::OL_DELIVERED) != 0;
            if done != (carrier != 0) {
                bad.push(format!(
                    "3.3.2.7 {here} order {o} line {l}: OL_DELIVERY_D {} but O_CARRIER_ID {carrier}",
                    if done { "set" } else { "null" }
                ));
            }
            if done {
                amount += get(line, f::OL_AMOUNT);
            }
        }
        if ol_cnt > 0 {
            if let Some(sum) = delivered.get_mut(owner as usize) {
                *sum += amount;
            }
        }
        // 3.3.2.6: O_OL_CNT = the order's rows in ORDER-LINE (no ORDER row: none).
        if lines != ol_cnt {
            bad.push(format!(
                "3.3.2.6 {here} order {o}: O_OL_CNT {ol_cnt} but ORDER-LINE holds {lines} rows of it"
            ));
        }
        lines_counted += lines;
    }
    // 3.3.2.2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
    let max_no = new_orders.last().copied();
    if next - 1 != max_o || max_no.is_some_and(|m| m != max_o) {
        bad.push(format!(
            "3.3.2.2 {here}: D_NEXT_O_ID - 1 = {}, max(O_ID) = {max_o}, max(NO_O_ID) = {max_no:?}",
            next - 1
        ));
    }
    // 3.3.2.3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER.
    if let (Some(&lo), Some(&hi)) = (new_orders.first(), new_orders.last()) {
        if hi - lo + 1 != new_orders.len() as u64 {
            bad.push(format!(
                "3.3.2.3 {here}: NEW-ORDER holds {} rows from {lo} to {hi}",
                new_orders.len()
            ));
        }
    }
    // 3.3.2.4: sum(O_OL_CNT) = rows in ORDER-LINE.
    if lines_ordered != lines_counted {
        bad.push(format!(
            "3.3.2.4 {here}: the orders count {lines_ordered} lines, ORDER-LINE holds {lines_counted}"
        ));
    }
    // 3.3.2.9: D_YTD = sum(H_AMOUNT) paid at the district.
    let (d_ytd, h) = (get(row, f::D_YTD), paid.at_district(w, d));
    if d_ytd != h {
        bad.push(format!(
            "3.3.2.9 {here}: D_YTD {d_ytd} but its HISTORY rows' H_AMOUNT sum to {h}"
        ));
    }
    let customers: Vec<&[u8]> = (0..s.customers)
        .map(|c| state[&k.customer(w, d, c)].as_slice())
        .collect();
    // 3.3.2.11, as the module's doc explains: count(ORDER) - count(NEW-ORDER) = the initial
    // delivered orders + sum(C_DELIVERY_CNT).
    let delivery_cnt: i64 = customers.iter().map(|r| get(r, f::C_DELIVERY_CNT)).sum();
    let expected = s.delivered() as i64 + delivery_cnt;
    let taken = orders - new_orders.len() as i64;
    if taken != expected {
        bad.push(format!(
            "3.3.2.11 {here}: count(ORDER) - count(NEW-ORDER) = {orders} - {} = {taken}, but {} were delivered when populated and sum(C_DELIVERY_CNT) = {delivery_cnt}",
            new_orders.len(),
            s.delivered()
        ));
    }
    for (c, r) in customers.iter().enumerate() {
        let balance = get(r, f::C_BALANCE);
        let ol = delivered[c];
        // 3.3.2.10: C_BALANCE = sum(OL_AMOUNT delivered) - sum(H_AMOUNT paid by the customer).
        let h = paid.by_customer(w, d, c as u64);
        if balance != ol - h {
            bad.push(format!(
                "3.3.2.10 {here} customer {c}: C_BALANCE {balance} but delivered OL_AMOUNT {ol} - H_AMOUNT {h} = {}",
                ol - h
            ));
        }
        // 3.3.2.12: C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT delivered).
        let ytd = get(r, f::C_YTD_PAYMENT);
        if balance + ytd != ol {
            bad.push(format!(
                "3.3.2.12 {here} customer {c}: C_BALANCE {balance} + C_YTD_PAYMENT {ytd} = {} but delivered OL_AMOUNT {ol}",
                balance + ytd
            ));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::super::schema::{add, set, table as t};
    use super::super::tests::database;
    use super::super::{encode, Kind, Scale, Status};
    use super::*;
    use crate::app::{execute_on, Application};
    use std::collections::BTreeSet;
    use std::sync::OnceLock;
    use transport::{Purpose, Rng};

    type Db = BTreeMap<ObjectId, Vec<u8>>;
    type Writes = Vec<(ObjectId, Vec<u8>)>;

    /// Three warehouses, populated, then 1,500 requests of the specification's mix (remote
    /// payments and order lines, deliveries) run one after another: every condition holds
    /// after both, and each test corrupts this database.
    fn ran() -> (Tpcc, Db) {
        static RAN: OnceLock<(Tpcc, Db)> = OnceLock::new();
        RAN.get_or_init(|| {
            let app = Tpcc::new(3, Scale::scaled(100, 200), 11);
            let mut db = database(&app);
            assert_eq!(check(&app, &db), Vec::<String>::new(), "when populated");
            let mut rng = Rng::derive(3, Purpose::Workload, 0);
            let mut kinds = BTreeSet::new();
            for i in 0..1_500 {
                let request = app.generate(i % 6, (i / 6) as u64, &mut rng);
                kinds.insert(Kind::of(&request));
                let e = execute_on(&app, &mut db, &request);
                assert_ne!(e.response[0], Status::Full as u8, "capacity too small");
            }
            assert_eq!(kinds.len(), 5);
            assert_eq!(check(&app, &db), Vec::<String>::new(), "after the mix");
            // Three more orders in every district of warehouse 0, so each has a queue of
            // undelivered orders for the tests' Deliveries and New-Orders to get wrong.
            for d in 0..app.scale.districts {
                for c in 0..3 {
                    execute_on(&app, &mut db, &new_order(0, d, c));
                }
            }
            assert_eq!(check(&app, &db), Vec::<String>::new(), "after the orders");
            (app, db)
        })
        .clone()
    }

    /// A New-Order of customer `c` of district `d` of `w`: five lines, supplied by `w`.
    fn new_order(w: u64, d: u64, c: u64) -> Vec<u8> {
        let mut v = vec![Kind::NewOrder as u64, w, d, c, 5];
        for i in 0..5 {
            v.extend([i, w, 1 + i]);
        }
        encode(&v)
    }

    /// A Payment of 123.45 at district 1 of warehouse 0 by customer 5 of district 2 of
    /// warehouse 1 (remote, by id).
    fn payment() -> Vec<u8> {
        encode(&[Kind::Payment as u64, 0, 1, 1, 2, 0, 5, 12_345])
    }

    /// A Delivery at warehouse 0, carrier 7.
    fn delivery() -> Vec<u8> {
        encode(&[Kind::Delivery as u64, 0, 7])
    }

    /// Runs `request` as a buggy transaction would: its writes go through `bug` (given the
    /// database before) first, which changes, drops or misplaces some.
    fn buggy(request: &[u8], bug: impl FnOnce(&Db, &mut Writes)) -> (Tpcc, Db) {
        let (app, mut db) = ran();
        let mut e = execute_on(&app, &mut db.clone(), request);
        assert_eq!(e.response[0], Status::Done as u8);
        bug(&db, &mut e.writes);
        for (o, v) in e.writes {
            db.insert(o, v);
        }
        (app, db)
    }

    /// The first write to `table`.
    fn first(writes: &mut Writes, table: u16) -> &mut (ObjectId, Vec<u8>) {
        writes
            .iter_mut()
            .find(|(o, _)| o.table == table)
            .expect("a write to the table")
    }

    /// Asserts that exactly `conditions` are reported, and that one report of the first
    /// names `row`.
    fn caught(app: &Tpcc, db: &Db, conditions: &[u32], row: &str) {
        let bad = check(app, db);
        let numbers: BTreeSet<u32> = bad
            .iter()
            .map(|b| {
                let n = b.strip_prefix("3.3.2.").and_then(|r| r.split(' ').next());
                n.and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("no condition number: {b}"))
            })
            .collect();
        assert_eq!(numbers, conditions.iter().copied().collect(), "{bad:#?}");
        let prefix = format!("3.3.2.{} {row}", conditions[0]);
        assert!(
            bad.iter().any(|b| b.starts_with(&prefix)),
            "{prefix}: {bad:#?}"
        );
    }

    #[test]
    fn condition_1_catches_a_payment_that_skips_w_ytd() {
        let (app, db) = buggy(&payment(), |_, w| {
            w.retain(|(o, _)| o.table != t::WAREHOUSE)
        });
        // W_YTD is also short of the warehouse's HISTORY.
        caught(&app, &db, &[1, 8], "warehouse 0:");
    }

    #[test]
    fn condition_2_catches_a_new_order_that_keeps_d_next_o_id() {
        let (app, db) = buggy(&new_order(0, 4, 9), |_, w| {
            w.retain(|(o, _)| o.table != t::DISTRICT)
        });
        caught(&app, &db, &[2], "warehouse 0 district 4:");
    }

    #[test]
    fn condition_3_catches_a_delivery_that_takes_the_wrong_new_order_row() {
        // District 0's NEW-ORDER row removed is the second in its queue, not the oldest.
        let (app, db) = buggy(&delivery(), |_, w| first(w, t::NEW_ORDER).0.key += 1);
        // The delivered order keeps its NEW-ORDER row, the next one has none.
        caught(&app, &db, &[3, 5], "warehouse 0 district 0:");
    }

    #[test]
    fn condition_4_catches_a_new_order_that_loses_a_line() {
        let (app, db) = buggy(&new_order(0, 3, 1), |_, w| {
            let last = w.iter().rposition(|(o, _)| o.table == t::ORDER_LINE);
            w.remove(last.unwrap());
        });
        // The order's O_OL_CNT is one more than its lines, too.
        caught(&app, &db, &[4, 6], "warehouse 0 district 3:");
    }

    #[test]
    fn condition_5_catches_an_order_and_new_order_row_apart() {
        // A New-Order that inserts its ORDER row and no NEW-ORDER row: the newest order is
        // neither queued nor delivered.
        let (app, db) = buggy(&new_order(0, 6, 2), |_, w| {
            w.retain(|(o, _)| o.table != t::NEW_ORDER)
        });
        caught(&app, &db, &[5, 2, 11], "warehouse 0 district 6 order");
        // And one that inserts the NEW-ORDER row and no ORDER row.
        let (app, db) = buggy(&new_order(0, 6, 2), |_, w| {
            w.retain(|(o, _)| o.table != t::ORDER)
        });
        caught(&app, &db, &[5, 2, 4, 6, 11], "warehouse 0 district 6 order");
    }

    #[test]
    fn condition_6_catches_a_new_order_that_files_a_line_under_the_next_order() {
        let (app, db) = buggy(&new_order(0, 7, 4), |_, w| {
            let last = w.iter_mut().rfind(|(o, _)| o.table == t::ORDER_LINE);
            // Keys number ORDER-LINE rows order by order, 15 each: one order on, line 0.
            let key = &mut last.unwrap().0.key;
            *key = (*key / MAX_LINES + 1) * MAX_LINES;
        });
        // District 7 still holds as many lines as its orders count (condition 4).
        caught(&app, &db, &[6], "warehouse 0 district 7 order");
    }

    #[test]
    fn condition_7_catches_a_delivery_that_leaves_a_line_undelivered() {
        let (app, db) = buggy(&delivery(), |_, w| {
            let line = w.iter().position(|(o, _)| o.table == t::ORDER_LINE);
            w.remove(line.unwrap());
        });
        // The customer's C_BALANCE counts the line's amount, delivered lines do not.
        caught(&app, &db, &[7, 10, 12], "warehouse 0 district 0 order");
    }

    #[test]
    fn condition_8_catches_a_payment_that_writes_no_history_row() {
        let (app, db) = buggy(&payment(), |_, w| w.retain(|(o, _)| o.table != t::HISTORY));
        caught(&app, &db, &[8, 9, 10], "warehouse 0:");
    }

    #[test]
    fn condition_9_catches_a_payment_filed_under_another_district() {
        let (app, db) = buggy(&payment(), |_, w| {
            set(&mut first(w, t::HISTORY).1, f::H_D_ID, 4);
        });
        caught(&app, &db, &[9], "warehouse 0 district 1:");
    }

    #[test]
    fn condition_10_catches_payments_and_deliveries_that_miss_the_balance() {
        // A Payment filed under the customer's neighbour.
        let (app, db) = buggy(&payment(), |_, w| {
            set(&mut first(w, t::HISTORY).1, f::H_C_ID, 6);
        });
        caught(&app, &db, &[10], "warehouse 1 district 2 customer 5:");
        // A Delivery that leaves C_BALANCE as it was (C_YTD_PAYMENT then misses it too).
        let (app, db) = buggy(&delivery(), |before, w| {
            for (o, r) in w.iter_mut().filter(|(o, _)| o.table == t::CUSTOMER) {
                set(r, f::C_BALANCE, get(&before[o], f::C_BALANCE));
            }
        });
        caught(&app, &db, &[10, 12], "warehouse 0 district 0 customer");
    }

    #[test]
    fn condition_11_catches_a_delivery_that_skips_c_delivery_cnt() {
        let (app, db) = buggy(&delivery(), |_, w| {
            add(&mut first(w, t::CUSTOMER).1, f::C_DELIVERY_CNT, -1);
        });
        caught(&app, &db, &[11], "warehouse 0 district 0:");
    }

    #[test]
    fn condition_11_is_the_specifications_equation_when_populated() {
        // No Delivery has run: sum(C_DELIVERY_CNT) = 0, and count(ORDER) - count(NEW-ORDER)
        // is the initial delivered orders (2,100 at full scale) in every district.
        let app = Tpcc::new(1, Scale::scaled(10, 300), 5);
        let db = database(&app);
        assert_eq!(app.scale.delivered(), 210);
        assert!(db
            .iter()
            .filter(|(o, _)| o.table == t::CUSTOMER)
            .all(|(_, r)| get(r, f::C_DELIVERY_CNT) == 0));
        assert_eq!(check(&app, &db), Vec::<String>::new());
    }

    #[test]
    fn condition_12_catches_a_payment_that_skips_c_ytd_payment() {
        let (app, db) = buggy(&payment(), |_, w| {
            add(&mut first(w, t::CUSTOMER).1, f::C_YTD_PAYMENT, -12_345);
        });
        caught(&app, &db, &[12], "warehouse 1 district 2 customer 5:");
    }

    #[test]
    fn a_missing_warehouse_is_reported() {
        let (app, mut db) = ran();
        db.retain(|o, _| app.partition_of(*o).0 != 2 || o.table == t::ITEM);
        let bad = check(&app, &db);
        assert!(
            bad.iter().any(|b| b.starts_with("3.3.2 warehouse 2:")),
            "{bad:?}"
        );
    }
}
