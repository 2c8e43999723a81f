//! A Heron deployment: partitions, replicas, clients, and the choices the thesis leaves open.

use multicast::Membership;
use transport::Nanos;

/// The shape of a Heron run and its tunables.
///
/// Process ids follow the multicast layer's convention ([`Membership`]): servers first,
/// partition by partition and rank by rank, then clients. Partition `g` is multicast group `g`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Partitions (multicast groups).
    pub partitions: usize,
    /// Replicas per partition (2f+1).
    pub replicas: usize,
    /// Closed-loop clients.
    pub clients: usize,
    /// How long a replica keeps waiting, once a majority of every involved partition has
    /// executed a request (phase 4 of Algorithm 9), for the replicas not in it yet: the thesis's
    /// heuristic against laggards (section 5.1.1, Table 5.2). Zero waits for a majority only.
    pub extra_wait: Nanos,
    /// How long a lagging replica waits for the replica it named to serve its state transfer
    /// before it names the next one (Algorithm 11, lines 18-19); doubled at each further
    /// attempt of one lag.
    pub transfer_timeout: Nanos,
    /// How long a replica waits for a remote read (Algorithm 10, line 21) before it also reads
    /// the object from another replica that coordinated. The thesis moves on when the read
    /// fails, which for a crashed replica takes the NIC's retry timeout (10 ms in the
    /// profiles, about 0.5 s on the thesis's ConnectX NICs), and every later request of the
    /// partition waits behind it.
    pub read_timeout: Nanos,
    /// The largest response an application returns, in bytes (sizes the clients' response
    /// slots).
    pub max_response: usize,
    /// Ordering only, a measurement mode: a replica answers every request (with an empty
    /// response) as soon as it takes it, and neither coordinates nor executes anything. The
    /// thesis's Table 5.1 measures "RamCast, without coordination and execution" under
    /// TPC-C's destinations this way; such a run replicates nothing and is not linearizable.
    pub order_only: bool,
    /// The index of Heron's first region at a server: the multicast server's regions come first
    /// (set by [`crate::deploy`] from the multicast server's own list).
    pub server_region_base: u16,
    /// The index of Heron's first region at a client, after the multicast client's.
    pub client_region_base: u16,
}

impl Config {
    /// `partitions` x `replicas` servers and `clients` clients, with the defaults: an extra wait
    /// of 2 us (a small fraction of a multi-partition request, as the thesis suggests), a state
    /// transfer timeout of 100 us, a read timeout of 50 us (a loaded remote read takes a few
    /// microseconds) and responses of up to 256 bytes.
    pub fn new(partitions: usize, replicas: usize, clients: usize) -> Config {
        Config {
            partitions,
            replicas,
            clients,
            extra_wait: Nanos(2_000),
            transfer_timeout: Nanos(100_000),
            read_timeout: Nanos(50_000),
            max_response: 256,
            order_only: false,
            server_region_base: 0,
            client_region_base: 0,
        }
    }

    /// A majority of a partition.
    pub fn majority(&self) -> usize {
        self.replicas / 2 + 1
    }
}

impl Membership for Config {
    fn group_count(&self) -> usize {
        self.partitions
    }
    fn replica_count(&self) -> usize {
        self.replicas
    }
    fn client_count(&self) -> usize {
        self.clients
    }
}
