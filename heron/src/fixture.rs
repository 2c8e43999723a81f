//! A replica on the transport's recording NIC, for unit tests of its roles: a test drives it a
//! step at a time, lands what peers would write (whole or torn) straight into its memory, and
//! reads back the ops it posted.

use crate::app::{Application, Execution, ObjectId, Reads, Table};
use crate::config::Config;
use crate::server::HeronServer;
use crate::wire::Request;
use multicast::{DestSet, GroupId, Membership};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Completion, LocalAddr, Nic, Op, OpKind, ProcessId, RemoteAddr, Rng, Status, WrId};

/// Partitions of the fixture's deployment.
pub(crate) const PARTITIONS: usize = 2;
/// Keys of the fixture's application.
pub(crate) const KEYS: u64 = 8;

/// Two counters per key, two words of one value (so a torn read can see half a new value);
/// key `k` lives in partition `k % 2`. A request is the keys it reads; it adds one to both
/// counters of each and answers what it read.
#[derive(Debug)]
pub(crate) struct Pairs {
    tables: [Table; 1],
}

impl Pairs {
    pub(crate) fn new() -> Pairs {
        Pairs {
            tables: [Table {
                name: "pairs",
                rows: KEYS / PARTITIONS as u64,
                value_bytes: 16,
                replicated: false,
            }],
        }
    }

    pub(crate) fn oid(key: u64) -> ObjectId {
        ObjectId { table: 0, key }
    }

    /// The value `[a | b]`.
    pub(crate) fn value(a: u64, b: u64) -> Vec<u8> {
        [a, b].iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

impl Pairs {
    /// The words `[a, b]` of a value.
    pub(crate) fn words(value: &[u8]) -> [u64; 2] {
        let word = |i: usize| crate::seal::word(&value[i * 8..i * 8 + 8]);
        [word(0), word(1)]
    }
}

impl Application for Pairs {
    fn tables(&self) -> &[Table] {
        &self.tables
    }

    fn partition_of(&self, oid: ObjectId) -> GroupId {
        GroupId((oid.key % PARTITIONS as u64) as u8)
    }

    fn row_of(&self, oid: ObjectId) -> u64 {
        oid.key / PARTITIONS as u64
    }

    fn populate(&self, g: GroupId, put: &mut dyn FnMut(ObjectId, Vec<u8>)) {
        for key in (g.0 as u64..KEYS).step_by(PARTITIONS) {
            put(Self::oid(key), Self::value(key, key));
        }
    }

    fn read_set(&self, request: &[u8]) -> Vec<ObjectId> {
        request
            .chunks_exact(8)
            .map(|k| Self::oid(crate::seal::word(k)))
            .collect()
    }

    fn execute(&self, request: &[u8], reads: &Reads) -> Execution {
        let mut execution = Execution::default();
        for oid in self.read_set(request) {
            let v = &reads[&oid];
            execution.response.extend_from_slice(v);
            let [a, b] = Self::words(v);
            execution.writes.push((oid, Self::value(a + 1, b + 1)));
        }
        execution
    }

    fn generate(&self, _client: usize, _seq: u64, rng: &mut Rng) -> Vec<u8> {
        rng.below(KEYS).to_le_bytes().to_vec()
    }
}

/// A replica of the fixture's deployment (2 partitions of 3 replicas, no clients) and its NIC.
pub(crate) struct Fixture {
    pub(crate) server: HeronServer<(), Pairs>,
    pub(crate) nic: RecordingNic,
}

impl Fixture {
    /// Replica `rank` of partition `g`, its objects populated.
    pub(crate) fn new(g: u8, rank: usize) -> Fixture {
        let cfg = Arc::new(Config::new(PARTITIONS, 3, 0));
        let mut server = HeronServer::new(
            (),
            Arc::new(Pairs::new()),
            cfg.clone(),
            (GroupId(g), rank),
            true,
            Arc::default(),
        );
        let specs = vec![server.own_regions(); cfg.servers()];
        let mut nic = RecordingNic::new(server.me, specs, 1);
        server.populate(&mut nic);
        Fixture { server, nic }
    }

    /// Process `rank` of partition `g`.
    pub(crate) fn process(&self, g: u8, rank: usize) -> ProcessId {
        self.server.cfg.server(GroupId(g), rank)
    }

    /// Delivers request `tmp` reading `keys` (its destinations: their partitions).
    pub(crate) fn deliver(&mut self, tmp: u64, keys: &[u64]) {
        let app = Pairs::new();
        let dst = DestSet::of(keys.iter().map(|&k| app.partition_of(Pairs::oid(k))))
            .expect("some partition");
        self.server.queue.push_back(Request {
            tmp,
            client: 0,
            seq: 0,
            dst,
            body: keys.iter().flat_map(|k| k.to_le_bytes()).collect(),
        });
    }

    /// Takes request `tmp` on keys 0 and 1 and finds it lags (as a remote read would), so it
    /// asks for a state transfer.
    pub(crate) fn lag(&mut self, tmp: u64) {
        self.deliver(tmp, &[0, 1]);
        self.run();
        self.server.running.as_mut().expect("taken").phase = crate::server::Phase::Transfer;
        self.run();
    }

    /// Steps the replica until it has nothing more to do now.
    pub(crate) fn run(&mut self) {
        self.server.take_completions(&mut self.nic);
        while self.server.step(&mut self.nic).0 {}
    }

    /// Lands `bytes` at byte `at` of region `region` of this replica's memory, as a peer's
    /// write (or a read's data) would.
    pub(crate) fn land(&mut self, region: transport::RegionId, at: usize, bytes: &[u8]) {
        self.nic
            .write_local(LocalAddr::new(region, at), bytes)
            .expect("own region");
    }

    /// Lands the words of the write of `bytes` at `dst` (an address of this replica) that
    /// `mask` selects (bit `i`: word `i`), as a write caught halfway would leave them.
    pub(crate) fn land_words(&mut self, dst: RemoteAddr, bytes: &[u8], mask: u64) {
        assert_eq!(dst.process, self.server.me);
        for (i, word) in bytes.chunks(8).enumerate() {
            if mask >> i & 1 == 1 {
                self.land(dst.region, dst.offset + 8 * i, word);
            }
        }
    }

    /// Lands the write of `bytes` at `dst` whole.
    pub(crate) fn land_write(&mut self, dst: RemoteAddr, bytes: &[u8]) {
        self.land_words(dst, bytes, u64::MAX);
    }

    /// The ops posted since the last call.
    pub(crate) fn ops(&mut self) -> Vec<(WrId, Op)> {
        self.nic.take_ops()
    }

    /// Completes work request `wr` of kind `kind` to `peer` with `status`, as the multicast
    /// layer's polling would hand it to Heron.
    pub(crate) fn complete(&mut self, wr: WrId, kind: OpKind, peer: ProcessId, status: Status) {
        self.server.completions.push_back(Completion {
            wr,
            kind,
            peer,
            status,
            value: None,
        });
    }

    /// The reads posted since the last call: `(wr, from, into)`.
    pub(crate) fn reads(&mut self) -> Vec<(WrId, RemoteAddr, LocalAddr)> {
        self.ops()
            .into_iter()
            .filter_map(|(wr, op)| match op {
                Op::Read { src, into, .. } => Some((wr, src, into)),
                _ => None,
            })
            .collect()
    }
}

/// The writes among `ops` to process `to`, in post order: where, and the bytes.
pub(crate) fn writes_to(ops: &[(WrId, Op)], to: ProcessId) -> Vec<(RemoteAddr, Vec<u8>)> {
    ops.iter()
        .filter_map(|(_, op)| match op {
            Op::Write { dst, data, .. } if dst.process == to => {
                Some((*dst, data.to_bytes().to_vec()))
            }
            _ => None,
        })
        .collect()
}
