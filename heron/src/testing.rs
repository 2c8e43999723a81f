//! Runs of Heron on the simulator, judged (the `testing` feature, for tests and the harness's
//! `check`): the sequential [`crate::oracle`], an external linearizability checker on the
//! clients' histories, and whether every surviving replica finished its work. One copy for the
//! crate's tests and the harness.

use crate::client::Call;
use crate::oracle::{self, ClientView, ReplicaView};
use crate::{Application, Config, Counters, HeronNode, Window};
use multicast::{Client, GroupId, Membership, Server};
use std::sync::Arc;
use transport::runtime::sim::{Fault, Sim, SimConfig, SimNic};
use transport::{Nanos, Process, ProcessId, Purpose, Rng};

/// A finished simulation of a Heron deployment.
#[derive(Debug)]
pub struct SimRun<S, C, A> {
    /// The simulation, as the run left it.
    pub sim: Sim<HeronNode<S, C, A>>,
    /// The deployment.
    pub cfg: Config,
    /// The application.
    pub app: Arc<A>,
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
    SimRun { sim, cfg, app }
}

impl<S, C, A: Application> SimRun<S, C, A>
where
    S: Server + for<'a> Process<crate::layered::Layered<'a, SimNic>>,
    C: Client<SimNic>,
{
    /// The oracle's verdict: every replica's responses (and the state of those that did not
    /// crash) and every client's.
    pub fn verdict(&self) -> Result<oracle::Report, Vec<oracle::Violation>> {
        let mut replicas = Vec::new();
        let mut clients = Vec::new();
        for (i, node) in self.sim.processes().iter().enumerate() {
            let p = ProcessId(i as u32);
            match node {
                HeronNode::Server(s) => replicas.push(ReplicaView {
                    process: p,
                    group: s.group(),
                    executed: s.executed().expect("runs record what replicas execute"),
                    applied: s.applied(),
                    state: (!self.sim.crashed(p)).then(|| s.state(self.sim.nic(p))),
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
        self.sim
            .processes()
            .iter()
            .enumerate()
            .map(|(i, n)| (ProcessId(i as u32), n))
            .filter(|&(p, n)| {
                !self.sim.crashed(p) && matches!(n, HeronNode::Server(s) if !s.idle())
            })
            .map(|(p, _)| p)
            .collect()
    }

    /// Every replica's counters, summed.
    pub fn counters(&self) -> Counters {
        let mut total = Counters::default();
        for n in self.sim.processes() {
            if let HeronNode::Server(s) = n {
                total.add(&s.counters());
            }
        }
        total
    }

    /// Each client's index and history.
    pub fn histories(&self) -> Vec<(u32, Vec<Call>)> {
        self.sim
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

    /// The external checker's verdict on the clients' histories
    /// ([`key_value_linearizable`]), with each request a crashed client never heard back about
    /// settled first: one a replica executed returns, after everything else, the response the
    /// replicas computed (it took effect; the checker must still place it where that response
    /// fits), one no replica executed is left out (it took effect nowhere). Left in flight, such
    /// a request may go anywhere, and the checker, which searches without memoization, can take
    /// hours over a few hundred requests.
    pub fn externally_linearizable(&self) -> bool {
        let mut executed = std::collections::BTreeMap::new();
        for n in self.sim.processes() {
            if let HeronNode::Server(s) = n {
                for e in s.executed().expect("runs record what replicas execute") {
                    executed.insert((e.client, e.seq), e.response.clone());
                }
            }
        }
        let end = self.sim.now();
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

    /// Requests the clients completed.
    pub fn completed(&self) -> u64 {
        self.sim
            .processes()
            .iter()
            .map(|n| match n {
                HeronNode::Client(c) => c.completed().0,
                HeronNode::Server(_) => 0,
            })
            .sum()
    }
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
}

/// Draws seed `seed` of the chaos sweep: per partition, with probability 1/2 one replica
/// crashes (any rank, so RamCast's leader among them) and with probability 1/2 another one
/// pauses; with probability 0.3 a client crashes; all within the first 900 us.
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
    c
}

/// The key-value store's sequential specification, written again here from its definition
/// (each request reads its keys and adds its delta to each), for the external checker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct KeyValueSpec(std::collections::BTreeMap<u64, i64>);

impl consistency_model::SequentialSpec for KeyValueSpec {
    /// `(keys, delta)`.
    type Op = (Vec<u64>, i64);
    /// The values read.
    type Ret = Vec<i64>;
    fn invoke(&mut self, (keys, delta): &Self::Op) -> Vec<i64> {
        keys.iter()
            .map(|k| {
                let v = self.0.entry(*k).or_insert(0);
                let before = *v;
                *v = v.wrapping_add(*delta);
                before
            })
            .collect()
    }
}

/// Whether an external linearizability checker, `consistency_model`'s `LinearizabilityTester`
/// (by the author of Stateright; it searches for a linearization on its own), finds the
/// key-value store's client `histories` linearizable. Events go in real-time order; at equal
/// times invocations first (precedence is strict), except a client's invocation after its own
/// return at that instant (a closed-loop client issues its next request in the poll that saw
/// the response). Requests without a response stay in flight.
pub fn key_value_linearizable(histories: &[(u32, Vec<Call>)]) -> bool {
    use consistency_model::{ConsistencyTester, LinearizabilityTester};
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    let mut events = Vec::new();
    for (client, calls) in histories {
        for call in calls {
            let op = (
                call.request[8..].chunks(8).map(word).collect::<Vec<_>>(),
                word(&call.request[..8]) as i64,
            );
            let after_own_return = calls.iter().any(|c| {
                c.returned
                    .as_ref()
                    .is_some_and(|(at, _)| *at == call.invoked)
            });
            events.push((
                call.invoked,
                2 * after_own_return as u8,
                *client,
                Some(op),
                None,
            ));
            if let Some((at, response)) = &call.returned {
                let ret: Vec<i64> = response.chunks(8).map(|c| word(c) as i64).collect();
                events.push((*at, 1, *client, None, Some(ret)));
            }
        }
    }
    events.sort_by_key(|e| (e.0, e.1, e.2));
    let mut tester = LinearizabilityTester::new(KeyValueSpec::default());
    for (_, _, client, op, ret) in events {
        let step = match (op, ret) {
            (Some(op), _) => tester.on_invoke(client, op).map(|_| ()),
            (None, Some(ret)) => tester.on_return(client, ret).map(|_| ()),
            (None, None) => unreachable!("an event is one or the other"),
        };
        if step.is_err() {
            return false;
        }
    }
    tester.is_consistent()
}
