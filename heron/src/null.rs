//! Null requests: another application's destinations, and nothing read, written or returned.
//! The thesis's Table 5.1 runs "Heron with null requests" to price coordination without
//! execution, "the ratio of single- and multi-partition requests given by TPC-C": a null
//! request here goes to the partitions a request of the wrapped application would.

use crate::app::{Application, Execution, ObjectId, Reads, Table};
use multicast::GroupId;
use transport::Rng;

/// Requests with `A`'s destinations that do nothing.
#[derive(Clone, Debug)]
pub struct NullRequests<A> {
    inner: A,
}

impl<A: Application> NullRequests<A> {
    /// Null requests bound where `inner`'s would go.
    pub fn new(inner: A) -> NullRequests<A> {
        NullRequests { inner }
    }
}

impl<A: Application> Application for NullRequests<A> {
    fn tables(&self) -> &[Table] {
        &[]
    }

    fn partition_of(&self, oid: ObjectId) -> GroupId {
        unreachable!("null requests name no object, asked for {oid:?}")
    }

    fn row_of(&self, oid: ObjectId) -> u64 {
        unreachable!("null requests name no object, asked for {oid:?}")
    }

    fn populate(&self, _g: GroupId, _put: &mut dyn FnMut(ObjectId, Vec<u8>)) {}

    fn read_set(&self, _request: &[u8]) -> Vec<ObjectId> {
        Vec::new()
    }

    fn execute(&self, _request: &[u8], _reads: &Reads) -> Execution {
        Execution::default()
    }

    /// The destinations of the wrapped application's next request, as a bit set.
    fn generate(&self, client: usize, seq: u64, rng: &mut Rng) -> Vec<u8> {
        let request = self.inner.generate(client, seq, rng);
        let bits = self
            .inner
            .destinations(&request)
            .iter()
            .fold(0u64, |b, g| b | 1 << g.0);
        bits.to_le_bytes().to_vec()
    }

    fn destinations(&self, request: &[u8]) -> Vec<GroupId> {
        let bits = u64::from_le_bytes(request[..8].try_into().expect("8 bytes"));
        (0..64u8)
            .filter(|g| bits & 1 << g != 0)
            .map(GroupId)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::{Scale, Tpcc};

    #[test]
    fn null_requests_go_where_the_wrapped_requests_go_and_do_nothing() {
        let tpcc = Tpcc::new(4, Scale::scaled(1000, 300), 7);
        let null = NullRequests::new(tpcc.clone());
        let (mut a, mut b) = (Rng::from_seed(3), Rng::from_seed(3));
        let mut multi = 0;
        for i in 0..2_000 {
            let r = null.generate(i % 7, i as u64, &mut a);
            let dst = null.destinations(&r);
            assert_eq!(
                dst,
                tpcc.destinations(&tpcc.generate(i % 7, i as u64, &mut b))
            );
            multi += usize::from(dst.len() > 1);
            assert!(null.read_set(&r).is_empty());
            assert_eq!(null.execute(&r, &Reads::new()), Execution::default());
        }
        // TPC-C's share of multi-partition requests: ~10% of New-Orders, 15% of Payments.
        assert!(
            (100..300).contains(&multi),
            "{multi} of 2000 span partitions"
        );
    }
}
