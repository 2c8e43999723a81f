//! Runs of Heron, judged (the `testing` feature, for tests and the harness's `check`): the
//! sequential [`crate::oracle`], an external linearizability checker on the clients' histories,
//! and whether every surviving replica finished its work. The judges take a run as any runtime
//! leaves it ([`Ended`]): the simulator's here, real threads' in the harness. One copy for the
//! crate's tests and the harness.

use crate::client::Call;
use crate::oracle::{self, ClientView, ReplicaView};
use crate::{Application, Config, Counters, HeronNode, Window};
use multicast::{Client, GroupId, Membership, Server};
use std::sync::Arc;
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, SimNic};
use transport::runtime::Ended;
use transport::{Nanos, Process, ProcessId, Purpose, Rng};

/// A finished run of a Heron deployment on any runtime.
#[derive(Debug)]
pub struct Finished<R, A> {
    /// The run, as the runtime left it.
    pub run: R,
    /// The deployment.
    pub cfg: Config,
    /// The application.
    pub app: Arc<A>,
}

/// A finished simulation of a Heron deployment.
pub type SimRun<S, C, A> = Finished<Sim<HeronNode<S, C, A>>, A>;

/// The simulator on the thesis's testbed ([`crate::TESTBED`]) with `seed` and `faults`, the
/// rest as [`SimConfig::new`] has it: what the crate's tests run on.
pub fn on_testbed(seed: u64, faults: Vec<Fault>) -> SimConfig {
    let mut sc = SimConfig::new(seed, Profile::load(crate::TESTBED).expect("built in"));
    sc.faults = faults;
    sc
}

/// Runs `cfg` of `app` on the simulator `sc` describes (profiles, seed, faults; the clients'
/// request streams derive from its seed too): clients issue requests until `stop`, then the run
/// goes on for `converge` (long enough for a few RDMA retry timeouts: a read of a crashed
/// replica fails only after one). `server` and `client` build the multicast processes
/// underneath.
pub fn run_sim<S, C, A>(
    cfg: Config,
    app: Arc<A>,
    sc: SimConfig,
    stop: Nanos,
    converge: Nanos,
    server: impl Fn(GroupId, usize) -> S,
    client: impl Fn(usize) -> C,
) -> SimRun<S, C, A>
where
    S: Server + Process<SimNic> + for<'a> Process<crate::layered::Layered<'a, SimNic>>,
    C: Client<SimNic>,
    A: Application,
{
    let window = Window {
        warmup_end: Nanos::ZERO,
        stop_at: stop,
    };
    let nodes = crate::deploy::<SimNic, _, _, _>(
        cfg.clone(),
        app.clone(),
        sc.seed,
        window,
        true,
        server,
        client,
    );
    let mut sim = Sim::new(sc, nodes);
    sim.run(Some(stop + converge));
    Finished { run: sim, cfg, app }
}

/// The crate's key-value test run: `cfg` with a store of 48 keys whose requests span two
/// partitions with probability `multi`, [`on_testbed`] with `seed` and `faults`; clients stop
/// at `stop`, and the run goes on 40 ms more, a few RDMA retry timeouts (10 ms on the testbed:
/// a read of a crashed replica fails only then). `server` and `client` build the multicast
/// processes underneath.
pub fn key_value_run<S, C>(
    cfg: Config,
    multi: f64,
    seed: u64,
    faults: Vec<Fault>,
    stop: Nanos,
    server: impl Fn(GroupId, usize) -> S,
    client: impl Fn(usize) -> C,
) -> SimRun<S, C, crate::KeyValue>
where
    S: Server + Process<SimNic> + for<'a> Process<crate::layered::Layered<'a, SimNic>>,
    C: Client<SimNic>,
{
    let app = Arc::new(crate::KeyValue::new(cfg.partitions, 48, multi));
    let sc = on_testbed(seed, faults);
    run_sim(cfg, app, sc, stop, Nanos(40_000_000), server, client)
}

impl<R, S, C, A: Application> Finished<R, A>
where
    R: Ended<Process = HeronNode<S, C, A>>,
    S: Server + for<'a> Process<crate::layered::Layered<'a, R::Nic>>,
    C: Client<R::Nic>,
{
    /// The oracle's verdict: every replica's responses (and the state of those that did not
    /// crash) and every client's.
    pub fn verdict(&self) -> Result<oracle::Report, Vec<oracle::Violation>> {
        let mut replicas = Vec::new();
        let mut clients = Vec::new();
        for (i, node) in self.run.processes().iter().enumerate() {
            let p = ProcessId(i as u32);
            match node {
                HeronNode::Server(s) => replicas.push(ReplicaView {
                    process: p,
                    group: s.group(),
                    executed: s.executed().expect("runs record what replicas execute"),
                    applied: s.applied(),
                    state: (!self.run.crashed(p)).then(|| s.state(self.run.nic(p))),
                }),
                HeronNode::Client(c) => clients.push(ClientView {
                    client: self.cfg.client_index(p).expect("a client") as u32,
                    calls: c.history(),
                }),
            }
        }
        oracle::check(&*self.app, self.cfg.partitions, &replicas, &clients)
    }

    /// The replicas that neither crashed nor finished their work.
    pub fn stuck(&self) -> Vec<ProcessId> {
        self.run
            .processes()
            .iter()
            .enumerate()
            .map(|(i, n)| (ProcessId(i as u32), n))
            .filter(|&(p, n)| {
                !self.run.crashed(p) && matches!(n, HeronNode::Server(s) if !s.idle())
            })
            .map(|(p, _)| p)
            .collect()
    }

    /// Every replica's counters, summed.
    pub fn counters(&self) -> Counters {
        let mut total = Counters::default();
        for n in self.run.processes() {
            if let HeronNode::Server(s) = n {
                total.add(&s.counters());
            }
        }
        total
    }

    /// Each client's index and history.
    pub fn histories(&self) -> Vec<(u32, Vec<Call>)> {
        self.run
            .processes()
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match n {
                HeronNode::Client(c) => Some((
                    self.cfg
                        .client_index(ProcessId(i as u32))
                        .expect("a client") as u32,
                    c.history(),
                )),
                HeronNode::Server(_) => None,
            })
            .collect()
    }

    /// Liveness: the clients that did not crash and either left a request unanswered or had
    /// none answered that they issued at or after `since` (the end of the last fault).
    pub fn idle_clients(&self, since: Nanos) -> Vec<ProcessId> {
        let mut idle = Vec::new();
        for (i, n) in self.run.processes().iter().enumerate() {
            let p = ProcessId(i as u32);
            let HeronNode::Client(c) = n else { continue };
            if self.run.crashed(p) {
                continue;
            }
            let history = c.history();
            let unanswered = history.iter().any(|c| c.returned.is_none());
            let after = history
                .iter()
                .any(|c| c.invoked >= since && c.returned.is_some());
            if unanswered || !after {
                idle.push(p);
            }
        }
        idle
    }

    /// Every object, as the replicas that did not crash hold it at the end (the oracle checks
    /// that replicas of a partition agree).
    pub fn database(&self) -> std::collections::BTreeMap<crate::ObjectId, Vec<u8>> {
        crate::merge_states(
            self.run
                .processes()
                .iter()
                .enumerate()
                .filter_map(|(i, n)| {
                    let p = ProcessId(i as u32);
                    match n {
                        HeronNode::Server(s) if !self.run.crashed(p) => {
                            Some(s.state(self.run.nic(p)))
                        }
                        _ => None,
                    }
                }),
        )
    }

    /// Requests the clients completed.
    pub fn completed(&self) -> u64 {
        self.run
            .processes()
            .iter()
            .map(|n| match n {
                HeronNode::Client(c) => c.completed().0,
                HeronNode::Server(_) => 0,
            })
            .sum()
    }
}

impl<R, S, C> Finished<R, crate::KeyValue>
where
    R: Ended<Process = HeronNode<S, C, crate::KeyValue>>,
    S: Server + for<'a> Process<crate::layered::Layered<'a, R::Nic>>,
    C: Client<R::Nic>,
{
    /// The external checker's verdict on the clients' histories
    /// ([`key_value_linearizable`]), with each request a crashed client never heard back about
    /// settled first: one a replica executed returns, after everything else, the response the
    /// replicas computed (it took effect; the checker must still place it where that response
    /// fits), one no replica executed is left out (it took effect nowhere). Stricter than
    /// leaving it in flight, where any response would fit.
    pub fn externally_linearizable(&self) -> bool {
        let mut executed = std::collections::BTreeMap::new();
        for n in self.run.processes() {
            if let HeronNode::Server(s) = n {
                for e in s.executed().expect("runs record what replicas execute") {
                    executed.insert((e.client, e.seq), e.response.clone());
                }
            }
        }
        let end = self.run.now();
        let mut histories = self.histories();
        for (client, calls) in &mut histories {
            calls.retain_mut(|c| {
                if c.returned.is_some() {
                    return true;
                }
                match executed.get(&(*client, c.seq)) {
                    Some(response) => {
                        c.returned = Some((end, response.clone()));
                        true
                    }
                    None => false,
                }
            });
        }
        key_value_linearizable(&histories)
    }
}

/// The number in environment variable `var` (a sweep's seed count or first seed), or
/// `default` when it is unset or not a number.
pub fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The faults of seed `seed` of the chaos sweep, and what they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Chaos {
    /// The deployment: 2 or 3 partitions of 3 replicas, 4 clients, an extra wait of 0-2 us.
    pub cfg: Config,
    /// The schedule.
    pub faults: Vec<Fault>,
    /// Replicas crashed (at most one per partition).
    pub crashes: u64,
    /// Of which the multicast layer's initial leaders (a leader change underneath).
    pub leader_crashes: u64,
    /// Replicas paused for 50-450 us (laggards, or false suspicions of a leader).
    pub pauses: u64,
    /// Clients crashed.
    pub client_crashes: u64,
    /// When the last fault stopped acting (a crash at once, a pause at its end).
    pub quiet: Nanos,
    /// When the clients stop issuing requests: [`LIVE`] after `quiet`, and no earlier than
    /// 1.5 ms.
    pub stop: Nanos,
}

/// How long the clients of a chaos run keep issuing requests after the last fault stopped
/// acting: the multicast checks' liveness phase. RamCast decides a message caught in a leader
/// change once a server relays it, after it stayed undecided for the relay timeout (1 ms in
/// the simulator), and a cascade of leader changes may take a suspicion timeout (300 us) more;
/// Heron adds a read timeout and state transfer attempts. With 1 ms, chaos seed 776 under TPC-C
/// (three leader crashes and the new leader of one group paused) had every client's request
/// answered 1.1 ms after the last fault.
pub const LIVE: Nanos = Nanos(3_000_000);

/// Slots per client ring for RamCast under a chaos run whose clients issue requests until
/// `stop`: enough that no client laps its ring, so that slot recycling never waits on a
/// crashed replica.
///
/// RamCast reuses a slot once every destination replica delivered the message in it; a crashed
/// replica never does, and a client that comes round to a slot it holds waits for RamCast's
/// eviction (`Timing::evict`, 20 ms in the simulator) before it excludes it (RamCast's crate
/// docs, "Recycling"). A client that ever sent a message to a crashed replica's partition
/// blocks after one more lap of any partition of that message: every client, in practice,
/// and a TPC-C terminal's lap of its home partition took 128 requests, about 1.2 ms. That
/// stall is RamCast's, bounded by its eviction timeout and judged by RamCast's own sweep,
/// which draws the timeout; under Heron it starts whenever a client completes the lap, so
/// it falls in the liveness phase whenever the last fault is late (`harness check --protocol
/// heron` seed 51: a crash at 180 us, a pause ending at 1.6 ms, every client stalled from
/// 1.5 ms to 21.5 ms). A ring of one slot per `FASTEST_REQUEST` of the run never laps.
pub fn ramcast_slots(stop: Nanos) -> usize {
    let requests = (stop.as_nanos() / FASTEST_REQUEST.as_nanos()) as usize + 1;
    requests.next_power_of_two().max(128)
}

/// Less than any Heron request takes over RamCast on `xl170-cx4` from its multicast to its
/// response: the client's write, RamCast's ordering and Heron's response write are several
/// one-way writes of 1.5 us (the chaos runs complete about one request per 9 us per client).
const FASTEST_REQUEST: Nanos = Nanos(5_000);

/// Draws seed `seed` of the chaos sweep: per partition, with probability 1/2 one replica
/// crashes (any rank, so RamCast's leader among them) and with probability 1/2 another one
/// pauses; with probability 0.3 a client crashes; each starting within the first 900 us. The
/// clients issue requests until [`LIVE`] after the last fault ended ([`Chaos::stop`]).
pub fn chaos(seed: u64) -> Chaos {
    let mut rng = Rng::derive(seed, Purpose::Faults, 0);
    let partitions = 2 + rng.below(2) as usize;
    let mut cfg = Config::new(partitions, 3, 4);
    cfg.extra_wait = Nanos(rng.below(3) * 1_000);
    let mut c = Chaos {
        cfg,
        faults: Vec::new(),
        crashes: 0,
        leader_crashes: 0,
        pauses: 0,
        client_crashes: 0,
        quiet: Nanos::ZERO,
        stop: Nanos::ZERO,
    };
    for g in 0..partitions {
        let g = GroupId(g as u8);
        let crashed = rng.below(3) as usize;
        if rng.chance(0.5) {
            c.crashes += 1;
            c.leader_crashes += (crashed == 0) as u64;
            c.faults.push(Fault::Crash {
                at: Nanos(100_000 + rng.below(800_000)),
                process: c.cfg.server(g, crashed),
            });
        }
        if rng.chance(0.5) {
            c.pauses += 1;
            c.faults.push(Fault::Pause {
                at: Nanos(100_000 + rng.below(800_000)),
                process: c.cfg.server(g, (crashed + 1 + rng.below(2) as usize) % 3),
                duration: Nanos(50_000 + rng.below(400_000)),
            });
        }
    }
    if rng.chance(0.3) {
        c.client_crashes += 1;
        c.faults.push(Fault::Crash {
            at: Nanos(100_000 + rng.below(800_000)),
            process: c.cfg.client(rng.below(4) as usize),
        });
    }
    c.quiet = c.faults.iter().map(Fault::end).max().unwrap_or(Nanos::ZERO);
    c.stop = (c.quiet + LIVE).max(Nanos(1_500_000));
    c
}

/// The key-value store's sequential specification, written again here from its definition
/// (each request reads its keys and adds its delta to each), for the external checker.
struct KeyValueSpec;

/// One request as the external checker sees it.
#[derive(Clone, Debug)]
struct KeyValueOp {
    keys: Vec<u64>,
    delta: i64,
    /// The values the client received (the keys' values before the request), or `None` for a
    /// call that never returned: any values fit, and linearized last it took effect nowhere.
    before: Option<Vec<i64>>,
}

impl todc_utils::Specification for KeyValueSpec {
    type State = std::collections::BTreeMap<u64, i64>;
    type Operation = KeyValueOp;

    fn init() -> Self::State {
        Self::State::new()
    }

    fn apply(op: &KeyValueOp, state: &Self::State) -> (bool, Self::State) {
        let read: Vec<i64> = op
            .keys
            .iter()
            .map(|k| state.get(k).copied().unwrap_or(0))
            .collect();
        if op.before.as_ref().is_some_and(|b| *b != read) {
            return (false, state.clone());
        }
        let mut next = state.clone();
        for (k, v) in op.keys.iter().zip(read) {
            next.insert(*k, v.wrapping_add(op.delta));
        }
        (true, next)
    }
}

/// Whether an external linearizability checker, the Wing-Gong-Lowe search of `todc-utils`'s
/// `WGLChecker` (it memoizes the partial linearizations it tried, so a few thousand requests
/// take milliseconds), finds the key-value store's client `histories` linearizable. Events go
/// in real-time order; at equal times invocations first (precedence is strict), except a
/// client's invocation after its own return at that instant (a closed-loop client issues its
/// next request in the poll that saw the response). A request without a response returns
/// after everything else with whatever values fit: it may have taken effect at any point
/// after its invocation, or (linearized last) not at all.
pub fn key_value_linearizable(histories: &[(u32, Vec<Call>)]) -> bool {
    use todc_utils::{Action, History, WGLChecker};
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    let mut events = Vec::new();
    for (client, calls) in histories {
        for call in calls {
            let mut op = KeyValueOp {
                keys: call.request[8..].chunks(8).map(word).collect(),
                delta: word(&call.request[..8]) as i64,
                before: None,
            };
            let after_own_return = calls.iter().any(|c| {
                c.returned
                    .as_ref()
                    .is_some_and(|(at, _)| *at == call.invoked)
            });
            let invoked = (call.invoked, 2 * after_own_return as u8, *client);
            events.push((invoked, Action::Call(op.clone())));
            let returned = match &call.returned {
                Some((at, response)) => {
                    op.before = Some(response.chunks(8).map(|c| word(c) as i64).collect());
                    (*at, 1, *client)
                }
                None => (Nanos(u64::MAX), 1, *client),
            };
            events.push((returned, Action::Response(op)));
        }
    }
    if events.is_empty() {
        return true;
    }
    // Stable: a client's call stays before its response at equal keys.
    events.sort_by_key(|e| e.0);
    let actions = events
        .into_iter()
        .map(|((_, _, client), action)| (client as usize, action))
        .collect();
    WGLChecker::<KeyValueSpec>::is_linearizable(History::from_actions(actions))
}
