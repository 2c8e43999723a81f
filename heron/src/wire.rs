//! What Heron puts in a multicast message and in a client's response slot.
//!
//! A request travels as the multicast payload `[client u32 | seq u32 | body]` (little endian);
//! its timestamp is the multicast layer's order timestamp ([`multicast::Delivery::order`]). A
//! response is written by every replica that executes the request into its own slot of the
//! client's response region, encoded with the slot codec under the request's `seq`.

use multicast::{Delivery, DestSet};

/// Bytes before the body of a request.
pub const HEADER: usize = 8;

/// A delivered request, as Algorithm 9 handles it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The multicast layer's timestamp (`r.tmp`).
    pub tmp: u64,
    /// The issuing client's index.
    pub client: u32,
    /// The client's sequence number for it.
    pub seq: u32,
    /// The partitions it involves (`r.dest`).
    pub dst: DestSet,
    /// The application's request.
    pub body: Vec<u8>,
}

/// The multicast payload of request `seq` of client `client`.
pub fn encode(client: u32, seq: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(&client.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(body);
    out
}

impl Request {
    /// The request a delivery carries; `None` if the payload is shorter than a header.
    ///
    /// # Panics
    /// If the delivery has no order timestamp: Heron orders requests by the multicast layer's
    /// timestamps, which RamCast and Ridge give and TRAM does not.
    pub fn from_delivery(d: &Delivery) -> Option<Request> {
        let tmp = d.order.expect(
            "Heron needs a multicast protocol with order timestamps (RamCast, Ridge); this one \
             delivers without",
        );
        let p = &d.payload;
        if p.len() < HEADER {
            return None;
        }
        Some(Request {
            tmp,
            client: u32::from_le_bytes(p[..4].try_into().expect("4 bytes")),
            seq: u32::from_le_bytes(p[4..8].try_into().expect("4 bytes")),
            dst: d.dst,
            body: p[HEADER..].to_vec(),
        })
    }
}
