//! The faults of a tcp run: kills and pauses the launcher sends, and network faults the
//! nodes' fault layer injects; their text form (`kill:0@3s`) and what each acts on.

use super::*;

/// A fault of a tcp run: on a node process (the launcher sends it signals) or on the network
/// between nodes (the nodes' fault layer, [`transport::runtime::tcp::faults`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ProcessFault {
    /// SIGKILL node `node` at `at` after start.
    Kill {
        /// The node.
        node: u32,
        /// When, after time zero.
        at: Nanos,
    },
    /// SIGSTOP node `node` at `at`, SIGCONT `span` later.
    Pause {
        /// The node.
        node: u32,
        /// When, after time zero.
        at: Nanos,
        /// For how long.
        span: Nanos,
    },
    /// What the nodes `from` send to the nodes `to` during `[at, at + span)` suffers
    /// `effect`; a partition cuts both ways.
    Net {
        /// When, after time zero.
        at: Nanos,
        /// For how long.
        span: Nanos,
        /// The senders.
        from: Nodes,
        /// The receivers.
        to: Nodes,
        /// What their sends suffer.
        effect: NetEffect,
    },
}

/// Some nodes of a run: a list of ids, or `*`, every node (in a partition, every node not on
/// the other side).
#[derive(Clone, Debug, PartialEq)]
pub enum Nodes {
    /// `*`: every node.
    All,
    /// These nodes.
    Some(Vec<u32>),
}

/// What a [`ProcessFault::Net`] does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NetEffect {
    /// Every send arrives this much later.
    Delay(Nanos),
    /// Each send is lost with this probability (and retransmitted a timeout later).
    Loss(f64),
    /// Nothing passes, either way.
    Partition,
}

pub(super) const FAULT_USAGE: &str = "a fault is kill:NODE@TIME, pause:NODE@TIME+DURATION, delay:FROM>TO@TIME+DURATION=DELAY, loss:FROM>TO@TIME+DURATION=PROBABILITY or partition:SIDE|SIDE@TIME+DURATION (nodes: ids separated by commas, or * for all), e.g. kill:0@3s, pause:4@2s+500ms, delay:0>3,4@1s+2s=5ms, loss:*>0@1s+1s=0.1, partition:0,1|*@2s+1s";

impl FromStr for ProcessFault {
    type Err = String;
    fn from_str(s: &str) -> Result<ProcessFault, String> {
        let usage = || format!("`{s}`: {FAULT_USAGE}");
        let t = FaultText::parse(s).map_err(|e| format!("{e}: {FAULT_USAGE}"))?;
        // Times of a tcp fault are durations from the nodes' start, bounded as every duration
        // flag: a pause of no length would send its SIGCONT before its SIGSTOP.
        let bounded = |d| crate::experiment::bounded_duration(d).map_err(|e| format!("`{s}`: {e}"));
        let (at, who) = (bounded(t.at)?, t.who);
        let span = t.span.map(bounded).transpose()?;
        let node = || who.parse::<u32>().map_err(|_| usage());
        let nodes = |n: &str| -> Result<Nodes, String> {
            if n == "*" {
                return Ok(Nodes::All);
            }
            n.split(',')
                .map(|x| x.parse::<u32>().map_err(|_| usage()))
                .collect::<Result<_, _>>()
                .map(Nodes::Some)
        };
        match (t.kind, span, t.value) {
            ("kill", None, None) => Ok(ProcessFault::Kill { node: node()?, at }),
            ("pause", Some(span), None) => Ok(ProcessFault::Pause {
                node: node()?,
                at,
                span,
            }),
            (kind @ ("delay" | "loss" | "partition"), Some(span), value) => {
                let sides = if kind == "partition" { '|' } else { '>' };
                let (from, to) = who.split_once(sides).ok_or_else(usage)?;
                let (from, to) = (nodes(from)?, nodes(to)?);
                if kind == "partition" && from == Nodes::All && to == Nodes::All {
                    return Err(format!("`{s}`: a partition needs one side named"));
                }
                let effect = match (kind, value) {
                    ("delay", Some(v)) => NetEffect::Delay(crate::experiment::parse_duration(v)?),
                    ("loss", Some(v)) => match v.parse::<f64>() {
                        Ok(p) if (0.0..=1.0).contains(&p) => NetEffect::Loss(p),
                        _ => return Err(format!("`{s}`: a loss probability is 0 to 1, got `{v}`")),
                    },
                    ("partition", None) => NetEffect::Partition,
                    _ => return Err(usage()),
                };
                Ok(ProcessFault::Net {
                    at,
                    span,
                    from,
                    to,
                    effect,
                })
            }
            _ => Err(usage()),
        }
    }
}

impl fmt::Display for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nodes::All => write!(f, "*"),
            Nodes::Some(ids) => {
                let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
                write!(f, "{}", ids.join(","))
            }
        }
    }
}

impl fmt::Display for ProcessFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessFault::Kill { node, at } => write!(f, "kill:{node}@{}", at.exact()),
            ProcessFault::Pause { node, at, span } => {
                write!(f, "pause:{node}@{}+{}", at.exact(), span.exact())
            }
            ProcessFault::Net {
                at,
                span,
                from,
                to,
                effect,
            } => {
                let (at, span) = (at.exact(), span.exact());
                match effect {
                    NetEffect::Delay(d) => {
                        write!(f, "delay:{from}>{to}@{at}+{span}={}", d.exact())
                    }
                    NetEffect::Loss(p) => write!(f, "loss:{from}>{to}@{at}+{span}={p}"),
                    NetEffect::Partition => write!(f, "partition:{from}|{to}@{at}+{span}"),
                }
            }
        }
    }
}

impl ProcessFault {
    /// When it stops acting: a kill when it strikes, a pause or a network fault at its end.
    pub fn ends_at(&self) -> Nanos {
        match *self {
            ProcessFault::Kill { at, .. } => at,
            ProcessFault::Pause { at, span, .. } | ProcessFault::Net { at, span, .. } => {
                at.saturating_add(span)
            }
        }
    }

    /// Whether this fault can make node `i` unresponsive (paused, or its traffic delayed,
    /// lost or cut), the only way a correct server is excluded and then halts.
    pub fn impairs(&self, i: usize) -> bool {
        let has = |n: &Nodes| match n {
            Nodes::All => true,
            Nodes::Some(ids) => ids.contains(&(i as u32)),
        };
        match self {
            ProcessFault::Kill { .. } => false,
            ProcessFault::Pause { node, .. } => *node as usize == i,
            ProcessFault::Net { from, to, .. } => has(from) || has(to),
        }
    }

    /// Whether it acts on node `i` at all: kills or pauses it, or acts on its traffic. A link
    /// to or from such a node may be lost to it.
    pub(super) fn touches(&self, i: usize) -> bool {
        match self {
            ProcessFault::Kill { node, .. } => *node as usize == i,
            _ => self.impairs(i),
        }
    }

    /// The node ids it names.
    pub(super) fn nodes(&self) -> Vec<u32> {
        match self {
            ProcessFault::Kill { node, .. } | ProcessFault::Pause { node, .. } => vec![*node],
            ProcessFault::Net { from, to, .. } => [from, to]
                .into_iter()
                .flat_map(|n| match n {
                    Nodes::All => Vec::new(),
                    Nodes::Some(ids) => ids.clone(),
                })
                .collect(),
        }
    }

    /// The fault layer's directed link faults for a run of `n` nodes (none for a process
    /// fault).
    pub(super) fn link_faults(&self, n: usize) -> Vec<LinkFault> {
        let ProcessFault::Net {
            at,
            span,
            from,
            to,
            effect,
        } = self
        else {
            return Vec::new();
        };
        let expand = |side: &Nodes, other: &Nodes| -> Vec<ProcessId> {
            match (side, other) {
                (Nodes::Some(ids), _) => ids.iter().map(|&i| ProcessId(i)).collect(),
                // A partition's `*` side: everyone not on the other side.
                (Nodes::All, Nodes::Some(ids)) if *effect == NetEffect::Partition => (0..n as u32)
                    .filter(|i| !ids.contains(i))
                    .map(ProcessId)
                    .collect(),
                (Nodes::All, _) => (0..n as u32).map(ProcessId).collect(),
            }
        };
        let (a, b) = (expand(from, to), expand(to, from));
        let fault = |from: Vec<ProcessId>, to: Vec<ProcessId>, effect| LinkFault {
            at: Duration::from_nanos(at.as_nanos()),
            span: Duration::from_nanos(span.as_nanos()),
            from,
            to,
            effect,
        };
        match *effect {
            NetEffect::Delay(d) => vec![fault(
                a,
                b,
                LinkEffect::Delay(Duration::from_nanos(d.as_nanos())),
            )],
            NetEffect::Loss(p) => vec![fault(a, b, LinkEffect::Loss(p))],
            NetEffect::Partition => vec![
                fault(a.clone(), b.clone(), LinkEffect::Partition),
                fault(b, a, LinkEffect::Partition),
            ],
        }
    }
}
