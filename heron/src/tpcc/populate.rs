//! The initial database (clause 4.3.3.1), at any [`Scale`](super::Scale): a function of the
//! population seed and the warehouse, so every replica of a partition and the oracle build the
//! same one. Rows a run may fill later (orders and history beyond the initial ones) start
//! empty.

use super::schema::{field as f, name_row, row, MAX_LINES};
use super::{nurand, Tpcc, C_LAST};
use crate::app::{Application, ObjectId};
use transport::{Purpose, Rng};

/// What every customer has paid when the database is populated (10.00, in cents): its
/// C_YTD_PAYMENT, minus its C_BALANCE, and its one HISTORY row's H_AMOUNT (clause 4.3.3.1).
const FIRST_PAYMENT: i64 = 1_000;

/// Every row partition (warehouse) `w` holds, the replicated ITEM table included.
pub fn warehouse(app: &Tpcc, w: u64, put: &mut dyn FnMut(ObjectId, Vec<u8>)) {
    let s = app.scale;
    let k = &app.keys;
    let bytes = |t: u16| app.tables()[t as usize].value_bytes;
    use super::schema::table as t;
    // Items are the same everywhere: their own stream.
    let mut rng = Rng::derive(app.seed, Purpose::Workload, u64::MAX);
    for i in 0..s.items {
        let price = rng.range_inclusive(100, 10_000) as i64;
        let im = rng.range_inclusive(1, 10_000) as i64;
        put(k.item(i), row(bytes(t::ITEM), &[price, im]));
    }
    let mut rng = Rng::derive(app.seed, Purpose::Workload, w);
    // D_YTD starts at what the district's initial HISTORY rows sum to (30,000.00 at full
    // scale, as clause 4.3.3.1 gives it), so that condition 3.3.2.9 holds at any scale.
    let ytd = s.customers as i64 * FIRST_PAYMENT;
    put(
        k.warehouse(w),
        row(
            bytes(t::WAREHOUSE),
            &[rng.below(2_001) as i64, ytd * s.districts as i64],
        ),
    );
    for i in 0..s.items {
        let q = rng.range_inclusive(10, 100) as i64;
        put(k.stock(w, i), row(bytes(t::STOCK), &[q, 0, 0, 0]));
    }
    let delivered = s.delivered();
    for d in 0..s.districts {
        put(
            k.district(w, d),
            row(
                bytes(t::DISTRICT),
                &[
                    rng.below(2_001) as i64,
                    ytd,
                    s.customers as i64 + 1,
                    delivered as i64 + 1,
                    s.customers as i64,
                ],
            ),
        );
        let mut names: Vec<Vec<(u64, u64)>> = vec![Vec::new(); s.names() as usize];
        for c in 0..s.customers {
            let bad = rng.below(10) == 0;
            let first = rng.next_u64() >> 1;
            let last = if c < s.names() {
                c
            } else {
                nurand(&mut rng, 255, 0, s.names() - 1, C_LAST)
            };
            names[last as usize].push((first, c));
            let mut r = row(
                bytes(t::CUSTOMER),
                &[
                    rng.below(5_001) as i64,
                    bad as i64,
                    -FIRST_PAYMENT,
                    FIRST_PAYMENT,
                    1,
                    0,
                    first as i64,
                    last as i64,
                ],
            );
            rng.fill_bytes(&mut r[f::C_DATA_AT..f::C_DATA_AT + f::C_DATA_LEN]);
            put(k.customer(w, d, c), r);
            put(
                k.history(w, d, c),
                row(
                    bytes(t::HISTORY),
                    &[
                        c as i64,
                        d as i64,
                        w as i64,
                        d as i64,
                        w as i64,
                        FIRST_PAYMENT,
                    ],
                ),
            );
        }
        for (name, mut of) in names.into_iter().enumerate() {
            of.sort_unstable();
            let ids: Vec<u64> = of.into_iter().map(|(_, c)| c).collect();
            put(k.customer_name(w, d, name as u64), name_row(&ids));
        }
        // One order per customer, in a random permutation of them.
        let mut owner: Vec<u64> = (0..s.customers).collect();
        for i in (1..owner.len()).rev() {
            owner.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for o in 1..=s.capacity {
            let Some(&c) = owner.get(o as usize - 1) else {
                put(k.order(w, d, o), row(bytes(t::ORDER), &[]));
                put(k.new_order(w, d, o), row(bytes(t::NEW_ORDER), &[]));
                for l in 0..MAX_LINES {
                    put(k.order_line(w, d, o, l), row(bytes(t::ORDER_LINE), &[]));
                }
                if o > s.customers {
                    put(k.history(w, d, o - 1), row(bytes(t::HISTORY), &[]));
                }
                continue;
            };
            let done = o <= delivered;
            let carrier = if done { rng.range_inclusive(1, 10) } else { 0 };
            let lines = rng.range_inclusive(5, MAX_LINES);
            put(
                k.order(w, d, o),
                row(
                    bytes(t::ORDER),
                    &[c as i64, carrier as i64, lines as i64, 1],
                ),
            );
            put(
                k.new_order(w, d, o),
                row(bytes(t::NEW_ORDER), &[(!done) as i64]),
            );
            put(
                k.last_order(w, d, c),
                row(bytes(t::LAST_ORDER), &[o as i64]),
            );
            for l in 0..MAX_LINES {
                let mut r = row(bytes(t::ORDER_LINE), &[]);
                if l < lines {
                    let item = rng.below(s.items) + 1;
                    let amount = if done {
                        0
                    } else {
                        rng.range_inclusive(1, 999_999)
                    };
                    r = row(
                        bytes(t::ORDER_LINE),
                        &[item as i64, w as i64, done as i64, 5, amount as i64],
                    );
                }
                put(k.order_line(w, d, o, l), r);
            }
        }
    }
}
