//! The cluster secret and the challenge-response every connection proves it with:
//! HMAC-SHA256 both ways.
//!
//! The initiator's [`Hello`] carries a fresh nonce; the acceptor's [`Welcome`] answers with its
//! own nonce and a tag over the hello and that nonce, so the initiator knows the acceptor holds
//! the secret; the initiator's proof is a tag over the same transcript, so the acceptor knows the
//! initiator does. Fresh nonces on both sides keep a recorded handshake from being replayed, and
//! the hello names both ends and the queue pair, so a proof for one connection proves nothing on
//! another. Tags are compared by the `hmac` crate's constant-time check.
//!
//! What it does not do: the secret authenticates membership, not each member. Every holder
//! can speak as any node (telling members apart would take a key pair per node); the engine
//! still admits one proven connection per peer and queue pair, so a second claimant is refused
//! while the first is live. Nor does it encrypt the traffic: run on a trusted network, or
//! tunnel it.

use super::wire::{Hello, Mac, Welcome};
use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use std::fmt;

/// The fewest bytes a cluster secret may have: 128 bits, so guessing it is no attack.
pub const MIN_SECRET: usize = 16;

/// A cluster secret: only nodes that hold it may connect. Never printed (`Debug` shows its
/// length only).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// A secret of `bytes`; refused when shorter than [`MIN_SECRET`] bytes (an empty secret
    /// would let anyone in).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Secret, String> {
        let bytes = bytes.into();
        if bytes.len() < MIN_SECRET {
            return Err(format!(
                "the cluster secret has {} bytes, fewer than the {MIN_SECRET} required: use 32 random bytes, e.g. `secret = \"<output of openssl rand -hex 32>\"`",
                bytes.len()
            ));
        }
        Ok(Secret(bytes))
    }

    /// 32 fresh bytes from the operating system's random source, as 64 hex digits (so the
    /// secret can be written in a cluster file or passed down a pipe as text).
    pub fn random() -> Secret {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).expect("the OS random source is available");
        Secret(
            raw.iter()
                .flat_map(|b| format!("{b:02x}").into_bytes())
                .collect(),
        )
    }

    /// The secret's bytes (to hand them to a node started elsewhere).
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The tag of `transcript` under this secret for the step `label` (HMAC-SHA256 over the
    /// label, then the transcript): what a challenge-response exchanges. The label keeps a tag
    /// of one step from serving as another's.
    pub fn tag(&self, label: &[u8], transcript: &[u8]) -> [u8; 32] {
        self.hmac(label, transcript).finalize().into_bytes().into()
    }

    /// Whether `tag` is [`Secret::tag`] of `label` and `transcript` (compared in constant time).
    pub fn verify(&self, label: &[u8], transcript: &[u8], tag: &[u8]) -> bool {
        self.hmac(label, transcript).verify_slice(tag).is_ok()
    }

    fn hmac(&self, label: &[u8], transcript: &[u8]) -> Hmac<Sha256> {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        m.update(label);
        m.update(transcript);
        m
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// The transcript a handshake's tags cover: the hello, then the acceptor's nonce.
fn transcript(hello: &Hello, welcome_nonce: &[u8; 16]) -> Vec<u8> {
    let mut t = bincode::serialize(hello).expect("a hello serialises");
    t.extend_from_slice(welcome_nonce);
    t
}

const WELCOME: &[u8] = b"rdmawb welcome";
const PROOF: &[u8] = b"rdmawb proof";

/// The acceptor's tag for its welcome.
pub(crate) fn welcome_tag(secret: &Secret, hello: &Hello, nonce: &[u8; 16]) -> Mac {
    secret.tag(WELCOME, &transcript(hello, nonce))
}

/// The initiator's proof.
pub(crate) fn proof_tag(secret: &Secret, hello: &Hello, welcome: &Welcome) -> Mac {
    secret.tag(PROOF, &transcript(hello, &welcome.nonce))
}

/// Whether `welcome` carries the tag only a holder of `secret` could make for `hello`.
pub(crate) fn welcome_holds(secret: &Secret, hello: &Hello, welcome: &Welcome) -> bool {
    secret.verify(WELCOME, &transcript(hello, &welcome.nonce), &welcome.mac)
}

/// Whether `proof` is the initiator's tag for `hello` and `welcome` under `secret`.
pub(crate) fn proof_holds(secret: &Secret, hello: &Hello, welcome: &Welcome, proof: &Mac) -> bool {
    secret.verify(PROOF, &transcript(hello, &welcome.nonce), proof)
}

/// A fresh nonce from the operating system.
pub fn nonce() -> [u8; 16] {
    let mut n = [0; 16];
    getrandom::fill(&mut n).expect("the OS random source is available");
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProcessId;

    fn hello() -> Hello {
        Hello {
            from: ProcessId(1),
            to: ProcessId(0),
            qp: 0,
            regions: vec![8],
            table: 1,
            nonce: nonce(),
        }
    }

    #[test]
    fn tags_bind_secret_label_hello_and_nonce() {
        let (s, other) = (Secret::random(), Secret::random());
        let hello = hello();
        let mut welcome = Welcome {
            from: ProcessId(0),
            regions: vec![8],
            nonce: nonce(),
            mac: [0; 32],
        };
        welcome.mac = welcome_tag(&s, &hello, &welcome.nonce);
        assert!(welcome_holds(&s, &hello, &welcome));
        assert!(!welcome_holds(&other, &hello, &welcome));
        let proof = proof_tag(&s, &hello, &welcome);
        assert!(proof_holds(&s, &hello, &welcome, &proof));
        assert!(!proof_holds(&other, &hello, &welcome, &proof));
        // The welcome's tag is not a proof: the labels differ.
        assert!(!proof_holds(&s, &hello, &welcome, &welcome.mac));
        // A replayed proof under a fresh welcome nonce fails.
        let fresh = Welcome {
            nonce: nonce(),
            ..welcome.clone()
        };
        assert!(!proof_holds(&s, &hello, &fresh, &proof));
        // A proof for queue pair 0 proves nothing on queue pair 1, nor for another node.
        let other_qp = Hello {
            qp: 1,
            ..hello.clone()
        };
        assert!(!proof_holds(&s, &other_qp, &welcome, &proof));
        let other_from = Hello {
            from: ProcessId(2),
            ..hello.clone()
        };
        assert!(!proof_holds(&s, &other_from, &welcome, &proof));
        assert!(!proof_holds(&s, &hello, &welcome, &[0; 32]));
    }

    #[test]
    fn short_secrets_are_refused_and_random_ones_differ() {
        assert!(Secret::new(Vec::new()).unwrap_err().contains("0 bytes"));
        assert!(Secret::new(b"s3cret".to_vec()).is_err());
        assert!(Secret::new([7u8; MIN_SECRET].to_vec()).is_ok());
        let (a, b) = (Secret::random(), Secret::random());
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 64);
        assert_eq!(format!("{a:?}"), "Secret(64 bytes)");
    }
}
