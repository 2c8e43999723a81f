//! The optional cluster secret: a challenge-response over the handshake, HMAC-SHA256, both ways.
//!
//! The initiator's [`Hello`] carries a fresh nonce; the acceptor's [`Welcome`] answers with its
//! own nonce and a tag over the hello and that nonce, so the initiator knows the acceptor holds
//! the secret; the initiator's proof is a tag over the same transcript, so the acceptor knows the
//! initiator does. Fresh nonces on both sides keep a recorded handshake from being replayed. The
//! secret authenticates who may join; it does not encrypt the traffic (run on a trusted network,
//! or tunnel it).

use super::wire::{Hello, Mac, Welcome};
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

fn tag(secret: &[u8], label: &[u8], hello: &Hello, welcome_nonce: &[u8; 16]) -> Mac {
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    m.update(label);
    m.update(&bincode::serialize(hello).expect("a hello serialises"));
    m.update(welcome_nonce);
    m.finalize().into_bytes().into()
}

/// The acceptor's tag for its welcome.
pub(crate) fn welcome_tag(secret: &[u8], hello: &Hello, welcome: &Welcome) -> Mac {
    tag(secret, b"rdmawb welcome", hello, &welcome.nonce)
}

/// The initiator's proof.
pub(crate) fn proof_tag(secret: &[u8], hello: &Hello, welcome: &Welcome) -> Mac {
    tag(secret, b"rdmawb proof", hello, &welcome.nonce)
}

/// Compares two tags in time independent of where they differ.
pub(crate) fn same(a: &Mac, b: &Mac) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh nonce from the operating system.
pub(crate) fn nonce() -> [u8; 16] {
    let mut n = [0; 16];
    getrandom::fill(&mut n).expect("the OS random source is available");
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProcessId;

    #[test]
    fn tags_bind_secret_label_hello_and_nonce() {
        let hello = Hello {
            from: ProcessId(1),
            to: ProcessId(0),
            qp: 0,
            regions: vec![8],
            table: 1,
            nonce: nonce(),
        };
        let welcome = Welcome {
            from: ProcessId(0),
            regions: vec![8],
            nonce: nonce(),
            mac: None,
        };
        let w = welcome_tag(b"s3cret", &hello, &welcome);
        assert!(same(&w, &welcome_tag(b"s3cret", &hello, &welcome)));
        assert!(!same(&w, &welcome_tag(b"other", &hello, &welcome)));
        assert!(!same(&w, &proof_tag(b"s3cret", &hello, &welcome)));
        let replayed = Welcome {
            nonce: nonce(),
            ..welcome.clone()
        };
        assert!(!same(&w, &welcome_tag(b"s3cret", &hello, &replayed)));
        assert_ne!(hello.nonce, welcome.nonce);
    }
}
