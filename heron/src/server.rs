//! A Heron replica: the multicast server it runs on, the request it is executing, and the
//! memory other replicas read and write (coordination entries and objects).

use crate::app::{Application, ObjectId, Reads};
use crate::config::Config;
use crate::layered::Layered;
use crate::population::{Population, SharedPopulation};
use crate::store::Layout;
use crate::wire::Request;
use multicast::{GroupId, Membership, MsgId, Server};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use transport::{
    Access, Completion, LocalAddr, Nanos, Nic, Process, ProcessId, Progress, RegionId, RegionSpec,
    RemoteAddr, Status, WrId, WriteFlags,
};

/// Bytes of a coordination entry: `[delivered u64 | executed u64]`, the timestamps of the last
/// request its writer took and of the last it executed (Algorithm 9's `<tmp, state>`, one word
/// per state). Each word is written alone and only grows, so a reader needs no seal: an
/// aligned word is never torn, and the two words, read at different instants, each say
/// something true (see `crate::coordination::Coord`). As `[state | tmp]`, a reader could
/// take the state `2` of `<t, 2>` with the timestamp of the next `<t', 1>` and end phase 4 of
/// `t'` before its writer executed it.
pub(crate) const ENTRY: usize = 16;

/// Remote reads one request keeps in flight at most (the read buffer's slots).
pub(crate) const READ_SLOTS: usize = 32;

/// Heron's regions at a server, after the multicast server's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Regions {
    /// `coord_mem`: one entry per server of the run, written by that server (Algorithm 9).
    pub(crate) coord: RegionId,
    /// `state_sync_mem`: one transfer entry per replica of the partition (Algorithm 11).
    pub(crate) state: RegionId,
    /// The object store ([`crate::store`]).
    pub(crate) objects: RegionId,
    /// Where remote reads land.
    pub(crate) reads: RegionId,
    /// Where state transfers land: one area per replica of the partition, written only by
    /// that replica (see [`crate::state_transfer`]).
    pub(crate) stage: RegionId,
}

impl Regions {
    pub(crate) fn at(base: u16) -> Regions {
        Regions {
            coord: RegionId(base),
            state: RegionId(base + 1),
            objects: RegionId(base + 2),
            reads: RegionId(base + 3),
            stage: RegionId(base + 4),
        }
    }
}

/// Where the request being executed stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Phase 2: waiting for a majority of every involved partition to have delivered it.
    Coordinate,
    /// Phase 3: reading (locally and remotely), then executing.
    Execute,
    /// Phase 4: waiting for a majority of every involved partition to have executed it.
    Finish,
    /// The replica found it lags (Algorithm 10, line 30) and waits for a state transfer.
    Transfer,
}

/// The request being executed and what it has gathered.
#[derive(Debug)]
pub(crate) struct Running {
    pub(crate) req: Request,
    /// Its read set, as the application declared it.
    pub(crate) read_set: Vec<ObjectId>,
    pub(crate) phase: Phase,
    /// When a majority of every involved partition first coordinated in the current phase.
    pub(crate) majority_at: Option<Nanos>,
    /// When the current phase began (for [`Counters`]'s time per phase).
    pub(crate) since: Nanos,
    pub(crate) reads: Reads,
    /// Processes whose read failed during this request (crashed): not read from again.
    pub(crate) failed: BTreeSet<ProcessId>,
    pub(crate) response: Option<Vec<u8>>,
    /// The state transfer asked for, once in [`Phase::Transfer`].
    pub(crate) asked: Option<Asked>,
}

/// A state transfer a laggard asked for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Asked {
    /// The attempt waited for.
    pub(crate) attempt: u64,
    /// When the laggard gives up on it and asks the next responder.
    pub(crate) deadline: Nanos,
    /// Attempts this lag made.
    pub(crate) tries: u32,
    /// When this lag's first attempt was asked for (for [`Counters::transfer_ns`]).
    pub(crate) since: Nanos,
}

/// The latest value written at a remote address.
#[derive(Clone, Debug)]
pub(crate) struct Posted {
    /// Its place in Heron's post order.
    pub(crate) seq: u64,
    pub(crate) data: Vec<u8>,
}

/// A remote read in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inflight {
    /// The request it reads for (a read of an abandoned request is dropped when it returns).
    pub(crate) tmp: u64,
    pub(crate) oid: ObjectId,
    /// The process read from.
    pub(crate) from: ProcessId,
    /// The read buffer slot it lands in (taken until it returns).
    pub(crate) buffer: usize,
    /// When it was posted.
    pub(crate) posted: Nanos,
}

/// A request this replica executed, as the oracle checks it (serde: a tcp node reports it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Executed {
    /// Its timestamp.
    pub tmp: u64,
    /// The issuing client's index.
    pub client: u32,
    /// The client's sequence number.
    pub seq: u32,
    /// The request.
    pub body: Vec<u8>,
    /// The response this replica computed.
    pub response: Vec<u8>,
}

/// What a replica did, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Requests executed.
    pub executed: u64,
    /// Multi-partition requests among them.
    pub multi: u64,
    /// Requests skipped (covered by a state transfer, line 6).
    pub skipped: u64,
    /// Remote reads issued.
    pub remote_reads: u64,
    /// Remote reads that failed (the process read from had crashed).
    pub failed_reads: u64,
    /// Remote reads issued to another replica because an earlier one had not returned within
    /// [`Config::read_timeout`](crate::Config::read_timeout).
    pub late_reads: u64,
    /// Remote reads that returned a slot its owner was writing (not sealed), made again.
    pub torn_reads: u64,
    /// Multi-partition requests whose phase 4 ended on the extra wait's timeout rather
    /// than with every replica in.
    pub waited_out: u64,
    /// State transfers this replica asked for (it lagged, Algorithm 10 line 30), counting
    /// each attempt.
    pub transfers_asked: u64,
    /// State transfers it received and installed.
    pub transfers_received: u64,
    /// State transfers it refused to install (see [`crate::state_transfer::Refused`]) and
    /// asked for again.
    pub transfers_refused: u64,
    /// State transfers it served.
    pub transfers_served: u64,
    /// Objects it sent while serving them.
    pub objects_sent: u64,
    /// Writes it made again after the queue pair under them was reset (see
    /// `HeronServer::write`).
    pub rewrites: u64,
    /// Nanoseconds spent in phases 2 and 4 (waiting for the involved replicas to coordinate),
    /// summed over the requests it executed: the coordination of the thesis's Figure 5.4.
    pub coordinating_ns: u64,
    /// Nanoseconds spent in phase 3 (reads, execution and writes, a state transfer it needed
    /// included), summed over the requests it executed: Figure 5.4's execution.
    pub executing_ns: u64,
    /// Multi-partition requests it delayed: in phase 4, when a majority of every involved
    /// partition had executed the request, not every replica had yet (the thesis's Table 5.2).
    pub delayed: u64,
    /// Nanoseconds those requests waited past the majority, for the rest or for the extra
    /// wait to run out (Table 5.2's delay).
    pub delay_ns: u64,
    /// Nanoseconds from a lag's first request for a state transfer to the transfer's
    /// install, summed over the transfers it installed (the thesis's Figure 5.6).
    pub transfer_ns: u64,
    /// Bytes of object slots those transfers installed (both versions of each object).
    pub transfer_bytes: u64,
}

impl Counters {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Counters) {
        let Counters {
            executed,
            multi,
            skipped,
            remote_reads,
            failed_reads,
            late_reads,
            torn_reads,
            waited_out,
            transfers_asked,
            transfers_received,
            transfers_refused,
            transfers_served,
            objects_sent,
            rewrites,
            coordinating_ns,
            executing_ns,
            delayed,
            delay_ns,
            transfer_ns,
            transfer_bytes,
        } = *other;
        self.executed += executed;
        self.multi += multi;
        self.skipped += skipped;
        self.remote_reads += remote_reads;
        self.failed_reads += failed_reads;
        self.late_reads += late_reads;
        self.torn_reads += torn_reads;
        self.waited_out += waited_out;
        self.transfers_asked += transfers_asked;
        self.transfers_received += transfers_received;
        self.transfers_refused += transfers_refused;
        self.transfers_served += transfers_served;
        self.objects_sent += objects_sent;
        self.rewrites += rewrites;
        self.coordinating_ns += coordinating_ns;
        self.executing_ns += executing_ns;
        self.delayed += delayed;
        self.delay_ns += delay_ns;
        self.transfer_ns += transfer_ns;
        self.transfer_bytes += transfer_bytes;
    }
}

/// A Heron replica of partition `group`, running on multicast server `S`.
#[derive(Debug)]
pub struct HeronServer<S, A> {
    pub(crate) mcast: S,
    pub(crate) app: Arc<A>,
    pub(crate) cfg: Arc<Config>,
    pub(crate) layout: Layout,
    pub(crate) regions: Regions,
    pub(crate) me: ProcessId,
    pub(crate) group: GroupId,
    pub(crate) started: bool,
    /// Requests delivered and not yet taken, in delivery (timestamp) order.
    pub(crate) queue: VecDeque<Request>,
    pub(crate) running: Option<Running>,
    /// `last_req` of Algorithm 9: the timestamp of the last request taken.
    pub(crate) last_req: u64,
    /// The timestamp up to which this replica's objects reflect every request: that of the
    /// last request whose writes it applied.
    pub(crate) applied: u64,
    /// Work requests Heron posted and whose completions it waits for.
    pub(crate) upper: BTreeSet<WrId>,
    pub(crate) completions: VecDeque<Completion>,
    /// The latest value Heron wrote at each remote address, with its place in post order.
    pub(crate) latest: BTreeMap<RemoteAddr, Posted>,
    /// Remote writes Heron made so far (numbers them in post order).
    pub(crate) posts: u64,
    /// Heron's writes in flight, by work request.
    pub(crate) written: BTreeMap<WrId, RemoteAddr>,
    /// Peers to write again to (a write to them was flushed), and when.
    pub(crate) retries: BTreeMap<ProcessId, Nanos>,
    /// The addresses whose latest value goes out again, by peer and in post order.
    pub(crate) pending: BTreeMap<(ProcessId, u64), RemoteAddr>,
    /// Remote reads that returned, with their completions, for the running request.
    pub(crate) returned: VecDeque<(Completion, Inflight)>,
    /// Processes a remote read failed at (crashed).
    pub(crate) unreachable: BTreeSet<ProcessId>,
    /// Remote reads in flight, by work request.
    pub(crate) inflight: BTreeMap<WrId, Inflight>,
    /// The log of Algorithm 11: `(tmp, object)` for every local write, in timestamp order.
    pub(crate) updates: Vec<(u64, ObjectId)>,
    /// The log holds every update after this timestamp (a state transfer installs objects
    /// without an account of which requests wrote them, so the log restarts after it).
    pub(crate) log_from: u64,
    /// State transfer attempts this replica made (names the responder of each).
    pub(crate) attempts: u64,
    pub(crate) counters: Counters,
    pub(crate) record: Option<Vec<Executed>>,
    pub(crate) delivered: Vec<(MsgId, Option<u64>)>,
    /// The partition's initial objects, shared with its other replicas.
    population: SharedPopulation,
    /// A reused buffer for object slots read from this replica's own memory (every read of a
    /// request, every write's older version): [`HeronServer::read_own`].
    scratch: Vec<u8>,
}

impl<S, A: Application> HeronServer<S, A> {
    /// Replica `rank` of partition `g`, over multicast server `mcast`. `record` keeps every
    /// executed request and its response for the oracle. `population` is shared by the
    /// partition's replicas: the first to need it generates it.
    pub(crate) fn new(
        mcast: S,
        app: Arc<A>,
        cfg: Arc<Config>,
        (g, rank): (GroupId, usize),
        record: bool,
        population: SharedPopulation,
    ) -> HeronServer<S, A> {
        let layout = Layout::new(app.tables());
        HeronServer {
            mcast,
            layout,
            regions: Regions::at(cfg.server_region_base),
            me: cfg.server(g, rank),
            group: g,
            app,
            cfg,
            started: false,
            queue: VecDeque::new(),
            running: None,
            last_req: 0,
            applied: 0,
            upper: BTreeSet::new(),
            completions: VecDeque::new(),
            latest: BTreeMap::new(),
            posts: 0,
            written: BTreeMap::new(),
            retries: BTreeMap::new(),
            pending: BTreeMap::new(),
            returned: VecDeque::new(),
            unreachable: BTreeSet::new(),
            inflight: BTreeMap::new(),
            updates: Vec::new(),
            log_from: 0,
            attempts: 0,
            counters: Counters::default(),
            record: record.then(Vec::new),
            delivered: Vec::new(),
            population,
            scratch: Vec::new(),
        }
    }

    /// The `len` bytes at `at` of this replica's own memory, in the reused scratch buffer
    /// (objects are read on every request; a fresh buffer each time was a tenth of a Heron
    /// simulation's time in the allocator). Hand it back with [`Self::recycle`].
    pub(crate) fn read_own<N: Nic>(&mut self, nic: &N, at: LocalAddr, len: usize) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.scratch);
        // Whatever it held is overwritten: `read_local` fills every byte.
        buf.resize(len, 0);
        nic.read_local(at, &mut buf).expect("own region");
        buf
    }

    /// Takes back the buffer [`Self::read_own`] lent.
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        self.scratch = buf;
    }

    /// The multicast server underneath.
    pub fn multicast(&self) -> &S {
        &self.mcast
    }

    /// The partition.
    pub fn group(&self) -> GroupId {
        self.group
    }

    /// What this replica did.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The requests it executed with their responses, if recording.
    pub fn executed(&self) -> Option<&[Executed]> {
        self.record.as_deref()
    }

    /// The timestamp its objects are current to (see the field's docs).
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Whether it has nothing left to do: no request running or delivered and not taken.
    pub fn idle(&self) -> bool {
        self.running.is_none() && self.queue.is_empty()
    }

    /// The multicast messages it delivered, with their order timestamps, for the delivery log.
    pub fn delivered(&self) -> &[(MsgId, Option<u64>)] {
        &self.delivered
    }

    /// The current value of every object of its partition, read from its memory through `nic`
    /// (after a run: the runtime's view of this process's NIC).
    pub fn state(&self, nic: &impl Nic) -> BTreeMap<ObjectId, Vec<u8>> {
        let mut slot = Vec::new();
        // Ascending, so the map is built in one pass.
        self.population()
            .objects
            .iter()
            .map(|&oid| {
                let (at, len) = self.layout.slot(oid, self.app.row_of(oid));
                slot.clear();
                slot.resize(len, 0);
                nic.read_local(LocalAddr::new(self.regions.objects, at), &mut slot)
                    .expect("own region");
                let v = self.layout.versions(oid, &slot);
                let newest = if v[0].tmp >= v[1].tmp { v[0] } else { v[1] };
                (oid, newest.value.to_vec())
            })
            .collect()
    }

    /// The partition's initial objects, generated by the first of its replicas that asks.
    fn population(&self) -> &Population {
        self.population
            .get_or_init(|| Population::generate(&*self.app, &self.layout, self.group))
    }

    /// Heron's regions, as listed after the multicast server's.
    pub(crate) fn own_regions(&self) -> Vec<RegionSpec> {
        let servers = self.cfg.servers();
        let replicas = self.cfg.replicas;
        vec![
            RegionSpec::new(servers * ENTRY).with_default(Access::Write),
            RegionSpec::new(replicas * crate::state_transfer::ENTRY).with_default(Access::Write),
            RegionSpec::new(self.layout.len().max(8)).with_default(Access::Read),
            RegionSpec::new(READ_SLOTS * self.layout.max_slot().max(8)),
            RegionSpec::new(replicas * crate::state_transfer::area(&self.layout))
                .with_default(Access::Write),
        ]
    }

    /// Writes the initial value of every object, in both versions with timestamp 0.
    pub(crate) fn populate<N: Nic>(&mut self, nic: &mut N) {
        nic.install_image(self.regions.objects, &self.population().image)
            .expect("own region");
    }

    /// Posts a signaled write of `data` to `dst` for Heron (its completion comes back to
    /// Heron, not to the multicast layer), or writes locally when `dst` is this process.
    ///
    /// Heron shares its queue pairs with the multicast layer, which may put one in error (a
    /// write of its own refused after a leader change): Heron's writes queued behind are then
    /// flushed. Every address Heron writes holds a value that only moves forward (its own
    /// coordination words, its response slot at a client, its transfer area and entries), so a
    /// flushed write is repaired by writing the address's latest value again once the queue
    /// pair is back ([`HeronServer::retry_writes`]). What a peer reads may depend on the order
    /// of writes to it (a transfer's completion entry after its objects), so the writes to a
    /// peer go out again in the order they were posted, and a new write to a peer with writes
    /// to make again waits behind them.
    pub(crate) fn write<N: Nic>(&mut self, nic: &mut N, dst: RemoteAddr, data: &[u8]) {
        if dst.process == self.me {
            nic.write_local(LocalAddr::new(dst.region, dst.offset), data)
                .expect("own region");
            return;
        }
        let seq = self.posts;
        self.posts += 1;
        let posted = Posted {
            seq,
            data: data.to_vec(),
        };
        if let Some(old) = self.latest.insert(dst, posted) {
            // A value waiting to go out again is superseded: this one goes in its stead, later.
            self.pending.remove(&(dst.process, old.seq));
        }
        if self.retries.contains_key(&dst.process) {
            self.pending.insert((dst.process, seq), dst);
        } else {
            self.post(nic, dst);
        }
    }

    /// Posts the latest value of `dst`.
    fn post<N: Nic>(&mut self, nic: &mut N, dst: RemoteAddr) {
        let data = &self.latest[&dst].data;
        if let Ok(wr) = nic.post_write(dst, data, WriteFlags::SIGNALED) {
            self.upper.insert(wr);
            self.written.insert(wr, dst);
        }
    }

    /// Takes the completions of Heron's work requests: a read's goes to the running request,
    /// a flushed or refused write's address is written again after [`RETRY`] (a refused one
    /// broke the queue pair: it is the first of the writes that failed, and the writes after
    /// it may depend on it).
    pub(crate) fn take_completions<N: Nic>(&mut self, nic: &mut N) {
        while let Some(c) = self.completions.pop_front() {
            if let Some(dst) = self.written.remove(&c.wr) {
                if matches!(c.status, Status::Flushed | Status::AccessDenied) {
                    let due = nic.now() + RETRY;
                    self.retries.entry(dst.process).or_insert(due);
                    self.pending
                        .insert((dst.process, self.latest[&dst].seq), dst);
                }
                continue;
            }
            if let Some(read) = self.inflight.remove(&c.wr) {
                self.returned.push_back((c, read));
            }
        }
    }

    /// Writes again, in post order, the addresses of every peer whose retry is due; returns
    /// when the next one is.
    pub(crate) fn retry_writes<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let now = nic.now();
        let due: Vec<ProcessId> = self
            .retries
            .iter()
            .filter(|&(_, &t)| t <= now)
            .map(|(&p, _)| p)
            .collect();
        for &p in &due {
            self.retries.remove(&p);
            let mut rest = self.pending.split_off(&(p, 0));
            let mut later = rest.split_off(&(ProcessId(p.0 + 1), 0));
            self.pending.append(&mut later);
            for dst in rest.into_values() {
                self.post(nic, dst);
                self.counters.rewrites += 1;
            }
        }
        (!due.is_empty(), self.retries.values().min().copied())
    }
}

/// How long Heron waits before writing again an address whose write was flushed: the multicast
/// layer reconnects the queue pair when it sees the flush, and a retry without a pause could
/// meet the same broken queue pair again and again at one instant.
pub(crate) const RETRY: Nanos = Nanos(2_000);

impl<N: Nic, S, A: Application> Process<N> for HeronServer<S, A>
where
    S: Server + for<'a> Process<Layered<'a, N>>,
{
    fn regions(&self) -> Vec<RegionSpec> {
        let mut r = Process::<Layered<'_, N>>::regions(&self.mcast);
        debug_assert_eq!(r.len(), self.cfg.server_region_base as usize);
        r.extend(self.own_regions());
        r
    }

    fn stopped(&self) -> bool {
        self.mcast.halted()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if !self.started {
            self.started = true;
            self.populate(nic);
        }
        // Heron's completions come back through the multicast layer's polling, which drains
        // the completion queue: the layered view sets them aside.
        let below = {
            let mut layered = Layered {
                nic: &mut *nic,
                upper: &mut self.upper,
                stash: &mut self.completions,
            };
            self.mcast.poll(&mut layered)
        };
        let mut worked = false;
        while let Some(d) = self.mcast.poll_delivery() {
            self.delivered.push((d.msg, d.order));
            if let Some(r) = Request::from_delivery(&d) {
                self.queue.push_back(r);
            }
            worked = true;
        }
        self.take_completions(nic);
        let (retried, mut wake) = self.retry_writes(nic);
        worked |= retried;
        let (served, w) = self.serve_transfers(nic);
        worked |= served;
        wake = earliest(wake, w);
        loop {
            let (stepped, w) = self.step(nic);
            wake = earliest(wake, w);
            if !stepped {
                break;
            }
            worked = true;
        }
        below.merge(Progress::worked(worked).wake_at(wake))
    }
}

/// The earlier of two optional deadlines.
pub(crate) fn earliest(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
