//! TPC-C's nine tables (and two indexes) as Heron objects: which table a key belongs to, its
//! partition (its warehouse), its row, and the fields of each row.
//!
//! A row is a run of little-endian 64-bit fields, then the table's text columns as filler up
//! to about the size the specification gives the row (clause 1.3), so state transfers and
//! copies move what a real row moves. Money is in cents, rates in basis points (1/10000). Keys
//! are `warehouse * rows_per_warehouse + row`: a table's rows of warehouse `w` live in
//! partition `w`. Ids are 0-based except order ids, which start at 1 as in the specification
//! (0 means none).

use super::Scale;
use crate::app::{ObjectId, Table};

/// Table numbers, in the object store's order.
pub mod table {
    /// WAREHOUSE: one row per warehouse.
    pub const WAREHOUSE: u16 = 0;
    /// DISTRICT: `districts` per warehouse.
    pub const DISTRICT: u16 = 1;
    /// CUSTOMER: `customers` per district.
    pub const CUSTOMER: u16 = 2;
    /// Customers by last name (an index, read-only): per district and name, the customers
    /// sorted by first name.
    pub const CUSTOMER_NAME: u16 = 3;
    /// ORDER: `capacity` per district.
    pub const ORDER: u16 = 4;
    /// NEW-ORDER: a presence flag per order row.
    pub const NEW_ORDER: u16 = 5;
    /// ORDER-LINE: 15 per order row.
    pub const ORDER_LINE: u16 = 6;
    /// ITEM: replicated in every partition (section 5.2.1), never written.
    pub const ITEM: u16 = 7;
    /// STOCK: one row per item per warehouse.
    pub const STOCK: u16 = 8;
    /// HISTORY: `capacity` per district.
    pub const HISTORY: u16 = 9;
    /// A customer's latest order (an index, written by New Order): what Order-Status looks
    /// up.
    pub const LAST_ORDER: u16 = 10;
}

/// Field numbers of each table's row.
pub mod field {
    /// WAREHOUSE: W_TAX.
    pub const W_TAX: usize = 0;
    /// WAREHOUSE: W_YTD.
    pub const W_YTD: usize = 1;
    /// DISTRICT: D_TAX.
    pub const D_TAX: usize = 0;
    /// DISTRICT: D_YTD.
    pub const D_YTD: usize = 1;
    /// DISTRICT: D_NEXT_O_ID.
    pub const D_NEXT_O_ID: usize = 2;
    /// DISTRICT: the oldest undelivered order (the NEW-ORDER rows form a queue per district).
    pub const D_NEXT_DELIVERY: usize = 3;
    /// DISTRICT: the next free HISTORY row.
    pub const D_NEXT_H: usize = 4;
    /// CUSTOMER: C_DISCOUNT.
    pub const C_DISCOUNT: usize = 0;
    /// CUSTOMER: C_CREDIT, 1 for BC ("bad credit").
    pub const C_BAD_CREDIT: usize = 1;
    /// CUSTOMER: C_BALANCE.
    pub const C_BALANCE: usize = 2;
    /// CUSTOMER: C_YTD_PAYMENT.
    pub const C_YTD_PAYMENT: usize = 3;
    /// CUSTOMER: C_PAYMENT_CNT.
    pub const C_PAYMENT_CNT: usize = 4;
    /// CUSTOMER: C_DELIVERY_CNT.
    pub const C_DELIVERY_CNT: usize = 5;
    /// CUSTOMER: C_FIRST, as a sort key.
    pub const C_FIRST: usize = 6;
    /// CUSTOMER: C_LAST, as the name's number (clause 4.3.2.3's syllables).
    pub const C_LAST: usize = 7;
    /// CUSTOMER: where C_DATA starts (bytes).
    pub const C_DATA_AT: usize = 64;
    /// CUSTOMER: bytes of C_DATA.
    pub const C_DATA_LEN: usize = 500;
    /// CUSTOMER_NAME: how many customers bear the name.
    pub const N_COUNT: usize = 0;
    /// ORDER: O_C_ID.
    pub const O_C_ID: usize = 0;
    /// ORDER: O_CARRIER_ID (0: null).
    pub const O_CARRIER_ID: usize = 1;
    /// ORDER: O_OL_CNT (0: the row is empty).
    pub const O_OL_CNT: usize = 2;
    /// ORDER: O_ALL_LOCAL.
    pub const O_ALL_LOCAL: usize = 3;
    /// NEW-ORDER: 1 while the order is undelivered.
    pub const NO_PRESENT: usize = 0;
    /// ORDER-LINE: OL_I_ID + 1 (0: the row is empty).
    pub const OL_ITEM: usize = 0;
    /// ORDER-LINE: OL_SUPPLY_W_ID.
    pub const OL_SUPPLY_W_ID: usize = 1;
    /// ORDER-LINE: OL_DELIVERY_D is set (delivered).
    pub const OL_DELIVERED: usize = 2;
    /// ORDER-LINE: OL_QUANTITY.
    pub const OL_QUANTITY: usize = 3;
    /// ORDER-LINE: OL_AMOUNT.
    pub const OL_AMOUNT: usize = 4;
    /// ITEM: I_PRICE.
    pub const I_PRICE: usize = 0;
    /// ITEM: I_IM_ID.
    pub const I_IM_ID: usize = 1;
    /// STOCK: S_QUANTITY.
    pub const S_QUANTITY: usize = 0;
    /// STOCK: S_YTD.
    pub const S_YTD: usize = 1;
    /// STOCK: S_ORDER_CNT.
    pub const S_ORDER_CNT: usize = 2;
    /// STOCK: S_REMOTE_CNT.
    pub const S_REMOTE_CNT: usize = 3;
    /// HISTORY: H_C_ID, the customer who paid.
    pub const H_C_ID: usize = 0;
    /// HISTORY: H_C_D_ID, the customer's district.
    pub const H_C_D_ID: usize = 1;
    /// HISTORY: H_C_W_ID, the customer's warehouse.
    pub const H_C_W_ID: usize = 2;
    /// HISTORY: H_D_ID, the district paid at.
    pub const H_D_ID: usize = 3;
    /// HISTORY: H_W_ID, the warehouse paid at.
    pub const H_W_ID: usize = 4;
    /// HISTORY: H_AMOUNT.
    pub const H_AMOUNT: usize = 5;
    /// LAST_ORDER: the customer's latest O_ID (0: none).
    pub const L_O_ID: usize = 0;
}

/// Most lines an order has (clause 2.4.1.3).
pub const MAX_LINES: u64 = 15;

/// Most customers of a district sharing one last name that the index holds.
pub const NAME_CAPACITY: usize = 64;

/// The schema at `scale`: the tables in [`table`]'s order, with the specification's row sizes
/// (ours a little larger where fields are 8 bytes).
pub fn tables(scale: &Scale) -> Vec<Table> {
    let s = scale;
    let t = |name, rows, value_bytes| Table {
        name,
        rows,
        value_bytes,
        replicated: false,
    };
    vec![
        t("warehouse", 1, 96),
        t("district", s.districts, 96),
        t("customer", s.districts * s.customers, 656),
        t(
            "customer_name",
            s.districts * s.names(),
            8 + 4 * NAME_CAPACITY,
        ),
        t("order", s.districts * s.capacity, 32),
        t("new_order", s.districts * s.capacity, 8),
        t("order_line", s.districts * s.capacity * MAX_LINES, 64),
        Table {
            replicated: true,
            ..t("item", s.items, 88)
        },
        t("stock", s.items, 328),
        t("history", s.districts * s.capacity, 48),
        t("last_order", s.districts * s.customers, 8),
    ]
}

/// Builds the keys of one scale.
#[derive(Clone, Copy, Debug)]
pub struct Keys {
    scale: Scale,
}

impl Keys {
    /// Keys at `scale`.
    pub fn new(scale: Scale) -> Keys {
        Keys { scale }
    }

    fn district_row(&self, w: u64, d: u64) -> u64 {
        w * self.scale.districts + d
    }

    /// The WAREHOUSE row of `w`.
    pub fn warehouse(&self, w: u64) -> ObjectId {
        ObjectId {
            table: table::WAREHOUSE,
            key: w,
        }
    }

    /// The DISTRICT row `d` of `w`.
    pub fn district(&self, w: u64, d: u64) -> ObjectId {
        ObjectId {
            table: table::DISTRICT,
            key: self.district_row(w, d),
        }
    }

    /// The CUSTOMER row `c` of district `d` of `w`.
    pub fn customer(&self, w: u64, d: u64, c: u64) -> ObjectId {
        ObjectId {
            table: table::CUSTOMER,
            key: self.district_row(w, d) * self.scale.customers + c,
        }
    }

    /// The index row of last name `name` in district `d` of `w`.
    pub fn customer_name(&self, w: u64, d: u64, name: u64) -> ObjectId {
        ObjectId {
            table: table::CUSTOMER_NAME,
            key: self.district_row(w, d) * self.scale.names() + name,
        }
    }

    /// The LAST_ORDER row of customer `c` of district `d` of `w`.
    pub fn last_order(&self, w: u64, d: u64, c: u64) -> ObjectId {
        ObjectId {
            table: table::LAST_ORDER,
            key: self.customer(w, d, c).key,
        }
    }

    /// Row `table` (ORDER, NEW-ORDER or HISTORY) of order `o` (from 1) of district `d` of
    /// `w`.
    fn per_order(&self, table: u16, w: u64, d: u64, o: u64) -> ObjectId {
        debug_assert!(o >= 1 && o <= self.scale.capacity);
        ObjectId {
            table,
            key: self.district_row(w, d) * self.scale.capacity + o - 1,
        }
    }

    /// The ORDER row of order `o` (from 1).
    pub fn order(&self, w: u64, d: u64, o: u64) -> ObjectId {
        self.per_order(table::ORDER, w, d, o)
    }

    /// The NEW-ORDER row of order `o` (from 1).
    pub fn new_order(&self, w: u64, d: u64, o: u64) -> ObjectId {
        self.per_order(table::NEW_ORDER, w, d, o)
    }

    /// HISTORY row `h` (from 0) of district `d` of `w`.
    pub fn history(&self, w: u64, d: u64, h: u64) -> ObjectId {
        self.per_order(table::HISTORY, w, d, h + 1)
    }

    /// ORDER-LINE `line` (from 0) of order `o` (from 1).
    pub fn order_line(&self, w: u64, d: u64, o: u64, line: u64) -> ObjectId {
        ObjectId {
            table: table::ORDER_LINE,
            key: self.order(w, d, o).key * MAX_LINES + line,
        }
    }

    /// The ITEM row of item `i` (replicated).
    pub fn item(&self, i: u64) -> ObjectId {
        ObjectId {
            table: table::ITEM,
            key: i,
        }
    }

    /// The STOCK row of item `i` at `w`.
    pub fn stock(&self, w: u64, i: u64) -> ObjectId {
        ObjectId {
            table: table::STOCK,
            key: w * self.scale.items + i,
        }
    }
}

/// Field `i` of `row`.
pub fn get(row: &[u8], i: usize) -> i64 {
    i64::from_le_bytes(row[8 * i..8 * i + 8].try_into().expect("a field"))
}

/// Sets field `i` of `row`.
pub fn set(row: &mut [u8], i: usize, v: i64) {
    row[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
}

/// Adds `delta` to field `i` of `row`.
pub fn add(row: &mut [u8], i: usize, delta: i64) {
    let v = get(row, i);
    set(row, i, v + delta);
}

/// A row of `bytes` bytes with `fields` first.
pub fn row(bytes: usize, fields: &[i64]) -> Vec<u8> {
    let mut r = vec![0; bytes];
    for (i, f) in fields.iter().enumerate() {
        set(&mut r, i, *f);
    }
    r
}

/// The customers of a CUSTOMER_NAME row, sorted by first name.
pub fn named(row: &[u8]) -> Vec<u64> {
    let n = get(row, field::N_COUNT) as usize;
    (0..n)
        .map(|k| u32::from_le_bytes(row[8 + 4 * k..12 + 4 * k].try_into().expect("an id")) as u64)
        .collect()
}

/// A CUSTOMER_NAME row holding `customers` (sorted by first name).
///
/// # Panics
/// If more than [`NAME_CAPACITY`] customers share the name.
pub fn name_row(customers: &[u64]) -> Vec<u8> {
    assert!(
        customers.len() <= NAME_CAPACITY,
        "{} customers share a last name; the index holds {NAME_CAPACITY}",
        customers.len()
    );
    let mut r = row(8 + 4 * NAME_CAPACITY, &[customers.len() as i64]);
    for (k, c) in customers.iter().enumerate() {
        r[8 + 4 * k..12 + 4 * k].copy_from_slice(&(*c as u32).to_le_bytes());
    }
    r
}
