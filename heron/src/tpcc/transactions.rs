//! The five transactions (clause 2): what each reads, round after round, and what it does.
//!
//! [`needs`] answers, from what a request has read so far, every object it must read: Heron
//! calls it for the first round (nothing read) and again after each round until nothing is
//! missing ([`Application::more_reads`](crate::Application::more_reads)). [`execute`] then
//! runs the transaction on the values read, every replica of every involved partition alike.

use super::schema::{add, field as f, get, named, set, table as t, MAX_LINES};
use super::{words, Kind, Status, Tpcc};
use crate::app::{Execution, ObjectId, Reads};

/// Every object `request` reads, given `reads` so far.
pub fn needs(app: &Tpcc, request: &[u8], reads: &Reads) -> Vec<ObjectId> {
    let k = &app.keys;
    let v = words(request);
    let value = |o: ObjectId, i: usize| reads.get(&o).map(|r| get(r, i));
    // Sized for the common kinds up front (a New-Order names up to 33 objects): the vector
    // is built once per round of reads of every request.
    let mut out = Vec::with_capacity(3 + 2 * MAX_LINES as usize);
    match Kind::of(request) {
        Kind::NewOrder => {
            let (w, d, c) = (v[0], v[1], v[2]);
            out.extend([k.warehouse(w), k.district(w, d), k.customer(w, d, c)]);
            for line in v[4..].chunks_exact(3) {
                let (i, supply) = (line[0], line[1]);
                if i < app.scale.items {
                    out.extend([k.item(i), k.stock(supply, i)]);
                }
            }
        }
        Kind::Payment => {
            let (w, d, c_w, c_d) = (v[0], v[1], v[2], v[3]);
            out.extend([k.warehouse(w), k.district(w, d)]);
            out.extend(customer(app, reads, c_w, c_d, v[4], v[5]).1);
        }
        Kind::OrderStatus => {
            let (w, d) = (v[0], v[1]);
            let (c, want) = customer(app, reads, w, d, v[2], v[3]);
            out.extend(want);
            if let Some(c) = c {
                out.extend([k.customer(w, d, c), k.last_order(w, d, c)]);
                let o = value(k.last_order(w, d, c), f::L_O_ID).unwrap_or(0) as u64;
                if o > 0 {
                    out.extend(order_and_lines(app, reads, w, d, o));
                }
            }
        }
        Kind::Delivery => {
            let w = v[0];
            for d in 0..app.scale.districts {
                out.push(k.district(w, d));
                if let Some(o) = undelivered(app, reads, w, d) {
                    out.push(k.new_order(w, d, o));
                    out.extend(order_and_lines(app, reads, w, d, o));
                    if let Some(c) = value(k.order(w, d, o), f::O_C_ID) {
                        out.push(k.customer(w, d, c as u64));
                    }
                }
            }
        }
        Kind::StockLevel => {
            let (w, d) = (v[0], v[1]);
            out.push(k.district(w, d));
            if let Some(next) = value(k.district(w, d), f::D_NEXT_O_ID) {
                let next = next as u64;
                for o in next.saturating_sub(20).max(1)..next {
                    let want = order_and_lines(app, reads, w, d, o);
                    // The stock of each line's item, once the line is read.
                    let stock = want[1..]
                        .iter()
                        .filter_map(|ol| reads.get(ol))
                        .map(|r| k.stock(w, get(r, f::OL_ITEM) as u64 - 1));
                    out.extend(stock);
                    out.extend(want);
                }
            }
        }
    }
    out
}

/// The customer a request names by id or by last name (`by_name`, `who`): its id once known,
/// and the objects needed to learn it.
fn customer(
    app: &Tpcc,
    reads: &Reads,
    w: u64,
    d: u64,
    by_name: u64,
    who: u64,
) -> (Option<u64>, Vec<ObjectId>) {
    let k = &app.keys;
    if by_name == 0 {
        return (Some(who), vec![k.customer(w, d, who)]);
    }
    let index = k.customer_name(w, d, who);
    let c = reads.get(&index).map(|r| {
        let ids = named(r);
        // The one at position n/2, rounded up, by first name (clause 2.5.2.2).
        ids[ids.len().div_ceil(2) - 1]
    });
    let mut want = vec![index];
    want.extend(c.map(|c| k.customer(w, d, c)));
    (c, want)
}

/// The oldest undelivered order of district `d`, once its row is read.
fn undelivered(app: &Tpcc, reads: &Reads, w: u64, d: u64) -> Option<u64> {
    let r = reads.get(&app.keys.district(w, d))?;
    let (oldest, next) = (get(r, f::D_NEXT_DELIVERY), get(r, f::D_NEXT_O_ID));
    (oldest < next).then_some(oldest as u64)
}

/// Order `o`, and its lines once the order is read.
fn order_and_lines(app: &Tpcc, reads: &Reads, w: u64, d: u64, o: u64) -> Vec<ObjectId> {
    let k = &app.keys;
    let order = k.order(w, d, o);
    let mut out = Vec::with_capacity(1 + MAX_LINES as usize);
    out.push(order);
    if let Some(r) = reads.get(&order) {
        out.extend((0..get(r, f::O_OL_CNT) as u64).map(|l| k.order_line(w, d, o, l)));
    }
    out
}

/// A response: the status, then `words`.
fn respond(status: Status, words: &[i64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * (1 + words.len()));
    out.extend_from_slice(&(status as i64).to_le_bytes());
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

/// Runs `request` on `reads` (everything [`needs`] named).
pub fn execute(app: &Tpcc, request: &[u8], reads: &Reads) -> Execution {
    let v = words(request);
    match Kind::of(request) {
        Kind::NewOrder => new_order(app, &v, reads),
        Kind::Payment => payment(app, &v, reads),
        Kind::OrderStatus => order_status(app, &v, reads),
        Kind::Delivery => delivery(app, &v, reads),
        Kind::StockLevel => stock_level(app, &v, reads),
    }
}

/// A row read, to modify.
fn row(reads: &Reads, o: ObjectId) -> Vec<u8> {
    reads[&o].clone()
}

/// Clause 2.4.2.
fn new_order(app: &Tpcc, v: &[u64], reads: &Reads) -> Execution {
    let k = &app.keys;
    let (w, d, c) = (v[0], v[1], v[2]);
    let lines: Vec<&[u64]> = v[4..].chunks_exact(3).collect();
    if lines.iter().any(|l| l[0] >= app.scale.items) {
        return Execution {
            writes: Vec::new(),
            response: respond(Status::RolledBack, &[]),
        };
    }
    let mut district = row(reads, k.district(w, d));
    let o = get(&district, f::D_NEXT_O_ID) as u64;
    if o > app.scale.capacity {
        return Execution {
            writes: Vec::new(),
            response: respond(Status::Full, &[]),
        };
    }
    let mut writes = Vec::new();
    set(&mut district, f::D_NEXT_O_ID, o as i64 + 1);
    writes.push((k.district(w, d), district.clone()));
    let all_local = lines.iter().all(|l| l[1] == w);
    writes.push((
        k.order(w, d, o),
        app.new_row(
            t::ORDER,
            &[c as i64, 0, lines.len() as i64, all_local as i64],
        ),
    ));
    writes.push((k.new_order(w, d, o), app.new_row(t::NEW_ORDER, &[1])));
    writes.push((
        k.last_order(w, d, c),
        app.new_row(t::LAST_ORDER, &[o as i64]),
    ));
    let mut total = 0i64;
    let mut out = Vec::new();
    for (l, line) in lines.iter().enumerate() {
        let (i, supply, qty) = (line[0], line[1], line[2] as i64);
        let price = get(&reads[&k.item(i)], f::I_PRICE);
        // An item may appear twice in an order: the second line sees the first's update.
        let stock_id = k.stock(supply, i);
        let mut stock = writes
            .iter()
            .rev()
            .find(|(o, _)| *o == stock_id)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| row(reads, stock_id));
        let q = get(&stock, f::S_QUANTITY);
        set(
            &mut stock,
            f::S_QUANTITY,
            if q >= qty + 10 { q - qty } else { q - qty + 91 },
        );
        add(&mut stock, f::S_YTD, qty);
        add(&mut stock, f::S_ORDER_CNT, 1);
        if supply != w {
            add(&mut stock, f::S_REMOTE_CNT, 1);
        }
        out.extend([get(&stock, f::S_QUANTITY), price]);
        writes.push((stock_id, stock));
        let amount = qty * price;
        total += amount;
        writes.push((
            k.order_line(w, d, o, l as u64),
            app.new_row(
                t::ORDER_LINE,
                &[i as i64 + 1, supply as i64, 0, qty, amount],
            ),
        ));
    }
    let discount = get(&reads[&k.customer(w, d, c)], f::C_DISCOUNT);
    let tax = get(&reads[&k.warehouse(w)], f::W_TAX) + get(&reads[&k.district(w, d)], f::D_TAX);
    let total = total * (10_000 - discount) / 10_000 * (10_000 + tax) / 10_000;
    let mut response = vec![o as i64, total];
    response.extend(out);
    Execution {
        writes,
        response: respond(Status::Done, &response),
    }
}

/// Clause 2.5.2.
fn payment(app: &Tpcc, v: &[u64], reads: &Reads) -> Execution {
    let k = &app.keys;
    let (w, d, c_w, c_d, amount) = (v[0], v[1], v[2], v[3], v[6] as i64);
    let c = customer(app, reads, c_w, c_d, v[4], v[5])
        .0
        .expect("the customer was read");
    let mut district = row(reads, k.district(w, d));
    let h = get(&district, f::D_NEXT_H) as u64;
    if h >= app.scale.capacity {
        return Execution {
            writes: Vec::new(),
            response: respond(Status::Full, &[]),
        };
    }
    let mut warehouse = row(reads, k.warehouse(w));
    add(&mut warehouse, f::W_YTD, amount);
    add(&mut district, f::D_YTD, amount);
    set(&mut district, f::D_NEXT_H, h as i64 + 1);
    let mut cust = row(reads, k.customer(c_w, c_d, c));
    add(&mut cust, f::C_BALANCE, -amount);
    add(&mut cust, f::C_YTD_PAYMENT, amount);
    add(&mut cust, f::C_PAYMENT_CNT, 1);
    if get(&cust, f::C_BAD_CREDIT) == 1 {
        // C_DATA gets the payment's ids and amount in front, the rest shifted out.
        let data = &mut cust[f::C_DATA_AT..f::C_DATA_AT + f::C_DATA_LEN];
        let mut entry: Vec<u8> = [c as i64, c_d as i64, c_w as i64, d as i64, w as i64, amount]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        entry.extend_from_slice(&data[..data.len() - entry.len()]);
        data.copy_from_slice(&entry);
    }
    let balance = get(&cust, f::C_BALANCE);
    let history = app.new_row(
        t::HISTORY,
        &[c as i64, c_d as i64, c_w as i64, d as i64, w as i64, amount],
    );
    Execution {
        writes: vec![
            (k.warehouse(w), warehouse),
            (k.district(w, d), district),
            (k.customer(c_w, c_d, c), cust),
            (k.history(w, d, h), history),
        ],
        response: respond(Status::Done, &[c as i64, balance]),
    }
}

/// Clause 2.6.2: reads only.
fn order_status(app: &Tpcc, v: &[u64], reads: &Reads) -> Execution {
    let k = &app.keys;
    let (w, d) = (v[0], v[1]);
    let c = customer(app, reads, w, d, v[2], v[3])
        .0
        .expect("the customer was read");
    let balance = get(&reads[&k.customer(w, d, c)], f::C_BALANCE);
    let o = get(&reads[&k.last_order(w, d, c)], f::L_O_ID) as u64;
    let mut out = vec![c as i64, balance, o as i64];
    if o > 0 {
        let order = &reads[&k.order(w, d, o)];
        out.push(get(order, f::O_CARRIER_ID));
        for l in 0..get(order, f::O_OL_CNT) as u64 {
            let line = &reads[&k.order_line(w, d, o, l)];
            out.extend(
                [
                    f::OL_ITEM,
                    f::OL_SUPPLY_W_ID,
                    f::OL_QUANTITY,
                    f::OL_AMOUNT,
                    f::OL_DELIVERED,
                ]
                .map(|i| get(line, i)),
            );
        }
    }
    Execution {
        writes: Vec::new(),
        response: respond(Status::Done, &out),
    }
}

/// Clause 2.7.4: the oldest undelivered order of every district.
fn delivery(app: &Tpcc, v: &[u64], reads: &Reads) -> Execution {
    let k = &app.keys;
    let (w, carrier) = (v[0], v[1] as i64);
    let mut writes = Vec::new();
    let mut delivered = Vec::new();
    for d in 0..app.scale.districts {
        let Some(o) = undelivered(app, reads, w, d) else {
            continue;
        };
        let mut district = row(reads, k.district(w, d));
        set(&mut district, f::D_NEXT_DELIVERY, o as i64 + 1);
        writes.push((k.district(w, d), district));
        let mut flag = row(reads, k.new_order(w, d, o));
        set(&mut flag, f::NO_PRESENT, 0);
        writes.push((k.new_order(w, d, o), flag));
        let mut order = row(reads, k.order(w, d, o));
        set(&mut order, f::O_CARRIER_ID, carrier);
        let c = get(&order, f::O_C_ID) as u64;
        let mut sum = 0;
        for l in 0..get(&order, f::O_OL_CNT) as u64 {
            let mut line = row(reads, k.order_line(w, d, o, l));
            sum += get(&line, f::OL_AMOUNT);
            set(&mut line, f::OL_DELIVERED, 1);
            writes.push((k.order_line(w, d, o, l), line));
        }
        writes.push((k.order(w, d, o), order));
        let mut cust = row(reads, k.customer(w, d, c));
        add(&mut cust, f::C_BALANCE, sum);
        add(&mut cust, f::C_DELIVERY_CNT, 1);
        writes.push((k.customer(w, d, c), cust));
        delivered.push(o as i64);
    }
    Execution {
        writes,
        response: respond(Status::Done, &delivered),
    }
}

/// Clause 2.8.2: distinct items of the district's last 20 orders below the threshold.
fn stock_level(app: &Tpcc, v: &[u64], reads: &Reads) -> Execution {
    let k = &app.keys;
    let (w, d, threshold) = (v[0], v[1], v[2] as i64);
    let next = get(&reads[&k.district(w, d)], f::D_NEXT_O_ID) as u64;
    let mut items = std::collections::BTreeSet::new();
    for o in next.saturating_sub(20).max(1)..next {
        let lines = get(&reads[&k.order(w, d, o)], f::O_OL_CNT) as u64;
        for l in 0..lines.min(MAX_LINES) {
            let item = get(&reads[&k.order_line(w, d, o, l)], f::OL_ITEM);
            items.insert(item as u64 - 1);
        }
    }
    let low = items
        .into_iter()
        .filter(|&i| get(&reads[&k.stock(w, i)], f::S_QUANTITY) < threshold)
        .count();
    Execution {
        writes: Vec::new(),
        response: respond(Status::Done, &[low as i64]),
    }
}
